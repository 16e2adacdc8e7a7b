import { z } from 'zod';
import { k8sUpgradeTexts } from './texts.ts';
import { declaredFollowUp } from '../shared/declared-follow-up.ts';
import { withV } from '../../../src/rules/versions.ts';
import semver from 'semver';
import { formatDuration } from '../../../src/chat/blocks.ts';
import { errorText } from '../../../src/chat/error-text.ts';
import { applyRequestMessage } from '../../../src/chat/approval-messages.ts';
import {
  deprecationLines,
  dryRunMessage,
  k8sTerraformFollowUp,
  dryRunSummary,
  INLINE_OUTPUT_LINES,
  removedFindingsReason,
  removedLines,
  upgradeProgressMessage,
  type UpgradeProgress,
} from './messages.ts';
import { allNodes } from '../../../src/config/inventory.ts';
import type { ExecError } from '../../../src/exec/process-runner.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { findStagingRehearsal } from '../../../src/ops/rehearsal.ts';
import { checkKubernetesUpgradePath } from '../../../src/rules/versions.ts';
import { supportTable } from '../../../src/talos/compatibility.ts';
import { findNodeByAddress, kubeNodeView, observeTalosVersions } from '../../../src/talos/observe.ts';
import { parseUpgradeK8sOutput } from '../../../src/talos/parse-upgrade-k8s.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { probeSignals, StepFailure } from '../../engine/job-context.ts';
import type { Playbook, PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import { snapshotStep } from '../shared/snapshot-step.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { startProgressReply } from '../shared/progress-reply.ts';
import { talosctlFor } from '../../engine/talosctl-client.ts';
import { parseKubernetesVersionInput } from '../../../src/rules/versions.ts';

/** At most one edit of the progress message per this many ms. */
const PROGRESS_EDIT_MS = 2000;

const bare = (v: string): string => v.replace(/^v/, '');

/** Lines that mark where upgrade-k8s is: one per component, then the manifests. */
const MILESTONE = /^(?:updating "?[\w.-]+"? to version "[^"]+"|updating manifests|waiting for all manifests to be applied)$/;

/** The first control plane (the preferred one first) that answers talosctl and is Ready in Kubernetes. */
async function healthyControlPlane(ctx: WalkContext, preferred?: string): Promise<string> {
  const kubeNodes = await ctx.session.kube.listNodes(probeSignal(ctx));
  const versions = await observeTalosVersions(ctx.talosctl, ctx.cluster.controlPlanes, probeSignal(ctx));
  const evidence: string[] = [];
  for (const cp of new Set([...(preferred ? [preferred] : []), ...ctx.cluster.controlPlanes])) {
    const v = versions.get(cp);
    const ready = kubeNodeView(findNodeByAddress(kubeNodes, cp), ctx.cluster.hostLabel).ready;
    if (v?.reachable === true && ready) return cp;
    evidence.push(
      `${cp}: talosctl ${v?.reachable === true ? v.version : (v?.error ?? 'no answer')}; Kubernetes ${ready ? 'Ready' : 'not Ready'}`,
    );
  }
  throw new StepFailure('no control plane is healthy (answers talosctl and is Ready); run /talos health', evidence);
}

function outputLines(stdout: string, stderr: string): string[] {
  return `${stdout}${stderr}`.split('\n').filter((l, i, all) => l !== '' || i < all.length - 1);
}

/** A failed upgrade-k8s: its own error lines first, then the end of its output. */
function commandFailure(what: string, version: string, error: unknown): StepFailure {
  const result = (error as ExecError).result;
  if (result === undefined) return new StepFailure(`${what} failed: ${errorText(error)}`);
  let report: ReturnType<typeof parseUpgradeK8sOutput> | undefined;
  try {
    report = parseUpgradeK8sOutput(result.stdout, result.stderr);
  } catch {
    // Output it does not recognise: the raw lines below are the evidence.
  }
  // go-kubernetes upgrade/checks.go: removed APIs or flags fail the run, a dry run included, with tables as the error.
  const removed = report === undefined ? undefined : removedFindingsReason(what, version, report);
  if (removed !== undefined && report !== undefined) return new StepFailure(removed, removedLines(report));
  const errors = report?.errors ?? [];
  const reason = errors.length > 0 ? errors.join('; ') : errorText(error);
  return new StepFailure(`${what} failed: ${reason}`, outputLines(result.stdout, result.stderr).slice(-15));
}

async function dryRun(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const version = op.target.version!;
  const node = await healthyControlPlane(ctx);
  await ctx.record({ step: { id: step.id, node } });
  let result;
  try {
    result = await ctx.talosctl.run(['upgrade-k8s', '--to', version, '--dry-run'], [node], {
      signal: ctx.signal,
      timeoutMs: deps.timeouts.stepMs,
    });
  } catch (error) {
    throw commandFailure('the dry run of talosctl upgrade-k8s', version, error);
  }
  const report = parseUpgradeK8sOutput(result.stdout, result.stderr);
  const lines = outputLines(result.stdout, result.stderr);
  let file: string | undefined;
  if (lines.length > INLINE_OUTPUT_LINES) {
    file = `${op.id}-upgrade-k8s-dry-run.txt`;
    await deps.chat.upload(op.channel, op.rootTs, {
      filename: file,
      title: `talosctl upgrade-k8s --to ${version} --dry-run (${op.id})`,
      content: lines.join('\n'),
    });
  }
  const warnings = deprecationLines(report);
  if (warnings.length > 0) {
    // Kept in the plan too, so the warnings stay in sight while the Apply request waits.
    const note = `Dry run warned about deprecated APIs: ${warnings.join('; ')}`;
    await ctx.record((o) => (o.notes.includes(note) ? undefined : { notes: [...o.notes, note] }));
  }
  return { event: 'dry run passed', detail: dryRunSummary(report, node), message: dryRunMessage(op, report, node, { lines, file }) };
}

/**
 * The upgrade itself, with its progress in one edited message. Unlike a node upgrade, a
 * resumed or retried run simply runs it again: upgrade-k8s is safe to restart after a failure.
 */
async function apply(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const version = op.target.version!;
  const planned = op.steps.find((s) => s.kind === 'k8s-dry-run')?.node;
  const node = await healthyControlPlane(ctx, planned);
  const issuedAt = deps.now().toISOString();
  await ctx.record({ step: { id: step.id, node, issuedAt } });
  const started = deps.clock.now().getTime();
  const progress: UpgradeProgress = { version, node, milestones: [], updated: 0, lines: 0, outcome: 'running', elapsedMs: 0 };
  const snapshotOf = (): UpgradeProgress => ({
    ...progress,
    milestones: [...progress.milestones],
    elapsedMs: deps.clock.now().getTime() - started,
  });
  // Each run of the step has its own progress message.
  const reply = startProgressReply(deps, op, {
    key: `${op.id}-progress-${step.id}-${Date.parse(issuedAt)}`,
    render: upgradeProgressMessage,
    minIntervalMs: PROGRESS_EDIT_MS,
    onError: (error) => ctx.log.warn({ err: errorText(error) }, 'progress edit failed'),
  });
  await reply.open(snapshotOf());
  const phase = `talosctl upgrade-k8s to ${version} through ${node}`;
  ctx.phase?.(phase);
  const onLine = (line: string): void => {
    progress.lines += 1;
    if (MILESTONE.test(line)) {
      progress.milestones.push(line);
      ctx.phase?.(phase, line.trim());
    } else if (/^ < ".+": successfully updated$/.test(line)) progress.updated += 1;
    else return;
    reply.update(snapshotOf());
  };
  try {
    await ctx.talosctl.run(['upgrade-k8s', '--to', version], [node], {
      signal: ctx.signal,
      // Not the probe timeout: the whole cluster's control plane and every kubelet are updated in this one call.
      timeoutMs: deps.timeouts.stepMs,
      onStdoutLine: onLine,
      onStderrLine: () => {
        progress.lines += 1;
      },
    });
  } catch (error) {
    progress.outcome = 'failed';
    await reply.finish(snapshotOf());
    throw commandFailure(`talosctl upgrade-k8s --to ${version} through ${node}`, version, error);
  }
  progress.outcome = 'done';
  await reply.finish(snapshotOf());
  return {
    event: `Kubernetes upgraded to ${version}`,
    detail: `talosctl upgrade-k8s finished through ${node} in ${formatDuration(deps.clock.now().getTime() - started)} (${progress.updated} component and kubelet updates)`,
  };
}

/** Every node reports the target kubelet; the kubelet's status can lag its restart, so it is polled briefly. */
async function verify(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const version = op.target.version!;
  const nodes = allNodes(cluster);
  let off: string[] = [];
  await pollUntil(deps.clock, clusterWait(deps, ctx.signal), async () => {
    const kubeNodes = await ctx.session.kube.listNodes(probeSignal(ctx));
    off = nodes.flatMap((address) => {
      const view = kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel);
      return view.kubeletVersion !== undefined && bare(view.kubeletVersion) === version
        ? []
        : [`${address} (${view.name ?? 'no Node'}): kubelet ${view.kubeletVersion ?? 'not reported'}`];
    });
    return off.length === 0 ? { done: true, value: undefined } : { done: false, pending: off.join('; ') };
  });
  if (off.length > 0) throw new StepFailure(`not every node reports kubelet ${version}; Retry runs upgrade-k8s again, which is safe`, off);
  // upgrade-k8s replaces the control plane and restarts kubelets, not the workloads' pods: what already failed is named, not a stop.
  const gate = await walkGate(ctx, ctx.cluster, { drainNodes: [], baseline: { baseline: op.baseline, nodes: [] } });
  if (!gate.passed) throw new StepFailure('the health gate after the upgrade failed', gate.stopReasons);
  return {
    event: 'verified',
    detail: `all ${nodes.length} nodes report kubelet v${version}; health gate passed (${gate.checks.length} checks)${alreadyFailingNote(gate)}`,
  };
}

