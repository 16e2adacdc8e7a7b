import { join } from 'node:path';
import { KIND_POLICY, playbookOf, presentationOf } from '../../jobs/playbooks/index.ts';
import { tmpdir } from 'node:os';
import type { Job } from 'bullmq';
import type { OpsQueue } from '../../src/queue/job-schemas.ts';
import type { ChatMessage, ChatPort, ReplyOptions, ThreadReply } from '../../src/port/chat-port.ts';
import type { ClusterAccess, ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../src/cluster/tofu.ts';
import { parseInventory, type ClusterConfig, type Inventory } from '../../src/config/inventory.ts';
import { clusterYaml } from './inventory-yaml.ts';
import { agreeingEstate } from './fake-cluster.ts';
import { createLogger } from '../../src/log/logger.ts';
import { SecretScrubber } from '../../src/log/secret-scrubber.ts';
import { createAudit } from '../../jobs/engine/audit.ts';
import { createNodeClassRecord } from '../../src/ops/node-class-record.ts';
import { createClusterLock } from '../../src/ops/cluster-lock.ts';
import { newOperation, type Operation } from '../../src/ops/operation.ts';
import { createOperationStore } from '../../src/ops/operation-store.ts';
import { createLifecycle, type Lifecycle } from '../../jobs/engine/lifecycle/lifecycle.ts';
import { createRunLease } from '../../src/ops/run-lease.ts';
import type { ImageFactory } from '../../src/talos/image-factory.ts';
import type { Talosctl } from '../../src/talos/talosctl.ts';
import type { OpsJobDeps } from '../../jobs/engine/job-context.ts';
import { systemClock, type Clock } from '../../src/time/clock.ts';
import type { RedisFixture } from './redis-fixture.ts';

/** A chat port that records what the engine says, and fails the calls a test tells it to. */
export class RecordingChat implements ChatPort {
  readonly posts: { channel: string; threadTs?: string; ts: string; message: ChatMessage; options?: ReplyOptions }[] = [];
  readonly edits: { ts: string; message: ChatMessage }[] = [];
  readonly uploads: string[] = [];
  /** Every file attached, with its title and content. */
  readonly files: { filename: string; title: string; content: string }[] = [];
  /** Methods that throw, as Slack does when it is away. */
  readonly failing = new Set<'post' | 'reply' | 'update' | 'upload'>();
  #next = 1;

  #fail(method: 'post' | 'reply' | 'update' | 'upload'): void {
    if (this.failing.has(method)) throw new Error(`An API error occurred: internal_error (${method})`);
  }

  post(channel: string, message: ChatMessage): Promise<{ ts: string }> {
    this.#fail('post');
    const ts = `1700000000.${String(this.#next++).padStart(6, '0')}`;
    this.posts.push({ channel, ts, message });
    return Promise.resolve({ ts });
  }

  reply(channel: string, threadTs: string, message: ChatMessage, options?: ReplyOptions): Promise<{ ts: string }> {
    this.#fail('reply');
    const ts = `1700000000.${String(this.#next++).padStart(6, '0')}`;
    this.posts.push({ channel, threadTs, ts, message, options });
    return Promise.resolve({ ts });
  }

  replies(_channel: string, threadTs: string): Promise<ThreadReply[]> {
    return Promise.resolve(this.posts.filter((p) => p.threadTs === threadTs).map((p) => ({ ts: p.ts, text: p.message.text })));
  }

  update(_channel: string, ts: string, message: ChatMessage): Promise<void> {
    this.#fail('update');
    this.edits.push({ ts, message });
    return Promise.resolve();
  }

  ephemeral(): Promise<void> {
    return Promise.resolve();
  }

  upload(_channel: string, _threadTs: string, file: { filename: string; title: string; content: string }): Promise<void> {
    this.#fail('upload');
    this.uploads.push(file.filename);
    this.files.push(file);
    return Promise.resolve();
  }

  permalink(channel: string, ts: string): Promise<string> {
    return Promise.resolve(`https://example.slack.com/archives/${channel}/p${ts.replace('.', '')}`);
  }

  /** Every text the thread of `rootTs` received, in order. */
  thread(rootTs: string): string[] {
    return this.posts.filter((p) => p.threadTs === rootTs).map((p) => p.message.text);
  }
}

/** Records the jobs the engine queues instead of running them: the test runs what it wants, when it wants. */
export class RecordingQueue {
  readonly added: { name: string; data: unknown; opts: { jobId?: string; delay?: number } }[] = [];
  add(name: string, data: unknown, opts: { jobId?: string; delay?: number } = {}): Promise<Job> {
    this.added.push({ name, data, opts });
    return Promise.resolve({ id: opts.jobId } as Job);
  }
  getJob(): Promise<undefined> {
    return Promise.resolve(undefined);
  }
  asQueue(): OpsQueue {
    return this as unknown as OpsQueue;
  }
}

/** A cluster the test playbooks never call: reaching it is the fault a test would show. */
const unreachable = (): never => {
  throw new Error('this test does not reach a cluster');
};
const talosctl: Talosctl = { binary: 'talosctl', run: unreachable };
const session = (cluster: ClusterConfig): ClusterSession =>
  ({ cluster, estate: agreeingEstate(cluster), kube: {}, talosctl: () => Promise.resolve(talosctl) }) as unknown as ClusterSession;

