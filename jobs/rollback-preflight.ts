import type { ClusterConfig } from '../src/config/inventory.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import type { Operation } from '../src/ops/operation.ts';
import { observeEtcdMembership, quorumWhileRebooting } from '../src/talos/etcd-membership.ts';
import type { OpsJobDeps } from './job-context.ts';
import { observeNodeTarget } from './node-target.ts';
import { createPreflightJob, type PreflightOutcome } from './operation-preflight.ts';

async function preflight(deps: OpsJobDeps, cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal): Promise<PreflightOutcome> {
  const probe = (): AbortSignal => (signal ? AbortSignal.any([signal, AbortSignal.timeout(deps.timeouts.probeMs)]) : AbortSignal.timeout(deps.timeouts.probeMs));
  const address = op.target.node!;
  const node = await observeNodeTarget(session, cluster, address, probe);
  const refusals = [...node.refusals];
  const notes: string[] = [];
  if (node.version?.reachable !== true) {
    refusals.push(
      `${address} does not answer talosctl (${node.version?.error ?? 'no answer'}): talosctl rollback needs its API. A node whose new image cannot boot falls back to the previous one by itself; a node that stays down needs the node replacement runbook`,
    );
  }
  // A single control plane has no peers to keep quorum: its rollback, like its upgrade, takes the API down for the reboot.
  if (node.role === 'control plane' && cluster.controlPlanes.length > 1) {
    const quorum = quorumWhileRebooting(await observeEtcdMembership(node.talosctl, cluster.controlPlanes, address, probe()), address);
    if (quorum.ok) notes.push(`etcd quorum: ${quorum.explanation}.`);
    else refusals.push(`etcd quorum: ${quorum.explanation}; bring the other control planes back first`);
  }
  const holder = await deps.lock.holder(cluster.name);
  // The lock is also what keeps two control-plane rollbacks from ever running at once.
  if (holder !== undefined) refusals.push(`operation ${holder} holds ${cluster.name}; one operation (and so one rollback) at a time: wait for it, or \`/talos cancel ${holder}\``);
  const from = node.version?.reachable === true ? node.version.version : node.view.osVersion;
  const facts = { node: address, nodeName: node.view.name, host: node.view.host };
  return {
    refusals,
    notes,
    target: { nodeName: node.view.name, fromVersion: from, talosVersion: from },
    steps: [
      { id: 'rollback', kind: 'rollback-node', ...facts, status: 'pending' },
      { id: 'verify', kind: 'rollback-verify', ...facts, status: 'pending' },
    ],
  };
}

/** Preflight of `/talos rollback`: the refusal, or the plan, the cluster's lock and the approval request. */
export function createRollbackPreflightJob(deps: OpsJobDeps) {
  return createPreflightJob(deps, (cluster, op, session, signal) => preflight(deps, cluster, op, session, signal), { kind: 'run', job: 'rollback-run' });
}
