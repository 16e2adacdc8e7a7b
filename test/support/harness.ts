import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSlackEmulator, type DeliveryResult, type EmulatorChannel, type SlackEmulator } from '../slack-emulator/index.ts';
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
  frank: 'U0FRANK', // neither
} as const;

export interface HarnessOptions {
  /** More Slack channels than the three default ones (for extra simulated clusters, private channels). */
  extraChannels?: EmulatorChannel[];
  /** Extra inventory settings. */
  inventory?: InventoryOptions;
  /**
   * Clusters whose Terraform the bot fetches itself (`terraformRepo`): its own copy of the simulated
   * repository under a `terraformDir` of its own, tofu run in the cluster's root of that copy.
   */
  managedTerraform?: string[];
  timing?: Partial<SimTiming>;
  /** Simulated cluster shapes; a `production` one is expected. Default: the simulator's staging and production. */
  clusters?: ClusterShape[];
  /** `real`: the control planes' etcd members are real etcd processes (test/sim/reference/real-etcd.md). Default: the model. */
  etcd?: 'model' | 'real';
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
  /**
   * Sends `/talos <text>` as `user` in `channel` and returns what the user sees: the ack's text,
   * or, when the ack is empty, the ephemeral reply that follows through the response_url.
   */
  command(text: string, options?: { user?: string; channel?: string }): Promise<string>;
  /**
   * Another bot process against the same Redis, emulator and simulator, on its own free `HTTP_PORT`; the test starts it.
   * `env` replaces settings of its own (the directories on its pod's own volumes).
   */
  secondBot(env?: Record<string, string>): Promise<BotProcess>;
  stop(): Promise<void>;
}

/** How long a reply may take to follow its empty ack: the bot reads Redis and Slack first, on a loaded machine. */
const REPLY_TIMEOUT_MS = 30_000;

export type AckedCommand = Extract<DeliveryResult, { timedOut: false }>;

/**
 * What the user sees for an acked slash command: the ack's text when it has one, else the
 * ephemeral reply the bot sends afterwards through the command's response_url (polled for,
 * since it arrives after the ack).
 */
export async function commandReply(
  slack: SlackEmulator,
  acked: AckedCommand,
  options: { timeoutMs?: number; description?: string } = {},
): Promise<string> {
  const { text } = acked.payload;
  if (typeof text === 'string' && text !== '') return text;
  const id = responseUrlId(slack, acked.envelopeId);
  const what = options.description ?? `envelope ${acked.envelopeId}`;
  const call = await slack.waitFor(() => slack.responseUrlCalls.find((c) => c.id === id), {
    timeoutMs: options.timeoutMs ?? REPLY_TIMEOUT_MS,
    description: `the reply to ${what} through its response_url (the ack was empty)`,
  });
  if (call.status !== 200)
    throw new Error(
      `the reply to ${what} was refused by the response_url with HTTP ${call.status}: ${JSON.stringify(call.body).slice(0, 300)}`,
    );
  return typeof call.body.text === 'string' ? call.body.text : '';
}

