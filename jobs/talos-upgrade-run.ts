import type { Job } from 'bullmq';
import { errorText } from '../src/chat/error-text.ts';
import { approvalRequestMessage, failureMessage, operationRootMessage, stepLabel, terraformFollowUp } from '../src/chat/upgrade-messages.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import { allNodes, type ClusterConfig } from '../src/config/inventory.ts';
import { runHealthGate } from '../src/health/health-gate.ts';
import type { Logger } from '../src/log/logger.ts';
import { takeEtcdSnapshot } from '../src/ops/etcd-snapshot.ts';
import { gitHead } from '../src/ops/git-head.ts';
import { maintenanceRecordMarkdown } from '../src/ops/maintenance-record.ts';
import { withStep, type Approval, type Operation, type Step } from '../src/ops/operation.ts';
import { measureWaits } from '../src/metrics/wait-clock.ts';
import { OperationJobData } from '../src/queue/job-schemas.ts';
import { checkEtcdQuorum, observeTalosVersions } from '../src/talos/observe.ts';
import type { Talosctl } from '../src/talos/talosctl.ts';
import { checkpoint, clusterNamed, StepFailure, type OpsJobDeps } from './job-context.ts';
import { endpointsAvoiding, upgradeNode } from './node-upgrade.ts';
import { patchStep } from './operation-walk.ts';

const nonce = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

interface RunContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  log: Logger;
  signal?: AbortSignal;
}

/**
 * The root message is a view of the stored operation, and the next refresh repaints it: a
 * failed edit (Slack away longer than the client retries) is logged, never a node's failure.
 */
async function refreshRoot(deps: OpsJobDeps, op: Operation): Promise<void> {
  if (op.rootTs === undefined) return;
  await deps.chat.update(op.channel, op.rootTs, operationRootMessage(op)).catch((error: unknown) => {
    deps.logger.warn({ op: op.id, cluster: op.cluster, err: errorText(error) }, 'root message not updated');
  });
}

/** Stops the operation at the first failure: no further node, the lock kept, a rollback offered for that node only. */
async function stopAt(ctx: RunContext, opId: string, step: Step, failure: StepFailure): Promise<void> {
  const { deps } = ctx;
  const now = deps.now().toISOString();
  // The stop and its entry are one write; the evidence goes into the thread before the root shows the end.
  const op = await deps.audit.record(
    opId,
    { actor: 'bot', event: 'stopped', detail: failure.message },
    (o) => failureMessage(o, o.steps.find((s) => s.id === step.id), failure.message, failure.evidence),
    (o) => ({
      ...withStep(o, step.id, { status: 'failed', endedAt: now, detail: failure.message }),
      state: 'failed',
      reason: failure.message,
      endedAt: now,
      failure: step.node && step.issuedAt !== undefined ? { step: step.id, node: step.node, nonce: nonce(), rollback: 'offered' } : undefined,
    }),
  );
  ctx.log.warn({ node: step.node, reason: failure.message }, 'operation stopped at the first failure');
  await refreshRoot(deps, op);
}

/**
 * Asks for a person's approval before a control-plane node, with the current etcd state in the
 * question. The request is an audit entry: its reply carries the entries held since the last
 * one (the previous node's result), so each control plane costs the thread one message.
 */
async function requestApproval(ctx: RunContext, op: Operation, step: Step): Promise<void> {
  const { deps } = ctx;
  const etcd = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, ctx.signal, endpointsAvoiding(ctx.cluster, step.node!));
  const requestedAt = deps.now();
  const approval: Approval = {
    step: step.id,
    nonce: nonce(),
    messageTs: '',
    requestedAt: requestedAt.toISOString(),
    expiresAt: new Date(requestedAt.getTime() + deps.timeouts.approvalTtlMs).toISOString(),
    state: 'pending',
  };
  await deps.audit.record(
    op.id,
    { actor: 'bot', event: `approval requested: ${step.node}`, detail: etcd.summary },
    (o) => approvalRequestMessage(o, approval, { step, version: op.target.version ?? '?', etcdSummary: etcd.summary, etcdEvidence: etcd.evidence }),
    (o) => ({ ...o, state: 'awaiting-approval', approvals: [...o.approvals, { ...approval, seq: o.audit.length + 1 }] }),
  );
  await publishApproval(ctx, op.id, approval.nonce);
}

/**
 * Waits on a click only once the request is in Slack: its message is the reply that carries its
 * entry. Until then the run ends with an error and is run again (the reconciler looks for these).
 */
