import { App, LogLevel } from '@slack/bolt';
import type { Config } from '../src/config/env.ts';
import type { OpsRoute } from '../src/http/ops-endpoints.ts';
import type { Logger } from '../src/log/logger.ts';
import { boltLogger } from './bolt-logger.ts';

/** Retries for Slack calls: enough to ride out a 429 or a brief outage, bounded so a job never hangs for half an hour. */
export const SLACK_RETRY = { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 10_000 };

/**
 * The Bolt app: Socket Mode when an app token is configured, else HTTP mode with
 * signature verification. Either way the ops endpoints share `HTTP_PORT`.
 */
export function createSlackApp(config: Config, logger: Logger, routes: OpsRoute[]): App {
  const clientOptions = {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    // Set explicitly: Socket Mode would otherwise give listener clients 100 retries.
    retryConfig: SLACK_RETRY,
  };
  const common = {
    token: config.slack.botToken,
    logger: boltLogger(logger),
    logLevel: config.logLevel === 'debug' || config.logLevel === 'trace' ? LogLevel.DEBUG : LogLevel.INFO,
    clientOptions,
    customRoutes: routes,
  };
  if (config.slack.appToken !== undefined) {
    return new App({
      ...common,
      appToken: config.slack.appToken,
      socketMode: true,
      installerOptions: { port: config.httpPort },
    });
  }
  return new App({
    ...common,
    signingSecret: config.slack.signingSecret,
    port: config.httpPort,
  });
}