/** The id of the response_url that came with an envelope, read back from the frame that delivered it. */
function responseUrlId(slack: SlackEmulator, envelopeId: string): string {
  for (const frame of slack.socketFrames) {
    if (frame.direction !== 'out' || !frame.data.includes(envelopeId)) continue;
    const sent = JSON.parse(frame.data) as { envelope_id?: string; payload?: { response_url?: unknown } };
    if (sent.envelope_id !== envelopeId || typeof sent.payload?.response_url !== 'string') continue;
    const id = /\/response\/([^/?#]+)$/.exec(sent.payload.response_url)?.[1];
    if (id !== undefined) return id;
  }
  throw new Error(`no frame delivered envelope ${envelopeId} with a response_url`);
}

/**
 * Starts the bot on `env.HTTP_PORT`. `freePort` frees the port it found, so another run may bind it
 * before the bot does: then the bot is started again on another free port, written back to `env`.
 */
async function startOnFreePort(env: Record<string, string>): Promise<BotProcess> {
  for (let attempt = 1; ; attempt += 1) {
    const bot = botProcess(env);
    try {
      await bot.start();
      return bot;
    } catch (error) {
      if (attempt === 5 || !bot.logs().includes(`EADDRINUSE`) || !bot.logs().includes(`:${env.HTTP_PORT}`)) throw error;
      await bot.stop();
      env.HTTP_PORT = String(await freePort());
    }
  }
}

/** Redis, the simulated cluster, the Slack emulator and the real bot as a child process, wired by the runtime contract. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const dir = await mkdtemp(join(tmpdir(), 'talos-chatops-e2e-'));
  const canary = options.canary ?? `CANARY-${crypto.randomUUID()}`;
  const redis = await startRedisServer(join(dir, 'redis'));
  // A simulator that cannot start (its real etcd, say) must not leave this redis-server running.
  const sim = await startSimulator({
    dir: join(dir, 'sim'),
    canary,
    timing: options.timing,
    clusters: options.clusters,
    ...(options.etcd ? { etcd: options.etcd } : {}),
  }).catch(async (error: unknown) => {
    await redis.stop();
    throw error;
  });
  const slack = await startSlackEmulator({
    channels: [
      { id: CHANNELS.production, name: 'maint-production' },
      { id: CHANNELS.staging, name: 'maint-staging' },
      { id: CHANNELS.random, name: 'random' },
      ...(options.extraChannels ?? []),
    ],
    users: Object.entries(USERS).map(([name, id]) => ({ id, name })),
    usergroups: [{ id: 'S0SRE', handle: 'sre-approvers', users: [USERS.dave] }],
  });
  const production = sim.cluster('production');
  const managed = (name: string): Record<string, unknown> =>
    options.managedTerraform?.includes(name) === true
      ? { terraformDir: join(dir, 'bot-terraform', name), terraformRepo: { url: sim.terraform.root, ref: 'main', path: name } }
      : {};
  const inventoryPath = await writeInventory(sim, {
    approvers: [USERS.carol, 'S0SRE'],
    ...options.inventory,
    extra: {
      // The Longhorn workers, as an operator declares them: the nodes built from the Longhorn installer.
      production: {
        longhornNodes: production.nodes.filter((n) => n.schematic === production.terraform.longhornSchematic).map((n) => n.address),
        // Production takes no change without a declared window: the tests that are not about windows take changes at any time.
        maintenanceWindows: 'always',
        ...managed('production'),
        ...options.inventory?.extra?.production,
      },
      staging: { ...managed('staging'), ...options.inventory?.extra?.staging },
    },
  });
  let httpPort = await freePort();
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
    SETTLE_SECONDS: '3',
    POLL_INTERVAL_MS: '100',
    JOB_LOCK_SECONDS: '3',
    APPROVAL_TTL_MINUTES: '30',
    // Tests and the bench send reads in bursts; a test of the limit sets it.
    READ_COMMANDS_PER_MINUTE: '0',
    // The simulated image carries its clients and no test reaches the internet; a test of the download
    // starts its own release server and sets this blank, the bot's default (test/support/release-server.ts).
    TALOSCTL_DOWNLOAD: 'false',
    ...options.env,
  };
  const { mkdir } = await import('node:fs/promises');
  await mkdir(env.CREDENTIALS_DIR!, { recursive: true, mode: 0o700 });
  let bot = botProcess(env);
  if (options.deferStart !== true) {
    bot = await startOnFreePort(env);
    httpPort = Number(env.HTTP_PORT);
    if (!options.http) await slack.waitForConnections(1);
    // The bot fetches its copies of the repository after it connects: a test starts once it has, and has initialised them.
    for (const cluster of options.managedTerraform ?? [])
      await slack.waitFor(() => sim.calls.some((c) => c.bin === 'tofu' && c.cluster === cluster && c.argv[0] === 'init'), {
        timeoutMs: 30_000,
        description: `the bot's first fetch of ${cluster}'s Terraform repository`,
      });
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
      return commandReply(slack, result, { description: `/talos ${text.slice(0, 80)}` });
    },
    async secondBot(own = {}) {
      const other = botProcess({ ...env, ...own, HTTP_PORT: String(await freePort()) });
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