/** Every check of the runbook's "Upgrade Kubernetes" before anything is touched, all collected. */
const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const refusals: string[] = [];
  const notes: string[] = [];
  const target = op.target.version ?? '';
  const probe = probeSignals(deps.timeouts.probeMs, signal);

  const kubeNodes = await session.kube.listNodes(probe());
  const views = allNodes(cluster).map((address) => ({
    address,
    view: kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel),
  }));
  const kubelets = [
    ...new Set(
      views
        .map((v) => v.view.kubeletVersion)
        .filter((v): v is string => v !== undefined)
        .map(bare),
    ),
  ].sort(semver.compare);
  const talos = [...new Set(views.map((v) => v.view.osVersion).filter((v): v is string => v !== undefined))];
  // upgrade-k8s itself starts from the lowest version it finds, so the path is checked from there.
  const running = kubelets[0];
  if (running === undefined) refusals.push('no node reports a kubelet version, so the running Kubernetes is unknown; run /talos health');
  if (kubelets.length > 1)
    notes.push(`Nodes report several kubelet versions (${kubelets.join(', ')}); upgrade-k8s starts from the lowest, ${running}.`);
  if (talos.length === 0)
    refusals.push('no node reports its Talos version (osImage), so Kubernetes support cannot be checked; run /talos health');
  if (talos.length > 1) {
    const newest = [...talos].sort(semver.compare).at(-1)!;
    refusals.push(
      `the cluster runs mixed Talos versions (${talos.join(', ')}); finish the Talos upgrade first (\`/talos upgrade talos ${newest}\` continues it) or roll it back: Talos and Kubernetes upgrades never overlap`,
    );
  }
  if (running !== undefined) {
    const reasons = new Set(
      talos
        .map((t) => checkKubernetesUpgradePath(running, target, t, supportTable(deps.inventory)))
        .flatMap((p) => (p.ok ? [] : [p.reason])),
    );
    refusals.push(...reasons);
  }

  const talosVersion = talos.length === 1 ? talos[0] : undefined;
  const chosen = await talosctlFor(session, talosVersion);

  const rehearsal =
    cluster.environment === 'production' && op.target.version !== undefined
      ? await findStagingRehearsal(deps, 'k8s-upgrade', op.target.version)
      : undefined;
  return {
    refusals,
    notes,
    rehearsal,
    target: { fromVersion: running, talosVersion },
    // upgrade-k8s drains no node: a budget only a drain would meet does not refuse it ("no drain judged here").
    common: { talosctl: chosen.talosctl, clientRefusal: chosen.refusal, running: talosVersion, drainNodes: [] },
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'pending' },
      { id: 'dry-run', kind: 'k8s-dry-run', status: 'pending' },
      { id: 'apply', kind: 'k8s-apply', status: 'pending' },
      { id: 'verify', kind: 'k8s-verify', status: 'pending' },
    ],
  };
};