/** Production takes no change without a declared window: the tests that are not about windows declare it takes them at any time. */
const ANY_TIME = '    maintenanceWindows: always\n';

export function inventory(overrides = ''): Inventory {
  return parseInventory(
    `clusters:
${clusterYaml('production', { maintenanceWindows: undefined })}${overrides.includes('maintenanceWindows:') ? '' : ANY_TIME}${overrides}`,
    'engine-test.yaml',
  );
}

export interface EngineFixture {
  deps: OpsJobDeps;
  chat: RecordingChat;
  queue: RecordingQueue;
  /** The clock the engine reads; tests move it. */
  clock: { now: Date };
  /** Stores an operation of `kind` in `state` with `steps`, ready for the engine. */
  operation(fields: Partial<Operation>): Promise<Operation>;
  /** The lifecycle service on the same store, audit, lock and queue; `cancelled` records what a cancel hands on to Slack. */
  lifecycle(options?: { cancelled?: Operation[] }): Lifecycle;
}

export interface EngineFixtureOptions {
  inventory?: Inventory;
  /** The cluster the engine reaches (see fake-cluster.ts); by default one that fails any call. */
  cluster?: Pick<OpsJobDeps, 'access' | 'tofu' | 'factory'> & Partial<Pick<OpsJobDeps, 'git' | 'planDir'>>;
}

/** The engine's real store, audit, lock and run lease on a real Redis; Slack, the queue and the cluster are fakes. */
export function engineFixture(redis: RedisFixture, options: EngineFixtureOptions = {}): EngineFixture {
  const client = redis.client();
  const store = createOperationStore(client);
  const chat = new RecordingChat();
  const queue = new RecordingQueue();
  const clock = { now: new Date('2026-12-01T10:00:00Z') };
  const now = (): Date => clock.now;
  // Waits pass in real time; the time read is the test's.
  const engineClock: Clock = { now, sleep: (ms, signal) => systemClock.sleep(ms, signal) };
  const logger = createLogger({ level: 'silent', pretty: false, scrubber: new SecretScrubber() });
  const access: ClusterAccess = { withSession: (cluster, _signal, work) => work(session(cluster)) };
  const deps: OpsJobDeps = {
    inventory: options.inventory ?? inventory(),
    store,
    lock: createClusterLock(client),
    runLease: createRunLease(client, { ttlMs: 3000 }),
    audit: createAudit(store, chat, {
      clock: engineClock,
      postLease: createRunLease(client, { ttlMs: 3000, prefix: 'talos:audit-post' }),
      attempts: 1,
      backoffMs: 1,
    }),
    nodeClasses: createNodeClassRecord(client),
    access: options.cluster?.access ?? access,
    tofu: options.cluster?.tofu ?? ({ outputRaw: unreachable } as unknown as Tofu),
    factory: options.cluster?.factory ?? ({ versions: unreachable } as unknown as ImageFactory),
    git: options.cluster?.git ?? { read: unreachable },
    planDir: options.cluster?.planDir ?? join(tmpdir(), `engine-plans-${crypto.randomUUID()}`),
    chat,
    opsQueue: queue.asQueue(),
    logger,
    timeouts: {
      approvalTtlMs: 30 * 60_000,
      approvalReminderMs: 10 * 60_000,
      stepMs: 20_000,
      probeMs: 5000,
      nodeReadyMs: 8000,
      longhornRebuildMs: 8000,
      settleMs: 2000,
      pollMs: 50,
      jobLockMs: 3000,
      planTtlMs: 60 * 60_000,
    },
    // A step's waits and their bounds run against the simulated cluster in real time; the times it records (`now`) are the test's.
    clock: systemClock,
    now,
    playbooks: playbookOf,
    presentations: presentationOf,
    // A bot that does not know where it runs, as one started without the downward API.
    placement: { nodeName: undefined, hostIp: undefined, podIp: undefined },
  };
  return {
    deps,
    chat,
    queue,
    clock,
    lifecycle: (options = {}) =>
      createLifecycle({
        ...deps,
        planTtlMs: deps.timeouts.planTtlMs,
        policy: KIND_POLICY,
        onCancelled: (op) => {
          options.cancelled?.push(op);
          return Promise.resolve();
        },
        // A wait moves the test's clock instead of taking time.
        clock: {
          now,
          sleep: (ms) => {
            clock.now = new Date(clock.now.getTime() + ms);
            return Promise.resolve();
          },
        },
      }),
    async operation(fields) {
      const op = newOperation({
        kind: 'k8s-upgrade',
        cluster: 'production',
        channel: 'C0MAINTPRD',
        requestedBy: 'U0ALICE',
        createdAt: clock.now.toISOString(),
        state: 'running',
        target: { version: '1.34.1', talosVersion: 'v1.11.5' },
        startedBy: 'U0ALICE',
        ...fields,
      });
      await store.create(op);
      return op;
    },
  };
}
