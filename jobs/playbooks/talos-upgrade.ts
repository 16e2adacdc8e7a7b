import { errorText } from '../../src/chat/error-text.ts';
import { approvalRequestMessage } from '../../src/chat/approval-messages.ts';
import { terraformFollowUp } from '../../src/chat/follow-ups.ts';
import { stepLabel } from '../../src/chat/operation-root.ts';
import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import { runHealthGate } from '../../src/health/health-gate.ts';
import { runFinalVerification } from '../../src/health/final-verification.ts';
import { measureWaits } from '../../src/metrics/wait-clock.ts';
import type { Operation, Step } from '../../src/ops/operation.ts';
import { findStagingRehearsal } from '../../src/ops/rehearsal.ts';
import { installerImage, retagImage } from '../../src/rules/installer-image.ts';
import { outsideWindowRefusal } from '../../src/rules/maintenance-window.ts';
import { upgradeOrder } from '../../src/rules/upgrade-order.ts';
import { checkTalosUpgradePath } from '../../src/rules/versions.ts';
import { talosSupportsKubernetes } from '../../src/talos/compatibility.ts';
import { checkEtcdQuorum, findNodeByAddress, kubeNodeView, observeTalosVersions } from '../../src/talos/observe.ts';
import { probeSignals, StepFailure, type OpsJobDeps } from '../job-context.ts';
import { endpointsAvoiding, upgradeNode } from '../node-upgrade.ts';
import type { Playbook, PreflightOutcome, StepResult, WalkContext } from '../engine/playbook.ts';
import { patchStep, probeSignal } from '../engine/walk.ts';
import { snapshotStep } from './snapshot-step.ts';
import { heldByRefusal } from '../engine/held-by.ts';

/**
 * The installer image of every node for `target`, as the rules derive it now: the schematic
 * from Terraform with the cluster's platform, and the Longhorn node class's own installer
 * output retagged. The plan stores it; each node step derives it again before talosctl sees it.
 */
async function installerImages(deps: OpsJobDeps, cluster: ClusterConfig, target: string, signal?: AbortSignal): Promise<{ schematic: string; imageOf: (address: string) => string }> {
  const schematic = (await deps.tofu.outputRaw(cluster.terraformDir, 'talos_image_factory_schematic_id', signal)).trim();
  const image = installerImage({ platform: cluster.installerPlatform, schematic, version: target });
  const longhornImage =
    cluster.longhornNodes.length > 0 ? retagImage((await deps.tofu.outputRaw(cluster.terraformDir, 'talos_longhorn_installer_image', signal)).trim(), target) : undefined;
  return { schematic, imageOf: (address) => (cluster.longhornNodes.includes(address) && longhornImage ? longhornImage : image) };
}

/** Every preflight check of the runbook, collected rather than stopping at the first, so one refusal lists all that is wrong. */
async function preflight(deps: OpsJobDeps, cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal): Promise<PreflightOutcome> {
  const target = op.target.version ?? '';
  const refusals: string[] = [];
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) refusals.push(windowRefusal);
  const nodes = allNodes(cluster);
  const probe = probeSignals(deps.timeouts.probeMs, signal);

  const kubeNodes = await session.kube.listNodes(probe());
  const views = new Map(nodes.map((address) => [address, kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel)]));
  const reported = new Set([...views.values()].map((v) => v.osVersion).filter((v): v is string => v !== undefined));
  const running = reported.size === 1 ? [...reported][0] : undefined;

  // The client must match the running Talos; with a directory of binaries the bot picks it.
  let talosctl;
  try {
    talosctl = await session.talosctl(running);
  } catch (error) {
    refusals.push(errorText(error));
    talosctl = await session.talosctl();
  }
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
    refusals.push(`the cluster runs mixed Talos versions (${mix}); finish or roll back the previous upgrade first, so every node runs one version`);
  }
  const fromVersion = byVersion.size === 1 ? [...byVersion.keys()][0] : running;
  if (talosctl.binary !== undefined && fromVersion !== undefined) {
    const client = await talosctl.run(['version', '--client'], [], { signal: probe() }).catch(() => undefined);
    const tag = /Tag:\s+(\S+)/.exec(client?.stdout ?? '')?.[1];
    if (tag !== undefined && tag !== fromVersion) {
      refusals.push(`talosctl is ${tag} but the cluster runs ${fromVersion}; the runbook needs a matching client: install talosctl ${fromVersion} (or put talosctl-${fromVersion} in the TALOSCTL_BIN directory)`);
    }
  }

  const factoryVersions = await deps.factory.versions(probe());
  if (fromVersion !== undefined) {
    const path = checkTalosUpgradePath(fromVersion, target, factoryVersions);
    if (!path.ok) refusals.push(path.reason);
  }
  const kubelets = new Set([...views.values()].map((v) => v.kubeletVersion).filter((v): v is string => v !== undefined));
  for (const k8s of kubelets) {
    if (!talosSupportsKubernetes(target, k8s)) {
      refusals.push(`Talos ${target} does not support the running Kubernetes ${k8s} (support matrix); upgrade Kubernetes first with /talos upgrade k8s`);
    }
  }

  const gate = await runHealthGate(cluster, { talosctl, kube: session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal });
  if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);

  const holder = await deps.lock.holder(cluster.name);
  if (holder !== undefined) refusals.push(await heldByRefusal(deps, cluster.name, holder));

  let schematic: string | undefined;
  const steps: Step[] = [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }];
  try {
    const images = await installerImages(deps, cluster, target, signal);
    schematic = images.schematic;
    const ordered = upgradeOrder(nodes.map((address) => ({ address, role: cluster.controlPlanes.includes(address) ? ('controlplane' as const) : ('worker' as const) })));
    for (const node of ordered) {
      const view = views.get(node.address);
      steps.push({
        id: `node-${node.address}`,
        kind: node.role === 'controlplane' ? 'upgrade-control-plane' : 'upgrade-worker',
        node: node.address,
        nodeName: view?.name,
        host: view?.host,
        image: images.imageOf(node.address),
        status: 'pending',
      });
    }
  } catch (error) {
    refusals.push(`cannot derive the installer image: ${errorText(error)}`);
  }
  steps.push({ id: 'verify', kind: 'verify', status: 'pending' });
  const rehearsal = cluster.environment === 'production' ? await findStagingRehearsal(deps, 'talos-upgrade', target) : undefined;
  return { refusals, notes: [], steps, rehearsal, target: { fromVersion, talosVersion: fromVersion, schematic } };
}

