import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ConfigError, describeIssues } from './config-error.ts';
import { IpAddress, KubernetesNodeName, type BotPlacement } from './bot-placement.ts';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

/**
 * Every variable the bot reads, each with its meaning and unit in `.describe()`: docs/configuration.md is
 * generated from these texts and the defaults below (`npm run docs:config`).
 */
export const EnvSchema = z
  .object({
    SLACK_BOT_TOKEN: z
      .string()
      .regex(/^xoxb-/, 'must be a bot token starting with xoxb-')
      .describe("Bot User OAuth Token (`xoxb-…`), from the Slack app's OAuth & Permissions page."),
    SLACK_APP_TOKEN: optionalString
      .pipe(
        z
          .string()
          .regex(/^xapp-/, 'must be an app-level token starting with xapp-')
          .optional(),
      )
      .describe(
        'App-level token with the `connections:write` scope (`xapp-…`). When set, the bot uses Socket Mode. One of `SLACK_APP_TOKEN` and `SLACK_SIGNING_SECRET` is required.',
      ),
    SLACK_SIGNING_SECRET: optionalString.describe(
      "The Slack app's signing secret: HTTP mode, used only when `SLACK_APP_TOKEN` is unset. Slack then posts commands, clicks and events to `/slack/events` on `HTTP_PORT`, and the bot checks each request's signature.",
    ),
    SLACK_BOT_TOKEN_FILE: optionalString.describe(
      'A file holding `SLACK_BOT_TOKEN` instead (a mounted Secret), read once at start; set one of the two. Preferred: a variable stays readable in `/proc/<pid>/environ` for the life of the process, a file does not.',
    ),
    SLACK_APP_TOKEN_FILE: optionalString.describe('A file holding `SLACK_APP_TOKEN` instead, read once at start; set one of the two.'),
    SLACK_SIGNING_SECRET_FILE: optionalString.describe(
      'A file holding `SLACK_SIGNING_SECRET` instead, read once at start; set one of the two.',
    ),
    SLACK_API_URL: optionalString
      .pipe(z.url().optional())
      .describe('Base URL of the Slack Web API, for a proxy or a test double. Unset: `https://slack.com/api/`.'),
    SLACK_TIMEOUT_SECONDS: optionalString
      .default('15')
      .pipe(z.coerce.number<string>().positive())
      .describe('Bound of one Web API call, in seconds. A post whose answer never came is looked for by its key before it is sent again.'),
    SLACK_RECONNECT_MAX_SECONDS: optionalString
      .default('30')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'Socket Mode: the longest wait between two attempts to reconnect, in seconds. The bot keeps trying for as long as Slack is away; `/readyz` says `not ready: slack` meanwhile.',
      ),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
      .describe(
        "`redis://:<password>@host:6379`, `redis://<user>:<password>@…` for an ACL user, or `rediss://…` for TLS (a private CA through Node's `NODE_EXTRA_CA_CERTS`).",
      ),
    REDIS_URL_FILE: optionalString.describe(
      'A file holding `REDIS_URL` instead (it carries the password), read once at start; set one of the two.',
    ),
    ALLOW_INSECURE_REDIS: optionalString
      .pipe(z.enum(['true', 'false']).optional())
      .describe(
        '`true` or `false` (unset: `false`). With a production cluster in the inventory, the bot refuses to start against a Redis that lets a client without a password run commands (it asks the server, whatever the URL says). `true` accepts such a Redis, with a warning at every start.',
      ),
    REDIS_DURABILITY_CHECK: optionalString
      .default('enforce')
      .pipe(z.enum(['enforce', 'warn']))
      .describe(
        '`enforce` or `warn` (unset: `enforce`). With a production cluster in the inventory, the bot refuses to start unless Redis keeps its data across a restart (`CONFIG GET appendonly` is `yes`) and never evicts keys (`maxmemory-policy` is `noeviction`): a lost cluster lock lets a second operation start while a node reboots. A managed Redis that refuses `CONFIG` cannot be checked and is refused too. `warn` starts anyway, with a warning at every start.',
      ),
    REDIS_EPOCH_RESEED: optionalString
      .pipe(z.enum(['true', 'false']).optional())
      .describe(
        '`true` or `false` (unset: `false`). The bot writes an epoch key (`talos:epoch`) into Redis at its first start; when it is gone later, Redis lost its data and the bot refuses to act, with `/readyz` not ready (`redis-epoch`). After checking every cluster by hand (see docs/operating.md), one start with `true` writes a new epoch; remove it again afterwards.',
      ),
    REDIS_EPOCH_CHECK_SECONDS: optionalString
      .default('15')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        "How often each replica checks, in seconds, that Redis still holds what the bot keeps (the epoch key, and a seen time that must not go back, as after a restore from an older copy). A loss noticed is told once in each cluster's channel, and the bot then refuses every change.",
      ),
    CLUSTERS_FILE: z
      .string()
      .min(1, 'must name the cluster inventory YAML file')
      .describe('Path of the cluster inventory, a YAML file (docs/configuring.md describes it).'),
    CLUSTERS_RELOAD_SECONDS: optionalString
      .default('30')
      .pipe(z.coerce.number<string>().min(0))
      .describe(
        'How often the bot reads `CLUSTERS_FILE` again, in seconds, and applies it when its content changed (a ConfigMap update swaps the file under the mount). A bad edit is refused and the last good inventory kept. `0`: read only at start.',
      ),
    TALOSCTL_BIN: optionalString
      .default('talosctl')
      .describe(
        'The `talosctl` binary (a name looked up on `PATH`, or a path), or a directory of `talosctl-vX.Y.Z` binaries: the bot then runs the one that matches the Talos version a cluster runs.',
      ),
    TALOSCTL_DOWNLOAD: optionalString
      .pipe(z.enum(['true', 'false']).optional())
      .describe(
        "`true` or `false` (unset: `true`). `true`: when `TALOSCTL_BIN` does not hold the `talosctl` of a cluster's running or target Talos, the bot downloads `talosctl-linux-<arch>` of that release from `TALOSCTL_RELEASE_URL` over TLS, checks it against the release's `sha256sum.txt`, keeps it in `TALOSCTL_CACHE_DIR` and hashes it again before each use. An operation's preflight does it after the checks that need no talosctl, so the maintenance window is not spent on it; a wrong checksum, or a binary changed on disk after its download, refuses the operation and leaves nothing runnable in the cache. `false`: the image's binaries only, for a bot without a way out (an air-gapped install pins its versions in `TALOSCTL_BIN`).",
      ),
    TALOSCTL_CACHE_DIR: optionalString.describe(
      'Where downloaded `talosctl-vX.Y.Z` binaries are kept. Unset: `talos-chatops-talosctl` beside `CREDENTIALS_DIR` (or in the OS temp dir). The bot creates it 0700; a directory owned by another user is refused, and one others may write to is closed (0700) and emptied, since what it holds cannot be trusted. Replicas may share it: a binary appears there only whole and checked.',
    ),
    TALOSCTL_CACHE_MAX_MB: optionalString
      .default('512')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'Bound of `TALOSCTL_CACHE_DIR`, in MiB (a talosctl is about 80 MiB). After each download the least recently used binaries are deleted until the cache fits, never one a running job uses; one download larger than the bound is refused.',
      ),
    TALOSCTL_RELEASE_URL: optionalString
      .default('https://github.com/siderolabs/talos/releases/download')
      .pipe(z.url().refine((u) => u.startsWith('https://'), { message: 'must be an https:// URL: talosctl is downloaded only over TLS' }))
      .describe(
        'The Talos release downloads, without the version: the bot fetches `<url>/<version>/sha256sum.txt` and `<url>/<version>/talosctl-linux-<arch>`, over https only. Set it to a mirror that keeps the same layout; a mirror with a private CA is trusted through `NODE_EXTRA_CA_CERTS`, never by turning verification off.',
      ),
    DOCTOR_CHANNEL: optionalString
      .pipe(
        z
          .string()
          .regex(/^[CG][A-Z0-9]{2,}$/, 'must be a Slack channel id such as C0123ABCD')
          .optional(),
      )
      .describe(
        'A Slack channel id (`C…`). At every start the bot runs the checks of `/talos doctor` (its scopes, its channels, the Terraform outputs, talosctl, Redis, the snapshot directories, where the bot runs, the maintenance windows) and posts the report there. Unset: the checks run only on `/talos doctor`.',
      ),
    TOFU_BIN: optionalString.default('tofu').describe('The OpenTofu binary, a name looked up on `PATH` or a path.'),
    GIT_BIN: optionalString
      .default('git')
      .describe(
        "The `git` binary, asked `git status --porcelain` in a cluster's Terraform directory: a plan from a tree with uncommitted changes is shown, never offered for Apply.",
      ),
    PLAN_DIR: optionalString.describe(
      'Where reviewed Terraform plans wait for their Apply, one private (0700) directory per operation, removed when the operation ends; plans of ended or unknown operations are also deleted at start and by the retention sweep. Every replica must mount it (the manifests give it its own volume, apart from the credentials): the replica that runs the Apply checks the plan file against the reviewed sha256. Unset: `talos-chatops-plans` beside `CREDENTIALS_DIR` (or in the OS temp dir).',
    ),
    PLAN_SPACE_MB: optionalString
      .default('256')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'Bound of `PLAN_DIR`, in MiB: a plan is refused with a clear error when the kept plans hold this much already, or when the new plan pushes them over it. Keep it below the size of the volume `PLAN_DIR` is on.',
      ),
    HTTP_PORT: optionalString
      .default('3000')
      .pipe(z.coerce.number<string>().int().min(0).max(65535))
      .describe('TCP port, 0 to 65535, of `/healthz`, `/readyz`, `/metrics`, and in HTTP mode `/slack/events`.'),
    LOG_LEVEL: optionalString
      .default('info')
      .pipe(z.enum(LOG_LEVELS))
      .describe(`pino level: ${LOG_LEVELS.map((level) => `\`${level}\``).join(', ')}.`),
    LOG_PRETTY: optionalString
      .pipe(z.enum(['true', 'false']).optional())
      .describe(
        '`true` for human-readable logs (needs the dev dependency `pino-pretty`, which the image does not have). Unset or `false`: one JSON object per line.',
      ),
    IMAGE_FACTORY_URL: optionalString
      .default('https://factory.talos.dev')
      .pipe(z.url())
      .describe(
        "Image Factory: its `GET /versions` lists the Talos releases, and the Terraform follow-up's ISO (`/image/<schematic>/<version>/<platform>-<arch>.iso`) and its sha256 come from it. An `https` URL also names the registry host of the installer images (a self-hosted factory serves both on one host); a plain `http` URL is taken for a mirror of the API only, and the installers stay on `factory.talos.dev`.",
      ),
    CREDENTIALS_DIR: optionalString.describe(
      "Parent of the private (0700) directories that hold a job's talosconfig and kubeconfig, or a saved plan; must be writable. Directories a killed process left are removed at the next start. Unset: the OS temp dir.",
    ),
    READ_COMMANDS_PER_MINUTE: optionalString
      .default('6')
      .pipe(z.coerce.number<string>().int().min(0))
      .describe(
        'Read commands (`/talos status`, `health`, `gates`, `record`) one person may send about one cluster per minute, on each replica; more are refused with when to try again. `help` and the mutating commands are never limited by it. `0` turns the limit off.',
      ),
    APPROVAL_TTL_MINUTES: optionalString
      .default('60')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'How long an approval request stays valid, in minutes. An unanswered one then expires: the operation pauses, touches nothing, and an approver can ask again.',
      ),
    APPROVAL_MAX_AGE_MINUTES: optionalString
      .pipe(z.coerce.number<string>().positive().optional())
      .describe(
        "The oldest an approval may be when its step starts, in minutes; an older one (left waiting through a closed maintenance window, or a Terraform change's Apply before a long snapshot) is spent and an approver is asked again. Unset: `APPROVAL_TTL_MINUTES`.",
      ),
    APPROVAL_REMINDER_MINUTES: optionalString
      .default('10')
      .pipe(z.coerce.number<string>().min(0))
      .describe(
        'How long before an unanswered approval request expires its approvers are mentioned again, in minutes; `0` sends no reminder.',
      ),
    STEP_TIMEOUT_SECONDS: optionalString
      .default('1800')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        "Upper bound of one long step, in seconds: `talosctl upgrade --wait`, `talosctl reset`, `talosctl upgrade-k8s`, an etcd snapshot, `tofu plan` and `tofu apply`. Keep it below `SHUTDOWN_GRACE_SECONDS` and the pod's `terminationGracePeriodSeconds`.",
      ),
    PROBE_TIMEOUT_SECONDS: optionalString
      .default('60')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'Upper bound of one read-only call, in seconds: each probe of the health gate, each poll of a rebooting node, each `tofu` call other than plan and apply, `git status`, and each Image Factory request.',
      ),
    NODE_READY_TIMEOUT_SECONDS: optionalString
      .default('900')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'How long a rebooted node may take to be back and Ready on the target version, in seconds, and then how long its Talos health, etcd and Kubernetes checks may take to pass; also how long a VM a Terraform apply created may take to join.',
      ),
    LONGHORN_REBUILD_TIMEOUT_SECONDS: optionalString
      .default('3600')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        "How long a Talos upgrade waits for Longhorn to rebuild the replicas of a node and report every volume healthy, in seconds, after the node and before the next one is drained. A rebuild copies the volume's data, so it may take far longer than a reboot; when it expires the upgrade stops with a Retry that waits again.",
      ),
    SETTLE_SECONDS: optionalString
      .default('300')
      .pipe(z.coerce.number<string>().min(0))
      .describe(
        "The settle window of a Talos upgrade's final verification, after each node and at the end, in seconds: pods, Cilium and Flux still not ready after it stop the upgrade.",
      ),
    JOB_LOCK_SECONDS: optionalString
      .default('30')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        "How long a job's lock lasts without renewal, in seconds: a crashed replica's job moves to another after this. An operation left without a run is picked up again every `2 × JOB_LOCK_SECONDS` (at least 5 s).",
      ),
    PLAN_TTL_MINUTES: optionalString
      .default('30')
      .pipe(z.coerce.number<string>().positive())
      .describe('A plan older than this, in minutes, cannot be started: it expires, its buttons go, and a Terraform plan file is removed.'),
    POLL_INTERVAL_MS: optionalString
      .default('5000')
      .pipe(z.coerce.number<string>().int().positive())
      .describe('Interval between observations while waiting on a cluster, in milliseconds.'),
    SHUTDOWN_GRACE_SECONDS: optionalString
      .default('60')
      .pipe(z.coerce.number<string>().min(0))
      .describe(
        "On `SIGTERM`, how long the bot waits for its running jobs before it closes the workers by force and exits, in seconds; `0` stops at once. A forced job resumes on another replica once its lock lapses. Keep it above `STEP_TIMEOUT_SECONDS` and below the pod's `terminationGracePeriodSeconds`.",
      ),
    READ_CONCURRENCY: optionalString
      .default('32')
      .pipe(z.coerce.number<string>().int().min(1).max(256))
      .describe(
        'Read-only jobs (health gates, `gates`, `plan`) one replica runs at once, 1 to 256. They mostly wait on talosctl and the clusters; each runs a few `talosctl` processes and holds one Kubernetes client.',
      ),
    OPERATION_RETENTION_DAYS: optionalString
      .default('400')
      .pipe(z.coerce.number<string>().positive())
      .describe(
        'How long a finished operation (completed, refused, cancelled; a failed one once it no longer holds its cluster) is kept after it ended, with its audit trail and maintenance record, in days. Running and waiting operations never expire.',
      ),
    SIGNOFF_MAX_AGE_DAYS: optionalString
      .default('90')
      .pipe(z.coerce.number<string>().positive().max(3650))
      .describe(
        "How long an approver's sign-off of a `/talos gates` gate only a person can judge counts, in days: then its evidence is old and the gate waits for a sign-off again. A sign-off also stops counting once the cluster's nodes change.",
      ),
    DEDUPE_RETENTION_MINUTES: optionalString
      .default('60')
      .pipe(z.coerce.number<string>().min(10))
      .describe('How long a Slack delivery id is remembered against redelivery, in minutes; at least 10 (Slack retries for about 5).'),
    JOB_RETENTION_DAYS: optionalString
      .default('7')
      .pipe(z.coerce.number<string>().positive())
      .describe('How long finished queue jobs are kept for inspection, in days (and at most 1000 per queue).'),
    GIT_COMMIT: optionalString.describe(
      'The commit the image was built from, shown as the `commit` label of the `talos_chatops_build_info` metric; the image sets it from its `GIT_COMMIT` build argument. Unset: the metric has no commit label.',
    ),
    BOT_NODE_NAME: optionalString
      .pipe(KubernetesNodeName.optional())
      .describe(
        "The name of the Kubernetes Node the bot's pod runs on; the manifests set it from the downward API (`spec.nodeName`). When it is a Node of a managed cluster, the bot runs on that cluster: its etcd snapshots would stay on the cluster they are meant to rescue, so `/talos snapshot`, the scheduled snapshots and every operation that takes one are refused, and `/talos doctor` fails. Unset (with `BOT_HOST_IP` and `BOT_POD_IP`): the bot cannot tell, and the doctor warns.",
      ),
    BOT_HOST_IP: optionalString
      .pipe(IpAddress.optional())
      .describe(
        "The address of the machine the bot runs on, an IPv4 or IPv6 address; the manifests set it from the downward API (`status.hostIP`, the Node's primary address). When it is an address of a managed cluster's node, the bot runs on that cluster (see `BOT_NODE_NAME`). On a host without Kubernetes, set it to the host's address so the doctor can check it.",
      ),
    BOT_POD_IP: optionalString
      .pipe(IpAddress.optional())
      .describe(
        "The bot pod's own address, an IPv4 or IPv6 address; the manifests set it from the downward API (`status.podIP`). Compared with the managed nodes' addresses too (a pod on the host network has its node's address), never with pod addresses: pod subnets repeat from cluster to cluster.",
      ),
    RECORD_EXPORT_DIR: optionalString
      .pipe(z.string().regex(/^\//, 'must be an absolute path').optional())
      .describe(
        "An absolute path, a directory on a persistent volume (the image's root filesystem is read-only): each operation's maintenance record is written there as `<op>.json` when the operation ends. Unset: not exported.",
      ),
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
  TALOSCTL_RELEASE_URL:
    'for example https://github.com/siderolabs/talos/releases/download, or an https mirror with the same layout (trust its CA with NODE_EXTRA_CA_CERTS); TALOSCTL_DOWNLOAD=false turns downloads off',
  APPROVAL_REMINDER_MINUTES: 'minutes before an approval request expires that its approvers are reminded, e.g. 10; 0 sends no reminder',
  SHUTDOWN_GRACE_SECONDS: 'seconds a stopping replica waits for its running jobs, e.g. 60; 0 stops at once',
  READ_CONCURRENCY: 'how many read-only jobs (health gates, gates, plans) one replica runs at once, 1 to 256',
  LONGHORN_REBUILD_TIMEOUT_SECONDS: 'seconds an upgrade waits for Longhorn to rebuild replicas, e.g. 3600',
  SETTLE_SECONDS: 'seconds the final verification waits for pods, Cilium and Flux to be ready, e.g. 300',
  OPERATION_RETENTION_DAYS: 'days a finished operation (its audit trail and maintenance record) is kept, e.g. 400',
  SIGNOFF_MAX_AGE_DAYS: 'days a sign-off of a by-hand production gate counts, e.g. 90',
  DEDUPE_RETENTION_MINUTES: 'minutes a Slack delivery id is remembered; Slack retries for about 5, so at least 10',
  JOB_RETENTION_DAYS: 'days finished queue jobs are kept for inspection, e.g. 7',
  RECORD_EXPORT_DIR: 'a directory on a volume for the JSON maintenance records, e.g. /var/lib/talos-chatops/records',
  BOT_NODE_NAME: 'set it from the downward API (fieldRef spec.nodeName), as manifests/base/deployment.yaml does, or leave it unset',
  BOT_HOST_IP: "set it from the downward API (fieldRef status.hostIP), as manifests/base/deployment.yaml does, or to the host's address",
  BOT_POD_IP: 'set it from the downward API (fieldRef status.podIP), as manifests/base/deployment.yaml does, or leave it unset',
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
  /** `REDIS_DURABILITY_CHECK`: `enforce` refuses a production Redis without AOF or with eviction; `warn` accepts it with a warning. */
  redisDurabilityCheck: 'enforce' | 'warn';
  /** `REDIS_EPOCH_RESEED=true`: write a new epoch at this start although Redis lost the one it had. */
  redisEpochReseed: boolean;
  /** `REDIS_EPOCH_CHECK_SECONDS` in ms: how often the epoch is checked while the bot runs (default 15 000). */
  redisEpochCheckMs: number;
  clustersFile: string;
  /** `CLUSTERS_RELOAD_SECONDS` in ms: how often the inventory file is read again; 0 never. */
  clustersReloadMs: number;
  talosctlBin: string;
  /** Unless `TALOSCTL_DOWNLOAD=false`: where a release's talosctl is fetched from, the cache it is kept in and its bound. */
  talosctlDownload: { releaseUrl: string; cacheDir: string | undefined; maxBytes: number } | undefined;
  /** `DOCTOR_CHANNEL`: where the start-up doctor report goes; unset, it is not posted. */
  doctorChannel: string | undefined;
  tofuBin: string;
  /** `git`, asked whether a Terraform directory has uncommitted changes. */
  gitBin: string;
  /**
   * Where reviewed plans wait for their Apply, one private directory per operation. With two
   * replicas it must be a volume both mount, or an Apply run by the other replica asks for a new plan.
   */
  planDir: string | undefined;
  /** `PLAN_SPACE_MB` in bytes: what the kept plans may hold together. */
  planSpaceBytes: number;
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
  /** Read commands one user may send about one cluster per minute (a token bucket per replica); 0: no limit. */
  readCommandsPerMinute: number;
  imageFactoryUrl: string;
  /** Parent of the per-job private credential directories; the OS temp dir when unset. */
  credentialsDir: string | undefined;
  /** How long what the bot stores is kept once it is done with it. */
  retention: {
    /** How long an approver's sign-off of a by-hand production gate counts, in ms (default 90 days). */
    signOffMs: number;
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
  /** The commit the image was built from, for the build_info metric. */
  gitCommit: string | undefined;
  /** Where the bot itself runs (`BOT_NODE_NAME`, `BOT_HOST_IP`, `BOT_POD_IP`); each unset when the deployment does not say. */
  placement: BotPlacement;
  /** Variables every child process gets (PATH, HOME, locale), never the bot's secrets. */
  childEnv: Record<string, string>;
  /** Extra variables for `tofu` only: its state-backend credentials (TF_*, AWS_*, B2_*…). */
  tofuEnv: Record<string, string>;
  timeouts: {
    /** How long an approval stays valid, in ms. */
    approvalTtlMs: number;
    /** The oldest an approval may be when its step starts, in ms; older, an approver is asked again. Default `approvalTtlMs`. */
    approvalMaxAgeMs?: number;
    /** How long before an unanswered request expires its approvers are reminded, in ms (default 600 000); 0 sends no reminder. */
    approvalReminderMs: number;
    /** Upper bound of one mutating talosctl step (`upgrade --wait`, `reset`), in ms. */
    stepMs: number;
    /** Upper bound of one read-only probe of the health gate, in ms. */
    probeMs: number;
    /** How long a rebooted node may take to report Ready on the target version, in ms; then the bound of its checks after the reboot. */
    nodeReadyMs: number;
    /** How long Longhorn may take to rebuild a node's replicas (every volume healthy again) around a node's upgrade, in ms (default 3 600 000). */
    longhornRebuildMs: number;
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

/** The credentials that may come from a file named by `<NAME>_FILE` instead of the variable itself. */
export const SECRET_FILE_VARIABLES = ['SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET', 'REDIS_URL'] as const;

/**
 * The environment with each `<NAME>_FILE` read into `<NAME>`: a credential in a file stays out of
 * `/proc/<pid>/environ`, which keeps the environment the process started with for its whole life.
 */
function withSecretFiles(env: Record<string, string | undefined>): Record<string, string | undefined> {
  const fromFiles: Record<string, string> = {};
  const problems: string[] = [];
  for (const name of SECRET_FILE_VARIABLES) {
    const file = env[`${name}_FILE`]?.trim();
    if (file === undefined || file === '') continue;
    if (env[name] !== undefined && env[name].trim() !== '') {
      problems.push(`${name} and ${name}_FILE are both set: keep one (the file is preferred)`);
      continue;
    }
    let text: string;
    try {
      text = readFileSync(file, 'utf8').trim();
    } catch (error) {
      problems.push(
        `${name}_FILE: ${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): mount the secret there or fix the path`,
      );
      continue;
    }
    if (text === '') problems.push(`${name}_FILE: ${file} is empty`);
    else fromFiles[name] = text;
  }
  if (problems.length > 0) throw new ConfigError('The environment', problems);
  // The environment itself when no file is named: what is read from it stays traceable.
  return Object.keys(fromFiles).length === 0 ? env : { ...env, ...fromFiles };
}

/** Reads and validates the environment once, at start; nothing else reads `process.env`. */
export function loadConfig(given: Record<string, string | undefined>): Config {
  const env = withSecretFiles(given);
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
    redisDurabilityCheck: e.REDIS_DURABILITY_CHECK,
    redisEpochReseed: e.REDIS_EPOCH_RESEED === 'true',
    redisEpochCheckMs: e.REDIS_EPOCH_CHECK_SECONDS * 1000,
    clustersFile: e.CLUSTERS_FILE,
    clustersReloadMs: e.CLUSTERS_RELOAD_SECONDS * 1000,
    talosctlBin: e.TALOSCTL_BIN,
    talosctlDownload:
      e.TALOSCTL_DOWNLOAD === 'false'
        ? undefined
        : {
            releaseUrl: e.TALOSCTL_RELEASE_URL,
            cacheDir: e.TALOSCTL_CACHE_DIR,
            maxBytes: Math.round(e.TALOSCTL_CACHE_MAX_MB * 1024 * 1024),
          },
    doctorChannel: e.DOCTOR_CHANNEL,
    tofuBin: e.TOFU_BIN,
    gitBin: e.GIT_BIN,
    planDir: e.PLAN_DIR,
    planSpaceBytes: Math.round(e.PLAN_SPACE_MB * 1024 * 1024),
    httpPort: e.HTTP_PORT,
    logLevel: e.LOG_LEVEL,
    logPretty: e.LOG_PRETTY === 'true',
    shutdownGraceMs: e.SHUTDOWN_GRACE_SECONDS * 1000,
    readConcurrency: e.READ_CONCURRENCY,
    readCommandsPerMinute: e.READ_COMMANDS_PER_MINUTE,
    imageFactoryUrl: e.IMAGE_FACTORY_URL,
    credentialsDir: e.CREDENTIALS_DIR,
    retention: {
      operationMs: e.OPERATION_RETENTION_DAYS * 86_400_000,
      signOffMs: e.SIGNOFF_MAX_AGE_DAYS * 86_400_000,
      dedupeSeconds: Math.round(e.DEDUPE_RETENTION_MINUTES * 60),
      jobSeconds: Math.round(e.JOB_RETENTION_DAYS * 86_400),
    },
    recordExportDir: e.RECORD_EXPORT_DIR,
    gitCommit: e.GIT_COMMIT,
    placement: { nodeName: e.BOT_NODE_NAME, hostIp: e.BOT_HOST_IP, podIp: e.BOT_POD_IP },
    childEnv: pick(env, (k) => ['PATH', 'HOME', 'LANG', 'TZ', 'SSL_CERT_FILE', 'SSL_CERT_DIR'].includes(k)),
    tofuEnv: pick(env, (k) => /^(TF_|TOFU_|AWS_|B2_|ARM_|GOOGLE_|PM_|PROXMOX_VE_)/.test(k) && k !== 'TOFU_BIN'),
    timeouts: {
      approvalTtlMs: e.APPROVAL_TTL_MINUTES * 60_000,
      approvalReminderMs: e.APPROVAL_REMINDER_MINUTES * 60_000,
      approvalMaxAgeMs: (e.APPROVAL_MAX_AGE_MINUTES ?? e.APPROVAL_TTL_MINUTES) * 60_000,
      stepMs: e.STEP_TIMEOUT_SECONDS * 1000,
      probeMs: e.PROBE_TIMEOUT_SECONDS * 1000,
      nodeReadyMs: e.NODE_READY_TIMEOUT_SECONDS * 1000,
      longhornRebuildMs: e.LONGHORN_REBUILD_TIMEOUT_SECONDS * 1000,
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
