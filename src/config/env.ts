import { z } from 'zod';
import { ConfigError, describeIssues } from './config-error.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const EnvSchema = z
  .object({
    SLACK_BOT_TOKEN: z.string().regex(/^xoxb-/, 'must be a bot token starting with xoxb-'),
    SLACK_APP_TOKEN: optionalString.pipe(z.string().regex(/^xapp-/, 'must be an app-level token starting with xapp-').optional()),
    SLACK_SIGNING_SECRET: optionalString,
    SLACK_API_URL: optionalString.pipe(z.url().optional()),
    SLACK_TIMEOUT_SECONDS: optionalString.default('15').pipe(z.coerce.number<string>().positive()),
    SLACK_RECONNECT_MAX_SECONDS: optionalString.default('30').pipe(z.coerce.number<string>().positive()),
    REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL'),
    ALLOW_INSECURE_REDIS: optionalString.pipe(z.enum(['true', 'false']).optional()),
    CLUSTERS_FILE: z.string().min(1, 'must name the cluster inventory YAML file'),
    TALOSCTL_BIN: optionalString.default('talosctl'),
    TOFU_BIN: optionalString.default('tofu'),
    GIT_BIN: optionalString.default('git'),
    PLAN_DIR: optionalString,
    HTTP_PORT: optionalString.default('3000').pipe(z.coerce.number<string>().int().min(0).max(65535)),
    LOG_LEVEL: optionalString.default('info').pipe(z.enum(LOG_LEVELS)),
    LOG_PRETTY: optionalString.pipe(z.enum(['true', 'false']).optional()),
    IMAGE_FACTORY_URL: optionalString.default('https://factory.talos.dev').pipe(z.url()),
    CREDENTIALS_DIR: optionalString,
    APPROVAL_TTL_MINUTES: optionalString.default('60').pipe(z.coerce.number<string>().positive()),
    APPROVAL_REMINDER_MINUTES: optionalString.default('10').pipe(z.coerce.number<string>().min(0)),
    STEP_TIMEOUT_SECONDS: optionalString.default('1800').pipe(z.coerce.number<string>().positive()),
    PROBE_TIMEOUT_SECONDS: optionalString.default('60').pipe(z.coerce.number<string>().positive()),
    NODE_READY_TIMEOUT_SECONDS: optionalString.default('900').pipe(z.coerce.number<string>().positive()),
    SETTLE_SECONDS: optionalString.default('300').pipe(z.coerce.number<string>().min(0)),
    JOB_LOCK_SECONDS: optionalString.default('30').pipe(z.coerce.number<string>().positive()),
    PLAN_TTL_MINUTES: optionalString.default('30').pipe(z.coerce.number<string>().positive()),
    POLL_INTERVAL_MS: optionalString.default('5000').pipe(z.coerce.number<string>().int().positive()),
    SHUTDOWN_GRACE_SECONDS: optionalString.default('60').pipe(z.coerce.number<string>().min(0)),
    READ_CONCURRENCY: optionalString.default('32').pipe(z.coerce.number<string>().int().min(1).max(256)),
    OPERATION_RETENTION_DAYS: optionalString.default('400').pipe(z.coerce.number<string>().positive()),
    DEDUPE_RETENTION_MINUTES: optionalString.default('60').pipe(z.coerce.number<string>().min(10)),
    JOB_RETENTION_DAYS: optionalString.default('7').pipe(z.coerce.number<string>().positive()),
    RECORD_EXPORT_DIR: optionalString.pipe(z.string().regex(/^\//, 'must be an absolute path').optional()),
  })
  .superRefine(
    (value, ctx) => {
      if (value.SLACK_APP_TOKEN === undefined && value.SLACK_SIGNING_SECRET === undefined) {
        ctx.addIssue({
          code: 'custom',
          input: value,
          path: ['SLACK_APP_TOKEN'],
          message: 'set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (HTTP mode)',
        });
      }
    },
    // Runs even when other variables are bad, so one start-up error names every problem.
    { when: (payload) => typeof payload.value === 'object' && payload.value !== null },
  );

const HINTS: Record<string, string> = {
  SLACK_BOT_TOKEN: 'copy "Bot User OAuth Token" from the Slack app\'s OAuth & Permissions page',
  SLACK_APP_TOKEN: 'create an app-level token with the connections:write scope under Basic Information',
  REDIS_URL: 'for example redis://127.0.0.1:6379',
  CLUSTERS_FILE: 'the inventory described in the README, for example /etc/talos-chatops/clusters.yaml',
  HTTP_PORT: 'a TCP port for /healthz, /readyz, /metrics and HTTP-mode Slack events',
  LOG_LEVEL: `one of ${LOG_LEVELS.join(', ')}`,
  APPROVAL_REMINDER_MINUTES: 'minutes before an approval request expires that its approvers are reminded, e.g. 10; 0 sends no reminder',
  SHUTDOWN_GRACE_SECONDS: 'seconds a stopping replica waits for its running jobs, e.g. 60; 0 stops at once',
  READ_CONCURRENCY: 'how many read-only jobs (health gates, gates, plans) one replica runs at once, 1 to 256',
  SETTLE_SECONDS: 'seconds the final verification waits for pods, Cilium and Flux to be ready, e.g. 300',
  OPERATION_RETENTION_DAYS: 'days a finished operation (its audit trail and maintenance record) is kept, e.g. 400',
  DEDUPE_RETENTION_MINUTES: 'minutes a Slack delivery id is remembered; Slack retries for about 5, so at least 10',
  JOB_RETENTION_DAYS: 'days finished queue jobs are kept for inspection, e.g. 7',
  RECORD_EXPORT_DIR: 'a directory on a volume for the JSON maintenance records, e.g. /var/lib/talos-chatops/records',
};

export interface Config {
  slack: {
    botToken: string;
    /** Socket Mode when set, else HTTP mode with `signingSecret`. */
    appToken: string | undefined;
    signingSecret: string | undefined;
    /** Base URL of the Web API; `undefined` means https://slack.com/api/. */
    apiUrl: string | undefined;
    /** Bound of one Web API call, in ms (default 15 000): a write whose answer never comes is looked for, then sent again. */
    timeoutMs: number;
    /** Socket Mode: the longest wait between two attempts to reconnect, in ms (default 30 000). The bot never stops trying. */
    reconnectMaxMs: number;
  };
  redisUrl: string;
  /** `ALLOW_INSECURE_REDIS=true`: accept a Redis that needs no password although the inventory has production clusters (warned at every start). */
  allowInsecureRedis: boolean;
  clustersFile: string;
  talosctlBin: string;
  tofuBin: string;
  /** `git`, asked whether a Terraform directory has uncommitted changes. */
  gitBin: string;
  /**
   * Where reviewed plans wait for their Apply, one private directory per operation. With two
   * replicas it must be a volume both mount, or an Apply run by the other replica asks for a new plan.
   */
  planDir: string | undefined;
  httpPort: number;
  logLevel: (typeof LOG_LEVELS)[number];
  logPretty: boolean;
  /**
   * How long SIGTERM waits for running jobs before closing the workers by force, in ms
   * (default 60 000). A forced job keeps its Redis lock until it lapses; then any
   * replica resumes it by observation.
   */
  shutdownGraceMs: number;
  /** Read-only jobs one replica runs at once: they mostly wait on talosctl and the clusters, so a fleet's gates overlap. */
  readConcurrency: number;
  imageFactoryUrl: string;
  /** Parent of the per-job private credential directories; the OS temp dir when unset. */
  credentialsDir: string | undefined;
  /** How long what the bot stores is kept once it is done with it. */
  retention: {
    /**
     * A finished operation (completed, refused, cancelled; failed once it holds no cluster) with its
     * audit trail, in ms (default 400 days): its key expires this long after it ended, and the
     * indexes that list it are trimmed by the retention sweep. Running and waiting ones never expire.
     */
    operationMs: number;
    /** How long a Slack delivery id is remembered against redelivery, in seconds (default 3600). */
    dedupeSeconds: number;
    /** How long finished BullMQ jobs are kept, in seconds (default 7 days; also at most 1000 per queue). */
    jobSeconds: number;
  };
  /** Where each operation's maintenance record is written as JSON when it ends; unset: not exported. */
  recordExportDir: string | undefined;
  /** Variables every child process gets (PATH, HOME, locale), never the bot's secrets. */
  childEnv: Record<string, string>;
  /** Extra variables for `tofu` only: its state-backend credentials (TF_*, AWS_*, B2_*…). */
  tofuEnv: Record<string, string>;
  timeouts: {
    /** How long an approval stays valid, in ms. */
    approvalTtlMs: number;
    /** How long before an unanswered request expires its approvers are reminded, in ms (default 600 000); 0 sends no reminder. */
    approvalReminderMs: number;
    /** Upper bound of one mutating talosctl step (`upgrade --wait`, `reset`), in ms. */
    stepMs: number;
    /** Upper bound of one read-only probe of the health gate, in ms. */
    probeMs: number;
    /** How long a rebooted node may take to report Ready on the target version, in ms. */
    nodeReadyMs: number;
    /**
     * The settle window of the final verification, after each node and at the end, in ms (default
     * 300 000): pods, Cilium and Flux still not ready after it stop the operation.
     */
    settleMs: number;
    /** Interval between observations while waiting on the cluster, in ms. */
    pollMs: number;
    /** How long a job's lock lasts without renewal: a crashed replica's job moves to another after this, in ms. */
    jobLockMs: number;
    /** A plan older than this cannot be started, in ms. */
    planTtlMs: number;
  };
}

/** Reads and validates the environment once, at start; nothing else reads `process.env`. */
export function loadConfig(env: Record<string, string | undefined>): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError('The environment', describeIssues(parsed.error.issues, HINTS));
  }
  const e = parsed.data;
  return {
    slack: {
      botToken: e.SLACK_BOT_TOKEN,
      appToken: e.SLACK_APP_TOKEN,
      signingSecret: e.SLACK_SIGNING_SECRET,
      apiUrl: e.SLACK_API_URL,
      timeoutMs: e.SLACK_TIMEOUT_SECONDS * 1000,
      reconnectMaxMs: e.SLACK_RECONNECT_MAX_SECONDS * 1000,
    },
    redisUrl: e.REDIS_URL,
    allowInsecureRedis: e.ALLOW_INSECURE_REDIS === 'true',
    clustersFile: e.CLUSTERS_FILE,
    talosctlBin: e.TALOSCTL_BIN,
    tofuBin: e.TOFU_BIN,
    gitBin: e.GIT_BIN,
    planDir: e.PLAN_DIR,
    httpPort: e.HTTP_PORT,
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_PRETTY === 'true',
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    readConcurrency: e.READ_CONCURRENCY,
    imageFactoryUrl: e.IMAGE_FACTORY_URL,
    credentialsDir: e.CREDENTIALS_DIR,
    retention: {
      operationMs: e.OPERATION_RETENTION_DAYS * 86_400_000,
      dedupeSeconds: Math.round(e.DEDUPE_RETENTION_MINUTES * 60),
      jobSeconds: Math.round(e.JOB_RETENTION_DAYS * 86_400),
    },
    recordExportDir: e.RECORD_EXPORT_DIR,
    childEnv: pick(env, (k) => ['PATH', 'HOME', 'LANG', 'TZ', 'SSL_CERT_FILE', 'SSL_CERT_DIR'].includes(k)),
    tofuEnv: pick(env, (k) => /^(TF_|TOFU_|AWS_|B2_|ARM_|GOOGLE_|PM_|PROXMOX_VE_)/.test(k) && k !== 'TOFU_BIN'),
    timeouts: {
      approvalTtlMs: e.APPROVAL_TTL_MINUTES * 60_000,
      approvalReminderMs: e.APPROVAL_REMINDER_MINUTES * 60_000,
      stepMs: e.STEP_TIMEOUT_SECONDS * 1000,
      probeMs: e.PROBE_TIMEOUT_SECONDS * 1000,
      nodeReadyMs: e.NODE_READY_TIMEOUT_SECONDS * 1000,
      settleMs: e.SETTLE_SECONDS * 1000,
      pollMs: e.POLL_INTERVAL_MS,
      jobLockMs: e.JOB_LOCK_SECONDS * 1000,
      planTtlMs: e.PLAN_TTL_MINUTES * 60_000,
    },
  };
}

function pick(env: Record<string, string | undefined>, keep: (key: string) => boolean): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) {
    if (value !== undefined && keep(key)) out[key] = value;
  }
  return out;
}
