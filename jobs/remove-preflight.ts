import type { ClusterConfig } from '../src/config/inventory.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import { runHealthGate } from '../src/health/health-gate.ts';
import type { Operation } from '../src/ops/operation.ts';
import { outsideWindowRefusal } from '../src/rules/maintenance-window.ts';
import { quorumAfterRemoval } from '../src/rules/quorum.ts';
import { observeEtcdMembership } from '../src/talos/etcd-membership.ts';
import type { OpsJobDeps } from './job-context.ts';
import { observeNodeTarget } from './node-target.ts';
import { createPreflightJob, type PreflightOutcome } from './operation-preflight.ts';

/** The runbook's "Remove a node" checks, made while Terraform still has the node's address and credentials. */
async function preflight(deps: OpsJobDeps, cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal): Promise<PreflightOutcome> {
  const probe = (): AbortSignal => (signal ? AbortSignal.any([signal, AbortSignal.timeout(deps.timeouts.probeMs)]) : AbortSignal.timeout(deps.timeouts.probeMs));
  const address = op.target.node!;
  const node = await observeNodeTarget(session, cluster, address, probe);
  const refusals = [...node.refusals];
  const notes: string[] = [];
  if (node.version?.reachable !== true) {
    refusals.push(
      `${address} does not answer talosctl (${node.version?.error ?? 'no answer'}), so it cannot be drained and reset gracefully; for a failed node follow the node replacement runbook`,
    );
  }
  // The last node of its kind is refused by the command itself; the arithmetic also covers a single member.
  if (node.role === 'control plane') {
    const membership = await observeEtcdMembership(node.talosctl, cluster.controlPlanes, address, probe());
    const healthy = Math.min(membership.healthy.length, membership.memberCount);
    const quorum = quorumAfterRemoval(membership.memberCount, { healthy, removingHealthy: membership.healthy.includes(address) });
    if (quorum.ok) notes.push(`etcd quorum: ${quorum.explanation}.`);
    else refusals.push(`etcd quorum: ${quorum.explanation}`);
  }
  const gate = await runHealthGate(cluster, { talosctl: node.talosctl, kube: session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal });
  if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);
  // A removal is a planned change, so production's maintenance windows apply (a rollback, being incident response, is exempt).
  const window = outsideWindowRefusal(cluster, deps.now());
  if (window !== undefined) refusals.push(window);
  const holder = await deps.lock.holder(cluster.name);
  if (holder !== undefined) refusals.push(`operation ${holder} holds ${cluster.name}; wait for it to finish, or \`/talos cancel ${holder}\``);
  const facts = { node: address, nodeName: node.view.name, host: node.view.host };
  const from = node.version?.reachable === true ? node.version.version : node.view.osVersion;
  return {
    refusals,
    notes,
    target: { nodeName: node.view.name, fromVersion: from, talosVersion: from },
    steps: [
      { id: 'reset', kind: 'reset-node', ...facts, status: 'pending', fromVersion: from },
      { id: 'delete-node', kind: 'delete-node', ...facts, status: 'pending' },
      { id: 'verify', kind: 'removal-verify', ...facts, status: 'pending' },
    ],
  };
}

/** Preflight of `/talos remove`: the refusal, or the plan, the cluster's lock and the approval request. */
export function createRemovePreflightJob(deps: OpsJobDeps) {
  return createPreflightJob(deps, (cluster, op, session, signal) => preflight(deps, cluster, op, session, signal), { kind: 'run', job: 'remove-run' });
}
