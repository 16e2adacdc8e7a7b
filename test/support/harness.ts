import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSlackEmulator, type SlackEmulator } from '../slack-emulator/index.ts';
import { startSimulator, writeInventory, type ClusterShape, type InventoryOptions, type Simulator, type SimTiming } from '../sim/index.ts';
import { botProcess, type BotProcess } from './bot-process.ts';
import { freePort, startRedisServer, type RedisServer } from './redis-server.ts';

export const CHANNELS = { production: 'C0MAINTPRD', staging: 'C0MAINTSTG', random: 'C0RANDOM' } as const;
export const USERS = {
  alice: 'U0ALICE', // operator
  bob: 'U0BOB', // operator
  carol: 'U0CAROL', // approver
  dave: 'U0DAVE', // approver
  eve: 'U0EVE', // neither
} as const;

export interface HarnessOptions {
  /** More Slack channels than the three default ones (for extra simulated clusters). */
  extraChannels?: { id: string; name: string }[];
  /** Extra inventory settings. */
  inventory?: InventoryOptions;
  timing?: Partial<SimTiming>;
  /** Simulated cluster shapes; a `production` one is expected. Default: the simulator's staging and production. */
  clusters?: ClusterShape[];
  /** Extra or overriding bot environment. */
  env?: Record<string, string>;
  /** HTTP mode instead of Socket Mode. */
  http?: boolean;
  canary?: string;
  /** Do not start the bot; the test starts it. */
  deferStart?: boolean;
}

export interface Harness {
  dir: string;
  redis: RedisServer;
  sim: Simulator;
  slack: SlackEmulator;
  bot: BotProcess;
  env: Record<string, string>;
  inventoryPath: string;
  httpPort: number;
  /** Sends `/talos <text>` as `user` in `channel` and returns the ephemeral ack text. */
  command(text: string, options?: { user?: string; channel?: string }): Promise<string>;
  /** Another bot process against the same Redis, emulator and simulator, on its own free `HTTP_PORT`; the test starts it. */
  secondBot(): Promise<BotProcess>;
  stop(): Promise<void>;
}

/** Redis, the simulated cluster, the Slack emulator and the real bot as a child process, wired by the runtime contract. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'talos-chatops-e2e-'));
  const canary = options.canary ?? `CANARY-${crypto.randomUUID()}`;
  const redis = await startRedisServer(join(dir, 'redis'));
  const sim = await startSimulator({ dir: join(dir, 'sim'), canary, timing: options.timing, clusters: options.clusters });
  const slack = await startSlackEmulator({
    channels: [
      { id: CHANNELS.production, name: 'maint-production' },
      { id: CHANNELS.staging, name: 'maint-staging' },
      { id: CHANNELS.random, name: 'random' },
      ...(options.extraChannels ?? []),
    ],
    users: Object.entries(USERS).map(([name, id]) => ({ id, name })),
    usergroups: [{ id: 'S0SRE', users: [USERS.dave] }],
  });
  const production = sim.cluster('production');
  const inventoryPath = await writeInventory(sim, {
    approvers: [USERS.carol, 'S0SRE'],
    ...options.inventory,
    extra: {
      production: { longhorn: true, longhornNodes: production.nodes.map((n) => n.address), ...options.inventory?.extra?.production },
      ...(options.inventory?.extra?.staging ? { staging: options.inventory.extra.staging } : {}),
    },
  });
  const httpPort = await freePort();
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: dir,
    SLACK_BOT_TOKEN: slack.botToken,
    ...(options.http ? { SLACK_SIGNING_SECRET: slack.signingSecret } : { SLACK_APP_TOKEN: slack.appToken }),
    SLACK_API_URL: slack.apiUrl,
    REDIS_URL: redis.url,
    CLUSTERS_FILE: inventoryPath,
    ...sim.env(),
    HTTP_PORT: String(httpPort),
    LOG_LEVEL: 'info',
    CREDENTIALS_DIR: join(dir, 'creds'),
    PROBE_TIMEOUT_SECONDS: '5',
    STEP_TIMEOUT_SECONDS: '20',
    NODE_READY_TIMEOUT_SECONDS: '8',
    POLL_INTERVAL_MS: '100',
    JOB_LOCK_SECONDS: '3',
    APPROVAL_TTL_MINUTES: '30',
    ...options.env,
  };
  const { mkdir } = await import('node:fs/promises');
  await mkdir(env.CREDENTIALS_DIR!, { recursive: true, mode: 0o700 });
  const bot = botProcess(env);
  if (options.deferStart !== true) {
    await bot.start();
    if (!options.http) await slack.waitForConnections(1);
  }
  const extraBots: BotProcess[] = [];
  return {
    dir,
    redis,
    sim,
    slack,
    bot,
    env,
    inventoryPath,
    httpPort,
    async command(text, { user = USERS.alice, channel = CHANNELS.production } = {}) {
      const result = await slack.sendSlashCommand({ user, channel, text });
      if (result.timedOut) throw new Error(`/talos ${text} was not acknowledged (${result.reason})`);
      const payload = result.payload as { text?: string } | undefined;
      return payload?.text ?? '';
    },
    async secondBot() {
      const other = botProcess({ ...env, HTTP_PORT: String(await freePort()) });
      extraBots.push(other);
      return other;
    },
    async stop() {
      await Promise.all([bot.stop(), ...extraBots.map((b) => b.stop())]);
      await slack.close();
      await sim.close();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
