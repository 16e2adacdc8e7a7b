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
import type { Approval, Operation, Step } from '../src/ops/operation.ts';
import { measureWaits } from '../src/metrics/wait-clock.ts';
import { OperationJobData } from '../src/queue/job-schemas.ts';
import { checkEtcdQuorum, observeTalosVersions } from '../src/talos/observe.ts';
import type { Talosctl } from '../src/talos/talosctl.ts';
import { checkpoint, clusterNamed, StepFailure, type OpsJobDeps } from './job-context.ts';
import { endpointsAvoiding, upgradeNode } from './node-upgrade.ts';

const nonce = (): string => crypto.randomUUID().replace(/-/g, '').slice(0, 12);

interface RunContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  log: Logger;
  signal?: AbortSignal;
}

const withStep = (o: Operation, stepId: string, patch: Partial<Step>): Operation => ({ ...o, steps: o.steps.map((s) => (s.id === stepId ? { ...s, ...patch } : s)) });

async function patchStep(deps: OpsJobDeps, opId: string, stepId: string, patch: Partial<Step>): Promise<Operation> {
  const { op } = await deps.store.update(opId, (o) => withStep(o, stepId, patch));
  return op;
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

/** Asks for a person's approval before a control-plane node, with the current etcd state in the question. */
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
  const { op: waiting } = await deps.store.update(op.id, (o) => ({ ...o, state: 'awaiting-approval', approvals: [...o.approvals, approval] }));
  const message = approvalRequestMessage(waiting, approval, { step, version: op.target.version ?? '?', etcdSummary: etcd.summary, etcdEvidence: etcd.evidence });
  const { ts } = await deps.chat.reply(op.channel, op.rootTs!, message);
  const { op: posted } = await deps.store.update(op.id, (o) => ({ ...o, approvals: o.approvals.map((a) => (a.nonce === approval.nonce ? { ...a, messageTs: ts } : a)) }));
  await deps.opsQueue.add('approval-expiry', { opId: op.id, nonce: approval.nonce }, { jobId: `${op.id}-expire-${approval.nonce}`, delay: deps.timeouts.approvalTtlMs, removeOnComplete: true });
  await refreshRoot(deps, posted);
  ctx.log.info({ node: step.node }, 'approval requested');
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
        else {
          // A crash between recording and posting the request: drop the unposted one, ask again.
          await deps.store.update(opId, (o) => ({ ...o, approvals: o.approvals.filter((a) => a.nonce !== approval.nonce) }));
          await requestApproval(ctx, (await deps.store.get(opId))!, step);
        }
        return;
      }
      if (approval.state !== 'approved') return;
    }

    const startedAt = step.startedAt ?? deps.now().toISOString();
    const start = (o: Operation): Operation => ({ ...withStep(o, step.id, { status: 'running', startedAt }), state: 'running' });
    // A step's start and its entry are one write: a run that ends in between cannot lose the entry.
    const current =
      step.startedAt === undefined
        ? await deps.audit.record(opId, { actor: 'bot', event: `step started: ${stepLabel(step)}` }, undefined, start)
        : (await deps.store.update(opId, start)).op;
    await refreshRoot(deps, current);
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
        const done = await deps.audit.record(opId, { actor: 'bot', event: 'etcd snapshot taken', detail }, undefined, (o) => withStep(o, step.id, { status: 'done', endedAt, detail }));
        await refreshRoot(deps, done);
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
        markIssued: async (fromVersion) => {
          await patchStep(deps, opId, step.id, { issuedAt: deps.now().toISOString(), fromVersion });
        },
        progress: async (detail) => {
          await refreshRoot(deps, await patchStep(deps, opId, step.id, { detail }));
        },
      }));
      const outcome = measured.result;
      log.info(
        { step: step.id, wallMs: Math.round(measured.wallMs), waitMs: Math.round(measured.waitMs), overheadMs: Math.round(measured.wallMs - measured.waitMs), outcome: outcome.kind },
        'node step finished',
      );
      const endedAt = deps.now().toISOString();
      const finished = await deps.audit.record(opId, { actor: 'bot', event: `${outcome.kind === 'skipped' ? 'skipped' : 'upgraded'}: ${stepLabel(step)}`, detail: outcome.detail }, undefined, (o) =>
        withStep(o, step.id, { status: outcome.kind === 'skipped' ? 'skipped' : 'done', endedAt, detail: outcome.detail }),
      );
      await refreshRoot(deps, finished);
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