/** One node, idempotent by observation; the bot's own time per node is logged for the benchmark. */
async function nodeStep(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const log = ctx.log.child({ node: step.node });
  const measured = await measureWaits(() =>
    upgradeNode({
      deps,
      cluster: ctx.cluster,
      session: ctx.session,
      talosctl: ctx.talosctl,
      step,
      target: op.target.version!,
      log,
      signal: ctx.signal,
      markIssued: async (fromVersion, bootId) => {
        await patchStep(deps, op.id, step.id, { issuedAt: deps.now().toISOString(), fromVersion, issuedBootId: bootId });
      },
      // Kept for /talos status; the channel hears of the node when its step ends.
      progress: async (detail) => {
        await patchStep(deps, op.id, step.id, { detail });
      },
    }),
  );
  const outcome = measured.result;
  log.info(
    { step: step.id, wallMs: Math.round(measured.wallMs), waitMs: Math.round(measured.waitMs), overheadMs: Math.round(measured.wallMs - measured.waitMs), outcome: outcome.kind },
    'node step finished',
  );
  return { event: `${outcome.kind === 'skipped' ? 'skipped' : 'upgraded'}: ${stepLabel(step)}`, detail: outcome.detail, status: outcome.kind === 'skipped' ? 'skipped' : 'done' };
}

/** The runbook's final verification: every node on the target, then the gate with Cilium, Flux and pods ready. */
async function verify(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const target = op.target.version!;
  const versions = await observeTalosVersions(ctx.talosctl, allNodes(ctx.cluster), ctx.signal);
  const off = [...versions].filter(([, v]) => !v.reachable || v.version !== target).map(([n, v]) => `${n}: ${v.reachable ? v.version : v.error}`);
  if (off.length > 0) throw new StepFailure(`not every node runs ${target}`, off);
  const gate = await runFinalVerification(ctx.cluster, { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal }, { settleMs: ctx.deps.timeouts.settleMs, pollMs: ctx.deps.timeouts.pollMs });
  if (!gate.passed) throw new StepFailure('the final health gate failed', gate.stopReasons);
  return { event: 'verified', detail: `every node runs ${target}; Cilium healthy, Flux ready, pods ready; health gate passed (${gate.checks.length} checks)` };
}

/** `/talos upgrade talos` after Start: snapshot, workers, then control planes one at a time with an approval each, then the final check. */
export const talosUpgradePlaybook: Playbook = {
  start: 'plan',
  preflight,
  needsApproval: (step) => step.kind === 'upgrade-control-plane',
  async approvalMessage(ctx, op, approval, step) {
    const etcd = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, ctx.signal, endpointsAvoiding(ctx.cluster, step.node!));
    return approvalRequestMessage(op, approval, { step, version: op.target.version ?? '?', etcdSummary: etcd.summary, etcdEvidence: etcd.evidence });
  },
  async recheck(ctx, op, step) {
    if (step.image === undefined || step.node === undefined || step.issuedAt !== undefined) return [];
    const { imageOf } = await installerImages(ctx.deps, ctx.cluster, op.target.version!, probeSignal(ctx));
    const expected = imageOf(step.node);
    return expected === step.image ? [] : [`stored installer image ${step.image}`, `the rules derive ${expected} for ${step.node} now; plan the upgrade again`];
  },
  runStep(ctx, op, step) {
    if (step.kind === 'snapshot') return snapshotStep(ctx, op);
    if (step.kind === 'verify') return verify(ctx, op);
    return nodeStep(ctx, op, step);
  },
  complete: (ctx, op) =>
    Promise.resolve({
      validation: op.steps.find((s) => s.kind === 'verify')?.detail ?? 'verified',
      followUp: terraformFollowUp(op, op.target.schematic ?? '<schematic>', ctx.cluster.installerPlatform),
    }),
  // A node step is never blindly run again: the node may be half-way, and a rollback is the way back.
  retryFrom: () => undefined,
  offersRollback: (step) => step.kind === 'upgrade-control-plane' || step.kind === 'upgrade-worker',
  quietStart: (step) => step.kind === 'verify',
};
