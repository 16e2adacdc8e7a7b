import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import type { BotProcess } from '../support/bot-process.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { replicaPaths } from '../support/replica-paths.ts';
import { waitForSettled } from '../support/settled.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  requestUpgrade,
  waitForApprovalRequest,
  auditLines,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness;
let second: BotProcess;

/** Two replicas of the bot against one Redis, one Slack app and one estate. */
async function startTwoReplicas(env: Record<string, string> = {}): Promise<void> {
  h = await startHarness({ env });
  second = await h.secondBot();
  await second.start();
  await h.slack.waitForConnections(2);
}

let volumes: string | undefined;

afterEach(async () => {
  await h?.stop();
  if (volumes !== undefined) await rm(volumes, { recursive: true, force: true });
  volumes = undefined;
});

function messages(bot: BotProcess, msg: string): Record<string, unknown>[] {
  return bot.logLines().filter((l) => l.msg === msg);
}

describe('two replicas', () => {
  it('handle each of 20 /talos health commands exactly once: each runs a gate or joins the one running', async () => {
    // Sixteen gates at once starve two CPUs of the test machine for seconds; a lock that
    // outlives that keeps this test about deliveries, not about stalled-job recovery.
    await startTwoReplicas({ JOB_LOCK_SECONDS: '30' });
    const acks = await Promise.all(Array.from({ length: 20 }, () => h.command('health')));
    expect(acks.every((a) => a.includes('Running the health gate on *production*'))).toBe(true);

    // Each delivery reached one replica: the two together enqueued exactly 20 jobs, and both took some.
    const enqueued = await h.slack.waitFor(
      () => {
        const counts = [h.bot, second].map((b) => messages(b, 'command enqueued').length);
        return counts[0]! + counts[1]! >= 20 ? counts : undefined;
      },
      { timeoutMs: 60_000, description: '20 enqueued commands' },
    );
    expect(enqueued[0]! + enqueued[1]!).toBe(20);
    expect(enqueued.every((n) => n > 0)).toBe(true);
    // Each job ran a gate or joined the one running for the cluster, exactly once: 20 in all.
    const handled = (): { gates: unknown[]; joined: number } => ({
      gates: [h.bot, second].flatMap((b) => messages(b, 'health gate started').map((l) => l.op)),
      joined: [h.bot, second].map((b) => messages(b, 'health gate request joined the running gate').length).reduce((a, b) => a + b, 0),
    });
    const { gates, joined } = await h.slack.waitFor(
      () => {
        const now = handled();
        return now.gates.length + now.joined >= 20 ? now : undefined;
      },
      { timeoutMs: 110_000, description: '20 handled health requests' },
    );
    expect(gates.length + joined).toBe(20);
    expect(new Set(gates).size).toBe(gates.length);

    // Finished: a verdict with its evidence attached (the gate's last write), or (when the loaded machine made `tofu output` time out) "could not run".
    const finished = (ts: string, text: string): boolean =>
      (/Health gate (passed|failed)/.test(text) && h.slack.thread(CHANNELS.production, ts).some((m) => (m.files ?? []).length > 0)) ||
      /Health gate could not run/.test(text);
    const roots = await h.slack.waitFor(
      () => {
        const all = h.slack.channelMessages(CHANNELS.production);
        return all.length >= gates.length && all.every((m) => finished(m.ts, m.text)) ? all : undefined;
      },
      { timeoutMs: 110_000, description: 'every gate finished' },
    );
    // One root per gate that ran, and no gate ran twice: a second run would have posted a reply of the same key, or the evidence, again.
    expect(roots).toHaveLength(gates.length);
    const twice = roots.filter((root) => {
      const thread = h.slack.thread(CHANNELS.production, root.ts);
      const keys = thread.flatMap((m) => {
        const key = m.metadata?.event_payload.key;
        return typeof key === 'string' ? [key] : [];
      });
      return new Set(keys).size !== keys.length || thread.filter((m) => (m.files ?? []).length > 0).length > 1;
    });
    expect(twice.map((m) => m.ts)).toEqual([]);
  }, 120_000);

  it('resume an upgrade on the other replica when the one running a node dies, without doing any node twice', async () => {
    await startTwoReplicas();
    // Once the first control plane's upgrade is accepted, every talosctl call waits until the replica running it is dead:
    // that replica is still in the middle of the node when it dies, however loaded the machine is.
    let release = (): void => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const accepted = () =>
      h.sim.events.some((e) => e.cluster === 'production' && e.kind === 'upgrade-start' && e.node === CONTROL_PLANES[0]);
    h.sim.faults.set('production', { holdCall: () => (accepted() ? released : undefined) });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    await approve(h, await waitForApprovalRequest(h, plan));
    await h.slack.waitFor(() => h.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === CONTROL_PLANES[0]), {
      timeoutMs: 30_000,
      description: 'the upgrade of the first control plane',
    });

    // The replica whose run started last is the one upgrading the node.
    const latestRun = (bot: BotProcess): number => Math.max(0, ...messages(bot, 'operation run started').map((l) => Number(l.time)));
    const [victim, survivor] = latestRun(h.bot) > latestRun(second) ? [h.bot, second] : [second, h.bot];
    const interruptedJob = messages(victim, 'operation run started').at(-1)?.job;
    expect(interruptedJob).toBeDefined();
    await victim.kill();
    release();

    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    for (const node of CONTROL_PLANES) {
      expect([node, h.sim.upgradeCount('production', node), h.sim.node('production', node).talosVersion]).toEqual([node, 1, TARGET]);
    }
    expect(h.sim.maxControlPlanesDownAtOnce('production')).toBe(1);
    // The survivor took the operation over, by whichever comes first: BullMQ handing out the dead replica's
    // job once its lock lapsed, or the reconciler's resume once the run lease lapsed. It observed the node.
    expect(messages(survivor, 'operation run started').map((l) => l.job)).toEqual(
      expect.arrayContaining([expect.stringMatching(new RegExp(`^(${String(interruptedJob)}|${plan.opId}-resume)$`))]),
    );
    // The step's result in the thread says the node was observed after the restart, not asked again.
    expect(
      auditLines(h, plan).filter(
        (l) => /^#\d+ upgraded: /.test(l) && /was observed, not requested again|only the checks after it ran again/.test(l),
      ),
    ).toHaveLength(1);
  });
});

