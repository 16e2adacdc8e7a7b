import { readAppManifest } from './app-manifest.ts';
import type { EmulatorChannel, EmulatorOptions, EmulatorUser, EmulatorUsergroup } from './types.ts';

/** Identity of the bot, fixed so tests can assert on it. */
export const BOT_USER_ID = 'U0BOT';
export const BOT_ID = 'B0BOT';

export interface EmulatorConfig {
  botToken: string;
  appToken: string;
  signingSecret: string;
  teamId: string;
  teamDomain: string;
  appId: string;
  botName: string;
  channels: EmulatorChannel[] | undefined;
  users: EmulatorUser[] | undefined;
  usergroups: EmulatorUsergroup[];
  port: number;
  ackTimeoutMs: number;
  /** How long a trigger id can open a modal after its interaction. */
  triggerTtlMs: number;
  /** Bot scopes granted to the installation; tests may change them at run time. */
  scopes: Set<string>;
  /** Whether the app has a Home tab, so `views.publish` of a Home view is accepted. */
  homeTabEnabled: boolean;
  /** Bot events the app subscribes to; Slack delivers no others. */
  botEvents: string[];
  /** The deprecated verification token Slack still puts in every payload. */
  verificationToken: string;
}

export function resolveConfig(opts: EmulatorOptions = {}): EmulatorConfig {
  const manifest = readAppManifest();
  return {
    botToken: opts.botToken ?? 'xoxb-test-token',
    appToken: opts.appToken ?? 'xapp-test-token',
    signingSecret: opts.signingSecret ?? 'test-signing-secret',
    teamId: opts.teamId ?? 'T0TEST',
    teamDomain: opts.teamDomain ?? 'talos-test',
    appId: opts.appId ?? 'A0TEST',
    botName: opts.botName ?? 'talos',
    channels: opts.channels,
    users: opts.users,
    usergroups: opts.usergroups ?? [],
    port: opts.port ?? 0,
    ackTimeoutMs: opts.ackTimeoutMs ?? 3000,
    triggerTtlMs: opts.triggerTtlMs ?? 3000,
    scopes: new Set(opts.scopes ?? manifest.botScopes),
    homeTabEnabled: opts.homeTabEnabled ?? manifest.homeTabEnabled,
    botEvents: opts.botEvents ?? manifest.botEvents,
    verificationToken: 'emulator-verification-token',
  };
}

/** Author fields Slack stamps on a message posted with the bot token. */
export function botAuthor(config: EmulatorConfig): { user: string; bot_id: string; app_id: string; team: string } {
  return { user: BOT_USER_ID, bot_id: BOT_ID, app_id: config.appId, team: config.teamId };
}
