import { findStagingRehearsal } from '../src/ops/rehearsal.ts';
import { outsideWindowRefusal } from '../src/rules/maintenance-window.ts';
import semver from 'semver';
import { errorText } from '../src/chat/error-text.ts';
import { allNodes, type ClusterConfig } from '../src/config/inventory.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import { runHealthGate } from '../src/health/health-gate.ts';
import type { Operation } from '../src/ops/operation.ts';
import { checkKubernetesUpgradePath } from '../src/rules/versions.ts';
import { findNodeByAddress, kubeNodeView } from '../src/talos/observe.ts';
import type { OpsJobDeps } from './job-context.ts';
import { createPreflightJob, type PreflightOutcome } from './operation-preflight.ts';

const bare = (v: string): string => v.replace(/^v/, '');

/** Every check of the runbook's "Upgrade Kubernetes" before anything is touched, all collected. */
async function preflight(deps: OpsJobDeps, cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal): Promise<PreflightOutcome> {
  const refusals: string[] = [];
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) refusals.push(windowRefusal);
  const notes: string[] = [];
  const target = op.target.version ?? '';
  const probe = (): AbortSignal => (signal ? AbortSignal.any([signal, AbortSignal.timeout(deps.timeouts.probeMs)]) : AbortSignal.timeout(deps.timeouts.probeMs));

  const kubeNodes = await session.kube.listNodes(probe());
  const views = allNodes(cluster).map((address) => ({ address, view: kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel) }));
  const kubelets = [...new Set(views.map((v) => v.view.kubeletVersion).filter((v): v is string => v !== undefined).map(bare))].sort(semver.compare);
  const talos = [...new Set(views.map((v) => v.view.osVersion).filter((v): v is string => v !== undefined))];
  // upgrade-k8s itself starts from the lowest version it finds, so the path is checked from there.
  const running = kubelets[0];
  if (running === undefined) refusals.push('no node reports a kubelet version, so the running Kubernetes is unknown; run /talos health');
  if (kubelets.length > 1) notes.push(`Nodes report several kubelet versions (${kubelets.join(', ')}); upgrade-k8s starts from the lowest, ${running}.`);
  if (talos.length === 0) refusals.push('no node reports its Talos version (osImage), so Kubernetes support cannot be checked; run /talos health');
  if (talos.length > 1) {
    refusals.push(`the cluster runs mixed Talos versions (${talos.join(', ')}); finish or roll back the Talos upgrade first: Talos and Kubernetes upgrades never overlap`);
  }
  if (running !== undefined) {
    const reasons = new Set(talos.map((t) => checkKubernetesUpgradePath(running, target, t)).flatMap((p) => (p.ok ? [] : [p.reason])));
    refusals.push(...reasons);
  }

  const talosVersion = talos.length === 1 ? talos[0] : undefined;
  let talosctl;
  try {
    talosctl = await session.talosctl(talosVersion);
  } catch (error) {
    refusals.push(errorText(error));
    talosctl = await session.talosctl(talosVersion, { closest: true });
  }
  const gate = await runHealthGate(cluster, { talosctl, kube: session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal });
  if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);
  const holder = await deps.lock.holder(cluster.name);
  if (holder !== undefined) refusals.push(`operation ${holder} holds ${cluster.name}; wait for it to finish, or \`/talos cancel ${holder}\``);

  const rehearsal =
    cluster.environment === 'production' && op.target.version !== undefined
      ? { stagingOp: await findStagingRehearsal(deps.store, deps.inventory, 'k8s-upgrade', op.target.version) }
      : undefined;
  return {
    refusals,
    notes,
    rehearsal,
    target: { fromVersion: running, talosVersion },
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'pending' },
      { id: 'dry-run', kind: 'k8s-dry-run', status: 'pending' },
      { id: 'apply', kind: 'k8s-apply', status: 'pending' },
      { id: 'verify', kind: 'k8s-verify', status: 'pending' },
    ],
  };
}

/** Preflight of `/talos upgrade k8s`: the refusal, or the plan with Start and Cancel. */
export function createK8sUpgradePreflightJob(deps: OpsJobDeps) {
  return createPreflightJob(deps, (cluster, op, session, signal) => preflight(deps, cluster, op, session, signal), { kind: 'plan' });
}
