import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import type { Config } from '../src/config/env.ts';
import type { OpsRoute } from '../src/http/ops-endpoints.ts';
import type { Logger } from '../src/log/logger.ts';
import { SLACK_RETRY } from '../src/slack/slack-chat.ts';
import { boltLogger } from './bolt-logger.ts';
import { type SocketModeLifecycle, SocketSupervisor, type SocketSupervisorOptions } from './socket-supervisor.ts';

/** What the Socket Mode connection reports, for the metrics. */
export type SocketEvents = Pick<SocketSupervisorOptions, 'onDisconnect' | 'onConnectFailure' | 'onConnectedChange'>;

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
export function createSlackApp(config: Config, logger: Logger, routes: OpsRoute[], socketEvents: SocketEvents = {}): SlackApp {
  const clientOptions = {
    ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
    // Set explicitly for the listeners' client (not the socket's): the SDK's own default is 10 retries over about 30 minutes.
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
      if ('command' in args)
        return args.ack({ text: 'This replica of the bot is stopping. Nothing was done; run the command again in a moment.' });
      if ('ack' in args && args.ack !== undefined) await args.ack();
      if ('respond' in args)
        await args.respond({
          response_type: 'ephemeral',
          replace_original: false,
          text: 'This replica of the bot is stopping. Nothing changed; click again in a moment.',
        });
    });
  };

  if (config.slack.appToken !== undefined) {
    // Built here rather than by Bolt so the bot, not the SDK, keeps the connection up (see SocketSupervisor).
    const receiver = new SocketModeReceiver({
      appToken: config.slack.appToken,
      logger: log,
      logLevel,
      autoReconnectEnabled: false,
      installerOptions: {
        port: config.httpPort,
        // `apps.connections.open` only: one bounded try per attempt; the supervisor's loop is the retry budget, and it has no end.
        clientOptions: {
          ...(config.slack.apiUrl === undefined ? {} : { slackApiUrl: config.slack.apiUrl }),
          retryConfig: { retries: 0 },
          timeout: config.slack.timeoutMs,
        },
      },
      customRoutes: routes,
    });
    const app = new App({ ...common, receiver });
    const supervisor = new SocketSupervisor({
      client: receiver.client as unknown as SocketModeLifecycle,
      // The first attempt through Bolt, which also opens HTTP_PORT; the later ones reconnect the client only.
      connect: (attempt) => (attempt === 1 ? app.start() : receiver.client.start()),
      logger: logger.child({ component: 'slack-socket' }),
      maxDelayMs: config.slack.reconnectMaxMs,
      ...socketEvents,
    });
    return {
      app,
      async start() {
        await supervisor.start();
        running = true;
      },
      async stopIntake() {
        running = false;
        // Slack sends the next command to another connection (another replica) once this socket is gone.
        await supervisor.stop();
      },
      async stop() {
        running = false;
        await supervisor.stop();
        await app.stop();
      },
      connected: () => running && supervisor.connected(),
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