/** The directories of two pods as the shipped Deployment gives them: each its own memory volume, one plan claim for both. */
async function podVolumes(): Promise<{ a: Record<string, string>; b: Record<string, string> }> {
  volumes = await mkdtemp(join(tmpdir(), 'replica-volumes-'));
  const a = replicaPaths(volumes, 'pod-a');
  const b = replicaPaths(volumes, 'pod-b');
  for (const pod of [a, b]) await mkdir(pod.CREDENTIALS_DIR!, { recursive: true, mode: 0o700 });
  return { a, b };
}

/** A staging plan made by the first replica alone, waiting for its Apply: the plan and its file's sha256. */
async function planOnFirstReplica(a: Record<string, string>): Promise<{ plan: Plan; file: string; sha256: string }> {
  h = await startHarness({ env: a });
  await h.sim.terraform.changePatch('staging');
  await h.sim.terraform.commit('Talos patch: sysctl for staging');
  const plan = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
  await waitForRootState(h, plan, /waiting for an approver's Apply/, CHANNELS.staging);
  const file = join(a.PLAN_DIR!, plan.opId, 'tfplan');
  return {
    plan,
    file,
    sha256: createHash('sha256')
      .update(await readFile(file))
      .digest('hex'),
  };
}

/** The second replica takes over: started with its own pod's directories, then the first one stops. */
async function handOverToSecondReplica(b: Record<string, string>): Promise<void> {
  second = await h.secondBot(b);
  await second.start();
  await h.slack.waitForConnections(2);
  await h.bot.stop();
}

function tofuApplies() {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === 'staging' && c.argv[0] === 'apply');
}

async function clickApply(plan: Plan): Promise<void> {
  await h.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: plan.root.ts, actionId: 'talos-op-start' });
}

