/**
 * Slack may apply a write and still answer 5xx, or never answer it. Every kind of message the
 * bot writes is put through both, on its own call, and must be in Slack exactly once while the
 * flow it belongs to completes.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { READ_QUEUE } from '../../src/queue/job-schemas.ts';
import type { CallFilter, JsonObject, Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { clickStart, requestUpgrade, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

const CHANNEL = CHANNELS.production;
/** The bot's Slack calls give up after this long: a write whose answer never comes costs this much. */
const SLACK_TIMEOUT_SECONDS = '3';

/** The key a post carries (message metadata), from a call's arguments or a stored message. */
function keyOfArgs(args: JsonObject): string | undefined {
  const raw = args.metadata;
  const metadata = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { event_payload?: { key?: unknown } } | undefined;
  return typeof metadata?.event_payload?.key === 'string' ? metadata.event_payload.key : undefined;
}

function keyOf(message: Message | undefined): string | undefined {
  const key = message?.metadata?.event_payload.key;
  return typeof key === 'string' ? key : undefined;
}

/** The injected faults, each named, and which of them a call has met. */
class Injected {
  readonly hit = new Set<string>();
  readonly #h: Harness;

  constructor(h: Harness) {
    this.#h = h;
  }

  /** `test` picks the call; the fault applies to the first call it picks, once. */
  add(name: string, method: string, how: 'error' | 'hang' | 'cut', test: CallFilter): string {
    const where: CallFilter = (args) => {
      if (this.hit.has(name) || !test(args)) return false;
      this.hit.add(name);
      return true;
    };
    if (how === 'error') this.#h.slack.faults.serverError({ methods: [method], afterWrite: true, where });
    else this.#h.slack.faults.lostAnswer({ methods: [method], how, where });
    return name;
  }

  /** The stored message a `chat.update` call edits. */
  edited(args: JsonObject): Message | undefined {
    return this.#h.slack.message(String(args.channel), String(args.ts));
  }
}

describe('read-only reports', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ env: { SLACK_TIMEOUT_SECONDS } });
  });

  afterAll(async () => {
    await h?.stop();
  });

  afterEach(() => {
    h.slack.faults.clear();
  });

  /** Waits until the read-only queue has nothing left to run. */
  async function readJobsDone(): Promise<void> {
    const redis = new Redis(h.redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(READ_QUEUE, { connection: redis });
    try {
      for (const deadline = Date.now() + 60_000; ; await sleep(50)) {
        const counts = await queue.getJobCounts('active', 'waiting', 'delayed', 'prioritized');
        if (Object.values(counts).every((n) => n === 0)) return;
        if (Date.now() > deadline) throw new Error(`read-only jobs still queued after 60 s: ${JSON.stringify(counts)}`);
      }
    } finally {
      await queue.close();
      redis.disconnect();
    }
  }

  /** Runs `/talos <command>` and returns what it added to the channel: its top-level posts and each one's thread. */
  async function run(command: string): Promise<{ posts: Message[]; root: Message; replies: Message[] }> {
    const before = new Set(h.slack.channelMessages(CHANNEL).map((m) => m.ts));
    await h.command(command);
    await h.slack.waitFor(() => h.slack.channelMessages(CHANNEL).some((m) => !before.has(m.ts)), {
      timeoutMs: 30_000,
      description: `the root of /talos ${command}`,
    });
    await readJobsDone();
    const posts = h.slack.channelMessages(CHANNEL).filter((m) => !before.has(m.ts));
    const root = posts[0]!;
    return { posts, root: h.slack.message(CHANNEL, root.ts)!, replies: h.slack.thread(CHANNEL, root.ts) };
  }

  const root = (args: JsonObject) => keyOfArgs(args)?.endsWith('-root') === true;

  describe.each([
    // The gate's healthy thread: every check on one line, then its evidence file.
    { command: 'health', replies: 2, reply: '-passed', files: 1 },
    { command: 'gates', replies: undefined, reply: '-gate-', files: 0 },
  ])('/talos $command', ({ command, replies: expected, reply, files }) => {
    let baseline: number;

    beforeAll(async () => {
      // The report as it is without faults: how many replies it threads.
      baseline = (await run(command)).replies.length;
    });

    it('threads its replies without faults', () => {
      expect(baseline).toBe(expected ?? baseline);
      expect(baseline).toBeGreaterThan(0);
    });

    it.each([
      { root: 'error', edit: 'error', reply: 'hang' },
      { root: 'hang', edit: 'cut', reply: 'error' },
    ] as const)(
      'posts its root and replies once, and edits in its verdict, when the root post meets $root, the edit $edit and a reply $reply',
      async (how) => {
        const faults = new Injected(h);
        const names = [
          faults.add('root post', 'chat.postMessage', how.root, (args) => args.thread_ts === undefined && root(args)),
          faults.add('verdict edit', 'chat.update', how.edit, (args) => keyOf(faults.edited(args))?.endsWith('-root') === true),
          faults.add('reply', 'chat.postMessage', how.reply, (args) => keyOfArgs(args)?.includes(reply) === true),
        ];

        const report = await run(command);

        expect([...faults.hit].sort()).toEqual([...names].sort());
        expect(report.posts).toHaveLength(1);
        expect(report.root.edited).toBeDefined();
        expect(report.replies).toHaveLength(baseline);
        const keys = report.replies.map(keyOf);
        expect(new Set(keys).size).toBe(baseline);
        expect(keys.filter((k) => k?.includes(reply))).toHaveLength(reply === '-gate-' ? baseline : 1);
        expect(report.replies.filter((m) => (m.files ?? []).length > 0)).toHaveLength(files);
      },
    );
  });
});

