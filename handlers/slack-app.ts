import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import type { Config } from '../src/config/env.ts';
import type { OpsRoute } from '../src/http/ops-endpoints.ts';
import type { Logger } from '../src/log/logger.ts';
import { SLACK_RETRY } from '../src/slack/slack-chat.ts';
import { boltLogger } from './bolt-logger.ts';

export interface SlackApp {
  app: App;
  start(): Promise<void>;
  /**
   * Stops taking commands and clicks (a draining replica), while the HTTP server keeps
   * answering `/healthz`, `/readyz` and `/metrics` until `stop`.
   */
  stopIntake(): Promise<void>;
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
  let intake = true;
  /** In HTTP mode Slack's requests keep coming to the port until the orchestrator stops routing them here. */
  const refuseWhileStopping = (app: App): void => {
    app.use(async (args) => {
      if (intake) return args.next();
      if ('command' in args) return args.ack({ text: 'This replica of the bot is stopping. Nothing was done; run the command again in a moment.' });
      if ('ack' in args && args.ack !== undefined) await args.ack();
      if ('respond' in args) await args.respond({ response_type: 'ephemeral', replace_original: false, text: 'This replica of the bot is stopping. Nothing changed; click again in a moment.' });
    });
  };

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
      async stopIntake() {
        running = false;
        // Slack sends the next command to another connection (another replica) once this socket is gone.
        await receiver.client.disconnect();
      },
      async stop() {
        running = false;
        await app.stop();
      },
      connected: () => running && socketOpen,
    };
  }
  const app = new App({ ...common, signingSecret: config.slack.signingSecret, port: config.httpPort, customRoutes: routes });
  refuseWhileStopping(app);
  return {
    app,
    async start() {
      await app.start();
      running = true;
    },
    stopIntake() {
      running = false;
      intake = false;
      return Promise.resolve();
    },
    async stop() {
      running = false;
      await app.stop();
    },
    connected: () => running,
  };
}
