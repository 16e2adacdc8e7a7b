import { errorText } from '../../../src/chat/error-text.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { observeTalosVersions } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { clusterWait } from './cluster-wait.ts';
import { endpointsAvoiding } from './node-endpoints.ts';
import { roleOf } from './node-target.ts';
import { quorumNow } from './removal-quorum.ts';

/** Waits until the remaining members no longer list the node: a graceful reset leaves etcd before it wipes. */
async function confirmLeftEtcd(ctx: WalkContext, node: string): Promise<void> {
  let evidence: string[] = [];
  const left = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const membership = await observeEtcdMembership(
      ctx.talosctl,
      ctx.cluster.controlPlanes.filter((cp) => cp !== node),
      node,
      probeSignal(ctx),
    );
    evidence = membership.evidence;
    return membership.isMember(node) === false
      ? { done: true, value: undefined }
      : { done: false, pending: `${node} is still an etcd member` };
  });
  if (!left.ok) {
    throw new StepFailure(
      `${node} is still an etcd member after its reset: remove the member from another control plane (talosctl etcd remove-member) before anything else`,
      evidence,
    );
  }
}

/** A reset requested before a restart: the node stops answering once its reset is through. */
async function waitUntilGone(ctx: WalkContext, node: string, endpoints: string[]): Promise<void> {
  const gone = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const seen = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    return seen?.reachable !== true ? { done: true, value: undefined } : { done: false, pending: `${node} runs ${seen.version}` };
  });
  if (!gone.ok) {
    throw new StepFailure(
      `${node} still answers although its reset was requested before a restart: check the node, then cancel and run /talos remove again`,
      [gone.pending],
    );
  }
}

/**
 * The graceful reset: drain, leave etcd, wipe, power off. Requested once: a resumed job
 * watches the node go instead of asking again. A replacement of a retired node runs it too.
 */
export async function reset(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const isControlPlane = roleOf(ctx.cluster, node) === 'control plane';
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  let detail = `drained${isControlPlane ? ', left etcd' : ''}, wiped and powered off`;
  if (step.issuedAt === undefined) {
    const before = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    if (before?.reachable !== true) {
      throw new StepFailure(
        `${node} does not answer talosctl, so it cannot be reset gracefully; for a failed node follow the node replacement runbook`,
        [before?.error ?? 'no answer'],
      );
    }
    // Quorum and the gate as they are when the approval was given, not as the plan saw them.
    const quorum = await quorumNow(ctx, node);
    if (!quorum.ok) throw new StepFailure(`etcd quorum: ${quorum.summary}`, quorum.evidence);
    // Nothing has changed yet: what already failed before the operation is named, not a stop.
    const gate = await walkGate(ctx, ctx.cluster, { drainNodes: [node], baseline: { baseline: op.baseline, nodes: [] } });
    if (!gate.passed) throw new StepFailure(`the health gate failed before the reset of ${node}; nothing was reset`, gate.stopReasons);
    detail = `checked when approved: etcd ${quorum.summary}; health gate passed (${gate.checks.length} checks${alreadyFailingNote(gate)}); then ${detail}`;
    await ctx.record({ step: { id: step.id, issuedAt: ctx.deps.now().toISOString() } });
    const lines: string[] = [];
    try {
      await ctx.talosctl.run(['reset', '--graceful', '--reboot=false'], [node], {
        signal: ctx.signal,
        endpoints,
        timeoutMs: ctx.deps.timeouts.stepMs,
        onStderrLine: (line) => {
          lines.push(line);
          if (lines.length > 30) lines.shift();
        },
      });
    } catch (error) {
      throw new StepFailure(`talosctl reset of ${node} failed: ${errorText(error)}`, lines.slice(-15));
    }
  } else {
    await waitUntilGone(ctx, node, endpoints);
    detail = `reset was requested before a restart; ${detail}`;
  }
  if (isControlPlane) await confirmLeftEtcd(ctx, node);
  return { event: `reset ${node}`, detail };
}
