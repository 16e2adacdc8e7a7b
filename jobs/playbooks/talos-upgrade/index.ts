import { z } from 'zod';
import { errorText } from '../../../src/chat/error-text.ts';
import { approvalRequestMessage } from '../../../src/chat/approval-messages.ts';
import { talosUpgradeStepLabel as stepLabel, talosUpgradeTexts } from './texts.ts';
import { allNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import { runFinalVerification } from '../../../src/health/final-verification.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import { measureWaits } from '../../../src/time/wait-clock.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import type { RecordedNodeClass, RecordedNodeClasses } from '../../../src/ops/node-class-record.ts';
import { findStagingRehearsal } from '../../../src/ops/rehearsal.ts';
import { upgradeOrder } from '../../../src/rules/upgrade-order.ts';
import { checkTalosUpgradePath } from '../../../src/rules/versions.ts';
import { talosSupportsKubernetes } from '../../../src/talos/compatibility.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { findNodeByAddress, kubeNodeView, observeNodeImages, observeTalosVersions } from '../../../src/talos/observe.ts';
import { probeSignals, StepFailure, type OpsJobDeps } from '../../engine/job-context.ts';
import { deriveInstallerImages, imageChanges, schematicOfImage, type InstallerImages } from './installer-images.ts';
import { endpointsAvoiding, hasOtherEndpoint } from '../shared/node-endpoints.ts';
import { upgradeNode } from './node-step.ts';
import { talosctlFor } from '../../engine/talosctl-client.ts';
import type { Playbook, PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { nodeStepProgress } from '../shared/node-step-progress.ts';
import { patchStep, probeSignal } from '../../engine/walk.ts';
import { snapshotStep } from '../snapshot/snapshot-step.ts';
import { talosUpgradeFollowUp } from './follow-up.ts';
import { parseTalosVersionInput } from '../../../src/rules/versions.ts';

/** A request for the version the cluster already runs: a rolling re-install with the images Terraform declares now. */
export function isReinstall(op: Operation): boolean {
  return op.target.version !== undefined && op.target.version === op.target.fromVersion;
}

/** What the plan says about a cluster whose only control plane reboots: talosctl has no other endpoint. */
function singleControlPlaneNote(deps: OpsJobDeps, cluster: ClusterConfig): string | undefined {
  const [only] = cluster.controlPlanes;
  if (only === undefined || hasOtherEndpoint(cluster, only)) return undefined;
  const seconds = (ms: number): number => Math.round(ms / 1000);
  return (
    `${only} is the only control plane: while it reboots, talosctl has no other endpoint and the Kubernetes API is down. ` +
    `Its upgrade is asked for without waiting on the connection (talosctl upgrade --wait=false; a --wait through the rebooting node can hang, talos#11830; ` +
    `from Talos 1.13 also --drain=false, since talosctl's own drain forces --wait: its pods stop with the reboot, undrained), ` +
    `then the bot polls the node, each poll bounded by ${seconds(deps.timeouts.probeMs)} s, and counts a refused or timed-out call as not back yet until ${seconds(deps.timeouts.nodeReadyMs)} s have passed.`
  );
}

/** Every preflight check of the runbook, collected rather than stopping at the first, so one refusal lists all that is wrong. */
const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const target = op.target.version ?? '';
  const refusals: string[] = [];
  const nodes = allNodes(cluster);
  const probe = probeSignals(deps.timeouts.probeMs, signal);

  const kubeNodes = await session.kube.listNodes(probe());
  const views = new Map(nodes.map((address) => [address, kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel)]));
  const reported = new Set([...views.values()].map((v) => v.osVersion).filter((v): v is string => v !== undefined));
  const running = reported.size === 1 ? [...reported][0] : undefined;

  // The client must match the running Talos; with a directory of binaries the bot picks it.
  const chosen = await talosctlFor(session, running);
  const talosctl = chosen.talosctl;
  const versions = await observeTalosVersions(talosctl, nodes, probe());
  const byVersion = new Map<string, string[]>();
  for (const [node, v] of versions) {
    if (!v.reachable) {
      refusals.push(`${node} does not answer talosctl (${v.error}); every node must be reachable before an upgrade`);
      continue;
    }
    byVersion.set(v.version, [...(byVersion.get(v.version) ?? []), node]);
  }
  if (byVersion.size > 1) {
    const mix = [...byVersion].map(([v, ns]) => `${v} on ${ns.join(', ')}`).join('; ');
    refusals.push(
      `the cluster runs mixed Talos versions (${mix}); finish or roll back the previous upgrade first, so every node runs one version`,
    );
  }
  const fromVersion = byVersion.size === 1 ? [...byVersion.keys()][0] : running;

  // What each node runs and the image the rules give it now: a request for the running version re-installs the nodes whose image changed.
  const notes: string[] = [];
  let images: InstallerImages | undefined;
  try {
    const recorded = await recordedClasses(deps, cluster);
    if (recorded.ignored.length > 0) notes.push(ignoredRecordNote(recorded.ignored));
    images = await deriveInstallerImages(
      session.outputs,
      cluster,
      talosctl,
      nodes,
      target,
      { recorded: recorded.byNode, runningVersion: fromVersion },
      probe(),
      deps.factory.registry,
    );
    refusals.push(...images.refusals);
  } catch (error) {
    refusals.push(`cannot derive the installer image: ${errorText(error)}`);
  }
  const changes = images === undefined ? [] : imageChanges(images);
  const factoryVersions = await deps.factory.versions(probe());
  const path =
    fromVersion === undefined ? undefined : checkTalosUpgradePath(fromVersion, target, factoryVersions, { imageChanges: changes });
  if (path !== undefined && !path.ok) refusals.push(path.reason);
  const reinstall = path?.ok === true && path.kind === 'reinstall';
  if (reinstall && images !== undefined) {
    const what = changes.map((node) => {
      const n = images.byNode.get(node)!;
      const from = n.running.reachable ? (n.running.schematic ?? 'no schematic') : '?';
      return `${node} (${n.nodeClass.class} class) from schematic ${from} to ${n.schematic}`;
    });
    notes.push(
      `A re-install on ${target}, the version every node runs: only the installer image changes, on ${what.join('; ')}. Each node reboots into it, with the same approvals as an upgrade.`,
    );
  }
  if (images !== undefined && images.byNode.size > 0) notes.push(nodeClassNote(images));
  const alone = singleControlPlaneNote(deps, cluster);
  if (alone !== undefined) notes.push(alone);
  const kubelets = new Set([...views.values()].map((v) => v.kubeletVersion).filter((v): v is string => v !== undefined));
  for (const k8s of kubelets) {
    if (!talosSupportsKubernetes(target, k8s)) {
      refusals.push(
        `Talos ${target} does not support the running Kubernetes ${k8s} (support matrix); upgrade Kubernetes first with /talos upgrade k8s`,
      );
    }
  }

  const steps: Step[] = [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }];
  // A re-install touches only the nodes whose image changed; an upgrade, every node.
  const touched = reinstall ? nodes.filter((address) => changes.includes(address)) : nodes;
  const ordered = upgradeOrder(
    touched.map((address) => ({
      address,
      role: cluster.controlPlanes.includes(address) ? ('controlplane' as const) : ('worker' as const),
    })),
  );
  for (const node of ordered) {
    const view = views.get(node.address);
    const image = images?.byNode.get(node.address)?.image;
    if (image === undefined) continue;
    steps.push({
      id: `node-${node.address}`,
      kind: node.role === 'controlplane' ? 'upgrade-control-plane' : 'upgrade-worker',
      node: node.address,
      nodeName: view?.name,
      host: view?.host,
      image,
      status: 'pending',
    });
  }
  steps.push({ id: 'verify', kind: 'verify', status: 'pending' });
  const rehearsal = cluster.environment === 'production' ? await findStagingRehearsal(deps, 'talos-upgrade', target) : undefined;
  return {
    refusals,
    notes,
    steps,
    rehearsal,
    target: { fromVersion, talosVersion: fromVersion, schematic: images?.schematic },
    common: { talosctl, clientRefusal: chosen.refusal, running: fromVersion },
  };
};