describe('an operation: Kubernetes upgrade of production', () => {
  let h: Harness | undefined;

  afterEach(async () => {
    await h?.stop();
    h = undefined;
  });

  const APPLY = 'talos-k8s-apply';
  const carriesApply = (value: unknown): boolean => JSON.stringify(value ?? '').includes(APPLY);

  /** Audit entries (`#<seq> …`, one per line) as first posted, in thread order. */
  function auditSeqs(harness: Harness, plan: Plan): number[] {
    return harness.slack
      .thread(CHANNEL, plan.root.ts)
      .flatMap((m) => (harness.slack.versions(CHANNEL, m.ts)[0]?.text ?? '').split('\n'))
      .flatMap((line) => /^#(\d+) /.exec(line)?.[1] ?? [])
      .map(Number);
  }

  it.each([
    { name: '5xx after the write', how: ['error', 'error', 'error'] },
    { name: 'no answer after the write (timeout or cut connection)', how: ['hang', 'cut', 'hang'] },
  ] as const)(
    'posts the plan, the approval request, each audit reply, the progress and the records once, edits them, and completes, on $name',
    async ({ how }) => {
      h = await startHarness({ env: { SLACK_TIMEOUT_SECONDS } });
      const harness = h;
      const faults = new Injected(harness);
      const [a, b, c] = how;
      const names = [
        faults.add('plan (root)', 'chat.postMessage', a, (args) => /^op-[a-z0-9]+-root$/.test(keyOfArgs(args) ?? '')),
        faults.add('root edit', 'chat.update', b, (args) => /^op-[a-z0-9]+-root$/.test(keyOf(faults.edited(args)) ?? '')),
        faults.add(
          'first audit reply',
          'chat.postMessage',
          c,
          (args) => args.thread_ts !== undefined && /^#\d+ /.test(String(args.text)) && !carriesApply(args.blocks),
        ),
        faults.add('approval request', 'chat.postMessage', a, (args) => carriesApply(args.blocks)),
        faults.add('approval decided (edit)', 'chat.update', b, (args) => carriesApply(faults.edited(args)?.blocks)),
        faults.add('progress reply', 'chat.postMessage', c, (args) => keyOfArgs(args)?.includes('-progress-') === true),
        faults.add('progress edit', 'chat.update', a, (args) => keyOf(faults.edited(args))?.includes('-progress-') === true),
        faults.add('dry-run upload', 'files.completeUploadExternal', b, (args) => JSON.stringify(args.files ?? '').includes('--dry-run')),
        faults.add('maintenance record upload', 'files.completeUploadExternal', c, (args) =>
          JSON.stringify(args.files ?? '').includes('Maintenance record'),
        ),
      ];

      const plan = await requestUpgrade(harness, 'upgrade k8s 1.34.2');
      await clickStart(harness, plan);
      const request = await harness.slack.waitFor(
        () => harness.slack.thread(CHANNEL, plan.root.ts).find((m) => carriesApply(harness.slack.message(CHANNEL, m.ts)?.blocks)),
        {
          timeoutMs: 60_000,
          description: 'the approval request',
        },
      );
      await harness.slack.clickButton({ user: USERS.carol, channel: CHANNEL, messageTs: request.ts, actionId: APPLY });
      const done = await waitForRootState(harness, plan, /completed|stopped|cancelled/, CHANNEL, 90_000);
      const record = `${plan.opId}-maintenance-record.md`;
      await harness.slack.waitFor(() => harness.slack.uploadedFiles().some((f) => f.filename === record), {
        timeoutMs: 30_000,
        description: 'the maintenance record',
      });

      expect(done.text).toContain('completed');
      expect([...faults.hit].sort()).toEqual([...names].sort());
      const roots = harness.slack.channelMessages(CHANNEL).filter((m) => m.subtype !== 'thread_broadcast' && m.text.includes(plan.opId));
      expect(roots.map((m) => m.ts)).toEqual([plan.root.ts]);
      const thread = harness.slack.thread(CHANNEL, plan.root.ts);
      expect(thread.filter((m) => carriesApply(harness.slack.versions(CHANNEL, m.ts)[0]?.blocks))).toHaveLength(1);
      expect(carriesApply(harness.slack.message(CHANNEL, request.ts)?.blocks)).toBe(false);
      const seqs = auditSeqs(harness, plan);
      expect(seqs).toEqual(seqs.map((_, i) => i + 1));
      const progress = thread.filter((m) => keyOf(m)?.includes('-progress-') === true);
      expect(progress).toHaveLength(1);
      expect(harness.slack.edits(CHANNEL, progress[0]!.ts).length).toBeGreaterThan(0);
      for (const file of [record, `${plan.opId}-upgrade-k8s-dry-run.txt`]) {
        const uploaded = harness.slack.uploadedFiles().filter((f) => f.filename === file);
        expect(uploaded).toHaveLength(1);
        expect(thread.filter((m) => m.files?.some((f) => f.id === uploaded[0]!.id) === true)).toHaveLength(1);
      }
      expect(harness.sim.cluster('production').nodes.map((n) => n.kubeletVersion)).toEqual(['v1.34.2', 'v1.34.2', 'v1.34.2']);
    },
    150_000,
  );
});