async function publishApproval(ctx: RunContext, opId: string, approvalNonce: string): Promise<void> {
  const { deps } = ctx;
  const requestOf = (o: Operation | undefined) => {
    const approval = o?.approvals.find((a) => a.nonce === approvalNonce);
    return { approval, ts: o?.audit.find((e) => e.seq === approval?.seq)?.ts };
  };
  const stored = await deps.store.get(opId);
  let { approval, ts } = requestOf(stored);
  if (ts === undefined) {
    await deps.audit.flush(opId);
    ({ approval, ts } = requestOf(await deps.store.get(opId)));
  }
  if (approval === undefined || ts === undefined) throw new Error('the approval request is not in Slack yet; the run is tried again');
  const posted = ts;
  await deps.store.update(opId, (o) => ({ ...o, approvals: o.approvals.map((a) => (a.nonce === approvalNonce ? { ...a, messageTs: posted } : a)) }));
  await deps.opsQueue.add('approval-expiry', { opId, nonce: approvalNonce }, { jobId: `${opId}-expire-${approvalNonce}`, delay: Math.max(0, Date.parse(approval.expiresAt) - deps.now().getTime()), removeOnComplete: true });
  ctx.log.info({ node: stored?.steps.find((s) => s.id === approval.step)?.node }, 'approval requested');
}

async function finish(ctx: RunContext, opId: string, step: Step): Promise<void> {
  const { deps, cluster } = ctx;
  const op0 = (await deps.store.get(opId))!;
  const target = op0.target.version!;
  const versions = await observeTalosVersions(ctx.talosctl, allNodes(cluster), ctx.signal);
  const off = [...versions].filter(([, v]) => !v.reachable || v.version !== target).map(([n, v]) => `${n}: ${v.reachable ? v.version : v.error}`);
  if (off.length > 0) throw new StepFailure(`not every node runs ${target}`, off);
  const gate = await runHealthGate(cluster, { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal: ctx.signal });
  if (!gate.passed) throw new StepFailure('the final health gate failed', gate.stopReasons);
  const commit = await gitHead(cluster.terraformDir);
  const endedAt = deps.now().toISOString();
  const validation = `every node runs ${target}; health gate passed (${gate.checks.length} checks)`;
  const op = await deps.audit.record(
    opId,
    { actor: 'bot', event: 'completed', detail: validation },
    (o) => terraformFollowUp(o, o.target.schematic ?? '<schematic>', cluster.installerPlatform),
    (o) => ({ ...withStep(o, step.id, { status: 'done', endedAt, detail: `all ${versions.size} nodes on ${target}; health gate passed` }), state: 'completed', endedAt, commit, validation }),
  );
  await deps.lock.release(cluster.name, opId);
  // The record can be fetched again with /talos record: a failed upload must not turn a finished upgrade into a failure.
  await deps.chat
    .upload(op.channel, op.rootTs!, { filename: `${opId}-maintenance-record.md`, title: `Maintenance record ${opId}`, content: maintenanceRecordMarkdown(op) })
    .catch((error: unknown) => ctx.log.warn({ err: errorText(error) }, 'maintenance record not attached'));
  await refreshRoot(deps, op);
}