/** One node, idempotent by observation; the bot's own time per node is logged for the benchmark. */
async function nodeStep(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const log = ctx.log.child({ node: step.node });
  // talosctl's progress (pull, install, drain, reboot) in a reply of its own while the node upgrades.
  const live = nodeStepProgress(deps, op, step, log);
  const run = (): ReturnType<typeof upgradeNode> =>
    upgradeNode({
      deps,
      cluster: ctx.cluster,
      session: ctx.session,
      talosctl: ctx.talosctl,
      step,
      target: op.target.version!,
      reinstall: isReinstall(op),
      ...(op.baseline === undefined ? {} : { baseline: op.baseline }),
      log,
      signal: ctx.signal,
      markIssued: async (fromVersion, bootId) => {
        await patchStep(deps, op.id, step.id, { issuedAt: deps.now().toISOString(), fromVersion, issuedBootId: bootId });
      },
      // Kept for /talos status, and shown in the step's progress reply as it happens.
      progress: async (detail) => {
        live.show(detail);
        await patchStep(deps, op.id, step.id, { detail });
      },
    });
  let measured;
  try {
    measured = await measureWaits(run);
  } catch (error) {
    await live.close('stopped');
    throw error;
  }
  const outcome = measured.result;
  await live.close('done', outcome.detail);
  log.info(
    {
      step: step.id,
      wallMs: Math.round(measured.wallMs),
      waitMs: Math.round(measured.waitMs),
      overheadMs: Math.round(measured.wallMs - measured.waitMs),
      outcome: outcome.kind,
    },
    'node step finished',
  );
  const done = isReinstall(op) ? 're-installed' : 'upgraded';
  return {
    event: `${outcome.kind === 'skipped' ? 'skipped' : done}: ${stepLabel(step)}`,
    detail: outcome.detail,
    status: outcome.kind === 'skipped' ? 'skipped' : 'done',
  };
}

