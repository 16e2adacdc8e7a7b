import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  clickStart,
  opIdOf,
  requestUpgrade,
  waitForApprovalRequest,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';
import { storedOperation } from '../support/stored-operation.ts';

let h: Harness | undefined;

afterEach(async () => {
  await h?.stop();
  h = undefined;
});

function failureReply(harness: Harness, rootTs: string): string {
  const failure = harness.slack.thread(CHANNELS.production, rootTs).find((m) => m.text.includes('❌ Stopped'));
  return `${failure?.text ?? ''}${JSON.stringify(failure?.blocks ?? [])}`;
}

/** A workload with one pod on `hostname` and a budget that lets none go: only the drain of that node would block. */
function guardOn(harness: Harness, hostname: string): void {
  const cluster = harness.sim.cluster('production');
  cluster.kube.pods.push({
    name: 'guard-0',
    namespace: 'apps',
    nodeName: hostname,
    labels: { app: 'guard' },
    owner: { kind: 'StatefulSet', name: 'guard' },
    image: 'registry.k8s.io/pause:3.10',
    createdAt: Date.now(),
  });
  cluster.kube.pdbs.push({ name: 'guard', namespace: 'apps', minAvailable: 1, selector: { app: 'guard' } });
  cluster.kube.resourceVersion++;
}

/** Approves each node's request in turn; `before` runs once, just before the request whose text matches it is approved. */
async function approveEach(harness: Harness, plan: Plan, before: { match: RegExp; run: () => void }): Promise<Message> {
  const seen = new Set<string>();
  for (;;) {
    const outcome = await harness.slack.waitFor(
      () => {
        const root = harness.slack.message(CHANNELS.production, plan.root.ts);
        if (root && /completed|stopped at the first failure|cancelled/.test(root.text)) return { done: root };
        const request = harness.slack
          .thread(CHANNELS.production, plan.root.ts)
          .find((m) => !seen.has(m.ts) && JSON.stringify(m.blocks ?? []).includes('"action_id":"talos-step-approve"'));
        return request ? { request } : undefined;
      },
      { timeoutMs: 60_000, description: 'an approval request or the end of the operation' },
    );
    if ('done' in outcome && outcome.done) return outcome.done;
    if ('request' in outcome && outcome.request) {
      seen.add(outcome.request.ts);
      if (before.match.test(outcome.request.text)) before.run();
      await approve(harness, outcome.request, USERS.carol);
    }
  }
}

describe('each drain is judged just before it', () => {
  it("stops a Talos upgrade before the next node when that node's budget forbids its drain: nothing is issued to it", async () => {
    h = await startHarness();
    const harness = h;
    const plan = await requestUpgrade(harness, 'upgrade talos v1.12.11');
    await clickStart(harness, plan);

    // The budget appears once the first node is done: the plan's gate saw none, and the gate after the first node judges no drain.
    const done = await approveEach(harness, plan, {
      match: /^#\d+ approval requested: 10\.0\.30\.12$/m,
      run: () => guardOn(harness, 'talos-prd-cp-2'),
    });

    expect(done.text).toContain('stopped at the first failure');
    const failure = failureReply(harness, plan.root.ts);
    expect(failure).toContain('the drain of 10.0.30.12 would block, so 10.0.30.12 was not touched');
    expect(failure).toContain(
      'PDB apps/guard: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1) and apps/guard-0 runs on talos-prd-cp-2',
    );
    expect(harness.sim.upgradeCount('production', '10.0.30.11')).toBe(1);
    expect(harness.sim.upgradeCount('production', '10.0.30.12')).toBe(0);
    const upgradeCalls = harness.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv[0] === 'upgrade');
    expect(upgradeCalls.some((c) => c.argv[c.argv.indexOf('--nodes') + 1] === '10.0.30.12')).toBe(false);
    const op = await storedOperation(harness, plan.opId);
    const step = op.steps.find((s) => s.node === '10.0.30.12')!;
    expect([step.status, step.issuedAt, step.fromVersion]).toEqual(['failed', undefined, undefined]);
    expect(op.steps.find((s) => s.node === '10.0.30.11')?.status).toBe('done');
  });
});

/** The state a failed Talos upgrade leaves: the node runs the new image, the old one is its fallback. */
function upgradedWithFallback(harness: Harness, node: string, running: string, fallback: string): void {
  const n = harness.sim.node('production', node);
  n.fallbackVersion = fallback;
  n.fallbackSchematic = n.schematic;
  n.talosVersion = running;
}

async function requestNodeOperation(harness: Harness, text: string, title: RegExp): Promise<Plan> {
  const ack = await harness.command(text, { user: USERS.alice });
  const opId = opIdOf(ack);
  const root = await harness.slack.waitFor(
    () =>
      harness.slack
        .channelMessages(CHANNELS.production)
        .find((m) => m.text.includes(opId) && title.test(m.text) && !/preflight/i.test(m.text)),
    { timeoutMs: 30_000, description: `the plan of ${opId}` },
  );
  return { opId, root, ack };
}