async function runSteps(ctx: RunContext, opId: string): Promise<void> {
  const { deps } = ctx;
  for (;;) {
    const op = await deps.store.get(opId);
    if (!op || !['running', 'awaiting-approval'].includes(op.state)) return;
    if (op.cancelRequestedBy !== undefined) {
      const endedAt = deps.now().toISOString();
      const cancelled = await deps.audit.record(opId, { actor: op.cancelRequestedBy, event: 'cancelled between steps', detail: 'no node is mid-upgrade' }, undefined, (o) => ({
        ...o,
        state: 'cancelled',
        endedAt,
        reason: `cancelled by <@${o.cancelRequestedBy}> between steps`,
      }));
      await deps.lock.release(ctx.cluster.name, opId);
      await refreshRoot(deps, cancelled);
      return;
    }
    const step = op.steps.find((s) => s.status === 'pending' || s.status === 'running');
    if (!step) return;
    checkpoint(deps);

    if (step.kind === 'upgrade-control-plane') {
      const approval = op.approvals.filter((a) => a.step === step.id).at(-1);
      if (approval === undefined || approval.state === 'expired' || (approval.state === 'pending' && approval.messageTs === '')) {
        // An expired request is asked again only after an approver's word moved the operation back to running.
        if (approval?.state === 'expired' && op.state !== 'running') return;
        if (approval === undefined || approval.state === 'expired') await requestApproval(ctx, op, step);
        // A crash or a Slack outage between recording the request and posting it: post it now, the same request.
        else await publishApproval(ctx, opId, approval.nonce);
        return;
      }
      if (approval.state !== 'approved') return;
    }

    const startedAt = step.startedAt ?? deps.now().toISOString();
    const start = (o: Operation): Operation => ({ ...withStep(o, step.id, { status: 'running', startedAt }), state: 'running' });
    // A step's start and its entry are one write: a run that ends in between cannot lose the entry.
    // The edited approval request already says a control plane is starting, and the final check
    // ends in its result: their start waits for the next reply. Other steps say so in the thread.
    const startEntry = { actor: 'bot', event: `step started: ${stepLabel(step)}` };
    const current =
      step.startedAt !== undefined
        ? (await deps.store.update(opId, start)).op
        : step.kind === 'upgrade-control-plane' || step.kind === 'verify'
          ? await deps.audit.note(opId, startEntry, start)
          : await deps.audit.record(opId, startEntry, undefined, start);
    const log = ctx.log.child({ node: step.node });
    try {
      if (step.kind === 'snapshot') {
        if (current.snapshot === undefined) {
          const gate = await runHealthGate(ctx.cluster, { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal: ctx.signal });
          if (!gate.passed) throw new StepFailure('the health gate before starting failed', gate.stopReasons);
          const snapshot = await takeEtcdSnapshot(ctx.talosctl, ctx.cluster, { signal: ctx.signal, timeoutMs: deps.timeouts.stepMs, now: deps.now() });
          await deps.store.update(opId, (o) => ({ ...o, snapshot }));
        }
        const snap = (await deps.store.get(opId))!.snapshot!;
        const detail = `${snap.id} (${snap.bytes} bytes, sha256 ${snap.sha256.slice(0, 16)}…) in ${ctx.cluster.snapshotDir}`;
        const endedAt = deps.now().toISOString();
        // Results wait for the next step's message: the thread gets one reply per step.
        await deps.audit.note(opId, { actor: 'bot', event: 'etcd snapshot taken', detail }, (o) => withStep(o, step.id, { status: 'done', endedAt, detail }));
        continue;
      }
      if (step.kind === 'verify') {
        await finish(ctx, opId, step);
        return;
      }
      const measured = await measureWaits(() => upgradeNode({
        deps,
        cluster: ctx.cluster,
        session: ctx.session,
        talosctl: ctx.talosctl,
        step: current.steps.find((s) => s.id === step.id)!,
        target: current.target.version!,
        log,
        signal: ctx.signal,
        markIssued: async (fromVersion, bootId) => {
          await patchStep(deps, opId, step.id, { issuedAt: deps.now().toISOString(), fromVersion, issuedBootId: bootId });
        },
        // Kept for /talos status; the channel hears of the node when its step ends.
        progress: async (detail) => {
          await patchStep(deps, opId, step.id, { detail });
        },
      }));
      const outcome = measured.result;
      log.info(
        { step: step.id, wallMs: Math.round(measured.wallMs), waitMs: Math.round(measured.waitMs), overheadMs: Math.round(measured.wallMs - measured.waitMs), outcome: outcome.kind },
        'node step finished',
      );
      const endedAt = deps.now().toISOString();
      await deps.audit.note(opId, { actor: 'bot', event: `${outcome.kind === 'skipped' ? 'skipped' : 'upgraded'}: ${stepLabel(step)}`, detail: outcome.detail }, (o) =>
        withStep(o, step.id, { status: outcome.kind === 'skipped' ? 'skipped' : 'done', endedAt, detail: outcome.detail }),
      );
    } catch (error) {
      if (error instanceof StepFailure) {
        await stopAt(ctx, opId, (await deps.store.get(opId))!.steps.find((s) => s.id === step.id)!, error);
        return;
      }
      if (ctx.signal?.aborted) throw error;
      // Anything else (a parse error, an unexpected answer) also stops: never guess about a node.
      await stopAt(ctx, opId, (await deps.store.get(opId))!.steps.find((s) => s.id === step.id)!, new StepFailure(errorText(error)));
      return;
    }
  }
}

/**
 * The rolling Talos upgrade, as a resumable walk over the stored plan. Each run picks
 * up at the first unfinished step; it ends when a control plane needs an approval
 * (the Approve button enqueues the next run), at the first failure, or when done.
 */
export function createTalosUpgradeRunJob(deps: OpsJobDeps) {
  return async (job: Job, jobSignal?: AbortSignal): Promise<void> => {
    const { opId } = OperationJobData.parse(job.data);
    // A second run of the operation (a job run again after its lock lapsed, the next click) waits here, then walks from the stored state.
    await deps.runLease.hold(opId, async (signal) => {
      const op = await deps.store.get(opId);
      if (!op || !['running', 'awaiting-approval'].includes(op.state)) return;
      const cluster = clusterNamed(deps.inventory, op.cluster);
      const log = deps.logger.child({ op: opId, cluster: cluster.name });
      log.info({ job: job.id }, 'operation run started');
      await deps.access.withSession(cluster, signal, async (session) => {
        const talosctl = await session.talosctl(op.target.fromVersion);
        await runSteps({ deps, cluster, session, talosctl, log, signal }, opId);
      });
    }, jobSignal);
  };
}