/** The runbook's final verification: every node on the target, then the gate with Cilium, Flux and pods ready. */
async function verify(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const target = op.target.version!;
  const versions = await observeTalosVersions(ctx.talosctl, allNodes(ctx.cluster), ctx.signal);
  const off = [...versions]
    .filter(([, v]) => !v.reachable || v.version !== target)
    .map(([n, v]) => `${n}: ${v.reachable ? v.version : v.error}`);
  if (off.length > 0) throw new StepFailure(`not every node runs ${target}`, off);
  if (isReinstall(op)) {
    // A re-install keeps the version, so only the schematic shows that it took effect.
    const nodeSteps = op.steps.filter((s) => s.node !== undefined && s.image !== undefined);
    const running = await observeNodeImages(
      ctx.talosctl,
      nodeSteps.map((s) => s.node!),
      ctx.signal,
    );
    const stale = nodeSteps.flatMap((s) => {
      const seen = running.get(s.node!);
      const expected = schematicOfImage(s.image);
      if (seen?.reachable === true && seen.schematic === expected) return [];
      return [
        `${s.node!}: ${seen?.reachable === true ? `schematic ${seen.schematic ?? 'none'}` : (seen?.error ?? 'no answer')}, expected ${expected ?? s.image!}`,
      ];
    });
    if (stale.length > 0) throw new StepFailure('not every re-installed node runs the schematic of its new installer image', stale);
  }
  const gate = await runFinalVerification(
    ctx.cluster,
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal },
    // At the end no node was just changed: only what got worse than before the operation stops.
    {
      settleMs: ctx.deps.timeouts.settleMs,
      pollMs: ctx.deps.timeouts.pollMs,
      clock: ctx.deps.clock,
      baseline: { baseline: op.baseline, nodes: [] },
    },
  );
  if (!gate.passed) throw new StepFailure('the final health gate failed', gate.stopReasons);
  return {
    event: 'verified',
    detail: `every node runs ${target}; Cilium healthy, Flux ready, pods ready; health gate passed (${gate.checks.length} checks)${alreadyFailingNote(gate)}`,
  };
}

/** The bot's record of the node classes; entries that do not parse are logged and left out. */
async function recordedClasses(deps: OpsJobDeps, cluster: ClusterConfig): Promise<RecordedNodeClasses> {
  const recorded = await deps.nodeClasses.read(cluster.name);
  if (recorded.ignored.length > 0)
    deps.logger.warn({ cluster: cluster.name, nodes: recorded.ignored }, "ignored node class records that are not the bot's");
  return recorded;
}

function ignoredRecordNote(nodes: string[]): string {
  return `The bot's record of the node class of ${nodes.join(', ')} is not one it writes (edited or corrupt), so it was ignored: those nodes' classes come from what they run and the inventory.`;
}

/** The plan's line on each node's installer class and why: the class decides the schematic the node keeps. */
function nodeClassNote(images: InstallerImages): string {
  const label = (c: string): string => (c === 'longhorn' ? 'Longhorn' : 'default');
  const lines = [...images.byNode].map(([node, n]) => `${node}: ${label(n.nodeClass.class)} (${n.nodeClass.because})`);
  return `Installer class of each node, and why: ${lines.join('; ')}.`;
}