/** `/talos upgrade k8s`: a preflight and a plan; after Start the snapshot, the dry run, an approver's Apply, the upgrade, verification. */
export const k8sUpgradePlaybook: Playbook = {
  command: {
    name: 'k8s-upgrade',
    words: ['upgrade', 'k8s'],
    aliases: ['kubernetes'],
    argument: { kind: 'version', what: 'Kubernetes', example: '1.35.0', releases: 'kubernetes' },
    help: 'Kubernetes upgrade, dry run first (operators)',
    group: 'change',
    example: '/talos upgrade k8s v1.35.2',
    form: { title: 'Upgrade Kubernetes', submit: 'Plan the upgrade' },
    request: {
      what: 'a Kubernetes upgrade',
      // Stored as talosctl takes it (no leading v); the plan shows Terraform's form beside it.
      version: parseKubernetesVersionInput,
      refuseAtOnce: { window: true, lock: true },
      queued: (op, cluster) =>
        `Preflight for the Kubernetes upgrade of *${cluster.name}* to ${op.target.version ?? '?'} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
    },
  },
  startedBy: 'operators',
  heldByWindows: true,
  texts: k8sUpgradeTexts,
  data: z.undefined(),
  checks: { snapshotOffCluster: true, talosctlClient: true, healthGate: {}, window: true, lockFree: {} },
  start: 'plan',
  lock: 'cluster',
  versionRules: 'kubernetes',
  preflight,
  needsApproval: (step) => step.kind === 'k8s-apply',
  approvalMessage: (_ctx, op, approval, step) =>
    Promise.resolve(
      applyRequestMessage(
        op,
        approval,
        { ...step, node: op.steps.find((s) => s.kind === 'k8s-dry-run')?.node },
        op.steps.find((s) => s.kind === 'k8s-dry-run')?.detail,
        k8sUpgradeTexts,
      ),
    ),
  runStep(ctx, op, step) {
    if (step.kind === 'snapshot') return snapshotStep(ctx, op, { drainNodes: [] });
    if (step.kind === 'k8s-dry-run') return dryRun(ctx, op, step);
    if (step.kind === 'k8s-apply') return apply(ctx, op, step);
    return verify(ctx, op);
  },
  complete: async (ctx, op) => ({
    validation: op.steps.find((s) => s.kind === 'k8s-verify')?.detail ?? 'verified',
    followUp: k8sTerraformFollowUp(op, await declaredFollowUp(ctx, 'kubernetes', withV(op.target.version ?? '?'))),
  }),
  // upgrade-k8s is safe to run again; a failed verification is fixed by running it again.
  retryFrom: (step) => (step.kind === 'k8s-verify' ? 'apply' : step.id),
};
