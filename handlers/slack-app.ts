import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import type { Config } from '../src/config/env.ts';
import type { OpsRoute } from '../src/http/ops-endpoints.ts';
import type { Logger } from '../src/log/logger.ts';
import { boltLogger } from './bolt-logger.ts';

/** Retries for Slack calls: enough to ride out a 429 or a brief outage, bounded so a job never hangs for half an hour. */
export const SLACK_RETRY = { retries: 5, factor: 2, minTimeout: 200, maxTimeout: 10_000 };

export interface SlackApp {
  app: App;
  start(): Promise<void>;
  stop(): Promise<void>;
  /** Socket Mode: the WebSocket to Slack is open. HTTP mode: the server takes Slack's requests. For `/readyz`. */
  connected(): boolean;
}

/**
 * The Bolt app: Socket Mode when an app token is configured, else HTTP mode with
 * signature verification. Either way the ops endpoints share `HTTP_PORT`.
 */
export function createSlackApp(config: Config, logger: Logger, routes: OpsRoute[]): SlackApp {
  const clientOptions = {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    // Set explicitly: Socket Mode would otherwise give listener clients 100 retries.
    retryConfig: SLACK_RETRY,
  };
  const logLevel = config.logLevel === 'debug' || config.logLevel === 'trace' ? LogLevel.DEBUG : LogLevel.INFO;
  const log = boltLogger(logger);
  const common = { token: config.slack.botToken, logger: log, logLevel, clientOptions };
  let running = false;

  if (config.slack.appToken !== undefined) {
    // Built here rather than by Bolt so readiness can follow the WebSocket's own state.
    const receiver = new SocketModeReceiver({
      appToken: config.slack.appToken,
      logger: log,
      logLevel,
      installerOptions: { port: config.httpPort, clientOptions },
      customRoutes: routes,
    });
    let socketOpen = false;
    receiver.client.on('connected', () => {
      socketOpen = true;
    });
    for (const state of ['disconnecting', 'disconnected', 'reconnecting']) {
      receiver.client.on(state, () => {
        socketOpen = false;
      });
    }
    const app = new App({ ...common, receiver });
    return {
      app,
      async start() {
        await app.start();
        running = true;
      },
      async stop() {
        running = false;
        await app.stop();
      },
      connected: () => running && socketOpen,
    };
  }
  const app = new App({ ...common, signingSecret: config.slack.signingSecret, port: config.httpPort, customRoutes: routes });
  return {
    app,
    async start() {
      await app.start();
      running = true;
    },
    async stop() {
      running = false;
      await app.stop();
    },
    connected: () => running,
  };
}