/**
 * At completion, each node the operation installed keeps its class in the bot's record: the
 * class of the image it installed, Terraform's default schematic or the Longhorn output's.
 */
async function recordNodeClasses(deps: OpsJobDeps, op: Operation): Promise<void> {
  const entries = new Map<string, RecordedNodeClass>();
  const at = deps.now().toISOString();
  for (const step of op.steps) {
    if (step.node === undefined || step.image === undefined || (step.status !== 'done' && step.status !== 'skipped')) continue;
    const schematic = schematicOfImage(step.image);
    if (schematic === undefined) continue;
    entries.set(step.node, { class: schematic === op.target.schematic ? 'default' : 'longhorn', schematic, op: op.id, at });
  }
  await deps.nodeClasses.write(op.cluster, entries);
}

/** `/talos upgrade talos` after Start: snapshot, workers, then control planes one at a time with an approval each, then the final check. */
export const talosUpgradePlaybook: Playbook = {
  command: {
    name: 'talos-upgrade',
    words: ['upgrade', 'talos'],
    argument: { kind: 'version', what: 'Talos', example: 'v1.12.11' },
    help: 'rolling Talos upgrade with approvals (operators)',
    request: {
      what: 'a Talos upgrade',
      version: parseTalosVersionInput,
      refuseAtOnce: { window: true, lock: true },
      queued: (op, cluster) =>
        `Preflight for the Talos upgrade of *${cluster.name}* to ${op.target.version ?? '?'} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
    },
  },
  startedBy: 'operators',
  heldByWindows: true,
  texts: talosUpgradeTexts,
  data: z.undefined(),
  checks: { talosctlClient: true, healthGate: { announce: true }, window: true, lockFree: {} },
  start: 'plan',
  lock: 'cluster',
  preflight,
  needsApproval: (step) => step.kind === 'upgrade-control-plane',
  async approvalMessage(ctx, op, approval, step) {
    const etcd = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, ctx.signal, endpointsAvoiding(ctx.cluster, step.node!));
    return approvalRequestMessage(
      op,
      approval,
      { step, version: op.target.version ?? '?', etcdSummary: etcd.summary, etcdEvidence: etcd.evidence },
      talosUpgradeTexts,
    );
  },
  async recheck(ctx, op, step) {
    if (step.image === undefined || step.node === undefined || step.issuedAt !== undefined) return [];
    const recorded = await recordedClasses(ctx.deps, ctx.cluster);
    const evidence = { recorded: recorded.byNode, runningVersion: op.target.fromVersion };
    const images = await deriveInstallerImages(
      ctx.session.outputs,
      ctx.cluster,
      ctx.talosctl,
      [step.node],
      op.target.version!,
      evidence,
      probeSignal(ctx),
      ctx.deps.factory.registry,
    );
    const expected = images.byNode.get(step.node)?.image;
    if (expected === undefined) return [`stored installer image ${step.image}`, ...images.refusals];
    return expected === step.image
      ? []
      : [`stored installer image ${step.image}`, `the rules derive ${expected} for ${step.node} now; plan the upgrade again`];
  },
  runStep(ctx, op, step) {
    if (step.kind === 'snapshot') return snapshotStep(ctx, op);
    if (step.kind === 'verify') return verify(ctx, op);
    return nodeStep(ctx, op, step);
  },
  complete: async (ctx, op) => {
    // The record is evidence for later plans, not part of this upgrade: a Redis error costs the evidence, not the completion.
    await recordNodeClasses(ctx.deps, op).catch((error: unknown) => ctx.log.warn({ err: error }, 'could not record the node classes'));
    return {
      validation: op.steps.find((s) => s.kind === 'verify')?.detail ?? 'verified',
      followUp: await talosUpgradeFollowUp(ctx, op),
    };
  },
  // A node step is never blindly run again: the node may be half-way, and a rollback is the way back.
  // Only a stop that says a Retry is safe (a drain that timed out, a refusal before anything was touched) offers one.
  retryFrom: (step, failure) => (failure?.options.retry !== undefined && step.node !== undefined ? step.id : undefined),
  offersRollback: (step) => step.kind === 'upgrade-control-plane' || step.kind === 'upgrade-worker',
  quietStart: (step) => step.kind === 'verify',
};