describe('a kept Terraform plan, on the volumes the manifests give each pod', () => {
  it('planned on one replica and applied by the other: exactly the reviewed file, checked by its hash, then deleted', async () => {
    const { a, b } = await podVolumes();
    const { plan, file, sha256 } = await planOnFirstReplica(a);
    // The manifests share the plan space between pods, and never the credentials.
    expect(b.PLAN_DIR).toBe(a.PLAN_DIR);
    expect(b.CREDENTIALS_DIR).not.toBe(a.CREDENTIALS_DIR);
    expect(a.PLAN_DIR!.startsWith(`${a.CREDENTIALS_DIR!}/`)).toBe(false);
    await handOverToSecondReplica(b);

    await clickApply(plan);
    const done = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await h.slack.waitFor(() => !existsSync(join(a.PLAN_DIR!, plan.opId)) || undefined, { description: 'the plan directory deleted' });
    await waitForSettled(h);

    expect(done.text).toContain('completed');
    expect(messages(second, 'operation run started').length).toBeGreaterThan(0);
    expect(tofuApplies().map((c) => c.argv.at(-1))).toEqual([file]);
    const record = h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`);
    expect(record?.content).toContain(`sha256 ${sha256}`);
    expect(await readdir(a.PLAN_DIR!)).toEqual([]);
  }, 150_000);

  it('planned on one replica, a changed file on the Apply of the other: stops naming the hash, applies nothing, deletes the file', async () => {
    const { a, b } = await podVolumes();
    const { plan, file } = await planOnFirstReplica(a);
    await handOverToSecondReplica(b);
    await appendFile(file, 'x');

    await clickApply(plan);
    const stopped = await waitForRootState(h, plan, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    expect(stopped.text).toContain('stopped');
    expect(auditLines(h, plan, CHANNELS.staging).some((l) => l.includes('the plan file on disk is not the reviewed one'))).toBe(true);
    expect(tofuApplies()).toEqual([]);
    expect(existsSync(file)).toBe(false);
  }, 150_000);

  it('deletes at start the plans of unknown operations, and in the retention sweep the plan of an operation that ended', async () => {
    const { a, b } = await podVolumes();
    const { plan, file } = await planOnFirstReplica(a);
    const unknown = join(a.PLAN_DIR!, 'op-that-redis-never-knew');
    await mkdir(unknown, { mode: 0o700 });
    await writeFile(join(unknown, 'tfplan'), 'state secrets', { mode: 0o600 });

    // A replica starting sweeps: the unknown operation's plan goes, the plan waiting for its Apply stays.
    await handOverToSecondReplica(b);
    expect(existsSync(unknown)).toBe(false);
    expect(existsSync(file)).toBe(true);

    // The operation ended two hours ago without its `ended` job (lost to a crash), then the hourly retention sweep runs.
    const redis = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
    const ops = new Queue('talos-ops', { connection: redis });
    try {
      const key = `talos:op:${plan.opId}`;
      const stored = JSON.parse((await redis.get(key))!) as { state: string };
      const endedAt = new Date(Date.now() - 2 * 60 * 60_000).toISOString();
      await redis.set(key, JSON.stringify({ ...stored, state: 'cancelled', endedAt }), 'KEEPTTL');
      await ops.add('retention-sweep', {});
      await h.slack.waitFor(() => !existsSync(join(a.PLAN_DIR!, plan.opId)) || undefined, {
        timeoutMs: 30_000,
        description: "the ended operation's plan deleted by the retention sweep",
      });
    } finally {
      await ops.close();
      redis.disconnect();
    }
    expect(await readdir(a.PLAN_DIR!)).toEqual([]);
  }, 150_000);

  it('refuses a plan that fills the plan space, keeps nothing of it, and the credentials volume still serves a health gate', async () => {
    const { a } = await podVolumes();
    // About 100 bytes: any kept plan pushes the space over its bound.
    h = await startHarness({ env: { ...a, PLAN_SPACE_MB: '0.0001' } });
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('Talos patch: sysctl for staging');

    const plan = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    const refused = await waitForRootState(h, plan, /refused/, CHANNELS.staging);
    const ack = await h.command('health', { channel: CHANNELS.staging });
    const gate = await h.slack.waitFor(
      () => h.slack.channelMessages(CHANNELS.staging).find((m) => /Health gate (passed|failed|could not run)/.test(m.text)),
      { timeoutMs: 60_000, description: 'the health gate on staging' },
    );
    await waitForSettled(h);

    expect(JSON.stringify(refused.blocks)).toContain('the plan space is full');
    expect(await readdir(a.PLAN_DIR!)).toEqual([]);
    expect(tofuApplies()).toEqual([]);
    expect(ack).toContain('Running the health gate on *staging*');
    expect(gate.text).toContain('Health gate passed');
    expect(h.slack.thread(CHANNELS.staging, gate.ts).length).toBeGreaterThan(0);
  }, 150_000);
});
