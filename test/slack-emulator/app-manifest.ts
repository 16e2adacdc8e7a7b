import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/** The app manifest the emulated installation follows unless a test says otherwise. */
const MANIFEST = new URL('../../manifests/slack-app.yaml', import.meta.url);

interface AppManifest {
  features?: { app_home?: { home_tab_enabled?: unknown } };
  oauth_config?: { scopes?: { bot?: unknown } };
  settings?: { event_subscriptions?: { bot_events?: unknown } };
}

/** What the emulator takes from `manifests/slack-app.yaml`, as Slack does when the app is installed. */
export interface ManifestFacts {
  /** `oauth_config.scopes.bot`: the scopes the bot token is granted. */
  botScopes: string[];
  /** `features.app_home.home_tab_enabled`: without it `views.publish` of a Home answers `not_enabled`. */
  homeTabEnabled: boolean;
  /** `settings.event_subscriptions.bot_events`: the events Slack delivers to the app. */
  botEvents: string[];
}

export function readAppManifest(url: URL = MANIFEST): ManifestFacts {
  const manifest = parseYaml(readFileSync(url, 'utf8')) as AppManifest;
  const strings = (value: unknown, field: string): string[] => {
    if (value === undefined) return [];
    if (!Array.isArray(value) || !value.every((s) => typeof s === 'string'))
      throw new Error(`${url.pathname}: ${field} is not a list of strings`);
    return value;
  };
  return {
    botScopes: strings(manifest.oauth_config?.scopes?.bot, 'oauth_config.scopes.bot'),
    homeTabEnabled: manifest.features?.app_home?.home_tab_enabled === true,
    botEvents: strings(manifest.settings?.event_subscriptions?.bot_events, 'settings.event_subscriptions.bot_events'),
  };
}