describe('a rollback of a Ready node', () => {
  it('cordons the node and evicts its pods through the eviction API before the rollback, and uncordons it once it is back', async () => {
    h = await startHarness();
    const harness = h;
    upgradedWithFallback(harness, '10.0.30.12', 'v1.12.11', 'v1.11.5');
    const workloads = harness.sim
      .cluster('production')
      .kube.pods.filter((p) => p.nodeName === 'talos-prd-cp-2' && !p.mirror && !['DaemonSet', 'Node', 'None'].includes(p.owner.kind));
    expect(workloads.length).toBeGreaterThan(0);
    const plan = await requestNodeOperation(harness, 'rollback 10.0.30.12', /Rollback of/);
    const request = await waitForApprovalRequest(harness, plan);
    const asked = `${request.text}${JSON.stringify(request.blocks)}`;
    expect(asked).toContain('The bot first cordons talos-prd-cp-2 and evicts its pods through the eviction API');
    expect(asked).not.toContain('its workloads restart elsewhere');

    await approve(harness, request, USERS.carol);
    const done = await waitForRootState(harness, plan, /completed|stopped/);

    expect(done.text).toContain('completed');
    const events = harness.sim.events.filter((e) => e.node === '10.0.30.12' || e.detail?.startsWith('talos-prd-cp-2') === true);
    const kinds = events.map((e) => e.kind);
    const rollbackAt = kinds.indexOf('rollback');
    expect(kinds.indexOf('cordoned')).toBeGreaterThan(-1);
    expect(kinds.indexOf('cordoned')).toBeLessThan(rollbackAt);
    const evicted = events.filter((e) => e.kind === 'pod-evicted').map((e) => e.detail);
    expect(evicted.length).toBeGreaterThanOrEqual(workloads.length);
    expect(kinds.lastIndexOf('pod-evicted')).toBeLessThan(rollbackAt);
    // DaemonSet and static pods are never asked to go.
    const kept = harness.sim
      .cluster('production')
      .kube.pods.filter((p) => p.mirror === true || p.owner.kind === 'DaemonSet')
      .map((p) => `${p.namespace}/${p.name}`);
    expect(evicted.filter((id) => kept.includes(id!))).toEqual([]);
    expect(kinds.indexOf('uncordoned')).toBeGreaterThan(rollbackAt);
    expect(harness.sim.node('production', '10.0.30.12').cordoned).toBe(false);
    // Longhorn creates the evicted instance manager again once the node is schedulable.
    expect(
      harness.sim.cluster('production').kube.pods.some((p) => p.owner.kind === 'InstanceManager' && p.nodeName === 'talos-prd-cp-2'),
    ).toBe(true);
    const thread = harness.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text);
    expect(thread.some((t) => /cordoned talos-prd-cp-2 and evicted \d+ pods? through the eviction API/.test(t))).toBe(true);
  });
});

describe('a rollback of a node that is not Ready', () => {
  it('says in the approval that it reboots the node without a drain, and neither cordons nor evicts', async () => {
    h = await startHarness();
    const harness = h;
    upgradedWithFallback(harness, '10.0.30.12', 'v1.12.11', 'v1.11.5');
    harness.sim.faults.set('production', { nodeNotReady: ['10.0.30.12'] });
    const plan = await requestNodeOperation(harness, 'rollback 10.0.30.12', /Rollback of/);
    const request = await waitForApprovalRequest(harness, plan);
    const asked = `${request.text}${JSON.stringify(request.blocks)}`;
    expect(asked).toContain('10.0.30.12 is not Ready in Kubernetes, so the node cannot be drained');
    expect(asked).not.toContain('cordons');

    await approve(harness, request, USERS.carol);
    await harness.slack.waitFor(() => harness.sim.events.find((e) => e.kind === 'rollback' && e.node === '10.0.30.12'), {
      timeoutMs: 30_000,
      description: 'the rollback',
    });
    harness.sim.faults.set('production', { nodeNotReady: [] });
    const done = await waitForRootState(harness, plan, /completed|stopped/);

    expect(done.text).toContain('completed');
    expect(harness.sim.events.filter((e) => ['cordoned', 'pod-evicted', 'eviction-refused'].includes(e.kind))).toEqual([]);
    const thread = harness.slack.thread(CHANNELS.production, plan.root.ts).map((m) => m.text);
    expect(thread.some((t) => t.includes('10.0.30.12 is not Ready in Kubernetes: rolled back without a drain'))).toBe(true);
  });
});

describe("a removal's final check", () => {
  it('fails on a degraded Longhorn volume, naming it', async () => {
    h = await startHarness();
    const harness = h;
    // A replica on another node failed: the removed node is not its last healthy copy, but the volume stays degraded.
    harness.sim.faults.set('production', { longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1'] } });
    const plan = await requestNodeOperation(harness, 'remove 10.0.30.13', /Removal of/);
    await approve(harness, await waitForApprovalRequest(harness, plan), USERS.carol);
    const done = await waitForRootState(harness, plan, /completed|stopped at the first failure/, CHANNELS.production, 60_000);

    expect(done.text).toContain('stopped at the first failure');
    const failure = failureReply(harness, plan.root.ts);
    expect(failure).toContain('the final check without 10.0.30.13 failed');
    expect(failure).toMatch(/Longhorn apps\/postgres-1 \(volume pvc-[^ ]+\): degraded/);
    expect(harness.sim.node('production', '10.0.30.13').k8sRegistered).toBe(false);
  });
});
