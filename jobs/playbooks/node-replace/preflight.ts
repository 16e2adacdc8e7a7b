import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { quorumForReplacement } from '../../../src/rules/quorum.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { findNodeByAddress, kubeNodeView, observeTalosVersions } from '../../../src/talos/observe.ts';
import { errorText } from '../../../src/chat/error-text.ts';
import { probeSignals } from '../../engine/job-context.ts';
import type { Playbook } from '../../engine/playbook.ts';
import { talosctlFor } from '../../engine/talosctl-client.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { roleOf, withEndpoints } from '../shared/node-target.ts';
import { planTree } from '../shared/plan-tree.ts';
import { WORKER_DELETE_NODE, type NodeReplaceData } from './data.ts';
import { lookUpMember } from './etcd-member.ts';
import { replaceTargets, planReplacement } from './replace-targets.ts';

/**
 * The refusal the inventory alone decides: the only control plane is never replaced this way.
 * Without another member there is nothing to keep quorum while it is gone: that is disaster recovery.
 */
export function onlyControlPlane(cluster: ClusterConfig, node: string): string | undefined {
  if (!cluster.controlPlanes.includes(node) || cluster.controlPlanes.length > 1) return undefined;
  return `${node} is the only control plane of *${cluster.name}*: replacing it leaves no etcd member to keep the cluster, which is etcd disaster recovery, not a node replacement. Follow the disaster-recovery runbook.`;
}

/**
 * The runbook's node replacement before anything is touched: the node observed (does it answer,
 * is its Node Ready), the quorum arithmetic, and the VM Terraform will replace, found in its state.
 */
export const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const probe = probeSignals(deps.timeouts.probeMs, signal);
  const address = op.target.node!;
  const role = roleOf(cluster, address);
  const refusals: string[] = [];
  const notes: string[] = [];
  const endpoints = endpointsAvoiding(cluster, address);

  // Without etcd quorum the Kubernetes API cannot answer: that is a refusal with the arithmetic below, not a preflight error.
  const kubeNodes = await session.kube.listNodes(probe()).catch((error: unknown) => {
    refusals.push(`the Kubernetes API does not answer (${errorText(error).split('\n')[0]}), so the node's Node cannot be read`);
    return [];
  });
  const found = findNodeByAddress(kubeNodes, address);
  const view = kubeNodeView(found, cluster.hostLabel);
  const chosen = await talosctlFor(session, view.osVersion);
  // Every call goes through the other control planes: the failed node is never an endpoint.
  const talosctl = withEndpoints(chosen.talosctl, endpoints);
  const seen = (await observeTalosVersions(talosctl, [address], probe(), endpoints)).get(address);
  const answers = seen?.reachable === true;
  const ready = found !== undefined && found.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  notes.push(
    `${address}: ${answers ? `answers talosctl (Talos ${seen.version})` : `does not answer talosctl (${seen?.error ?? 'no answer'})`}; ${
      found === undefined ? 'no Kubernetes Node has its address' : `Node ${view.name ?? '?'} is ${ready ? 'Ready' : 'not Ready'}`
    }.`,
  );
  // A node that answers and is Ready is a retired node: the operator's Start on this plan chooses to replace it,
  // and it is drained and reset gracefully first, as `/talos remove` does, after an approver's word.
  const retired = answers && ready;
  if (retired)
    notes.push(
      `${address} answers talosctl and its Node ${view.name ?? ''} is Ready, so this replaces a *retired* node: it is drained and reset gracefully first (as \`/talos remove\` does: drain, ${role === 'control plane' ? 'leave etcd, ' : ''}wipe, power off), after an approver's word, then its VM is replaced. To keep it, do not Start; to take it out for good, use \`/talos remove ${address}\` instead.`,
    );

  const lookup = role === 'control plane' ? await lookUpMember(talosctl, endpoints, { address, hostname: view.name }, probe) : undefined;
  const hostname = view.name ?? lookup?.member?.hostname ?? cluster.nodeNames?.[address];
  if (hostname === undefined || hostname === '')
    refusals.push(
      `no name is known for ${address} (no Kubernetes Node, no etcd member, no \`nodeNames\` entry), so its VM cannot be found in the Terraform state: add it to \`nodeNames\` in the inventory`,
    );

  if (role === 'control plane') {
    const membership = await observeEtcdMembership(talosctl, cluster.controlPlanes, address, probe());
    if (lookup?.via === undefined) refusals.push(`no other control plane answered \`etcd members\`: ${lookup?.evidence.join('; ') ?? ''}`);
    const isMember = lookup?.member !== undefined;
    const count = Math.max(membership.memberCount, 1);
    const healthy = Math.min(membership.healthy.length, count);
    const quorum = quorumForReplacement(count, healthy, { isMember, replacedHealthy: membership.healthy.includes(address) });
    if (quorum.ok) notes.push(`etcd quorum: ${quorum.explanation}.`);
    else refusals.push(`etcd quorum: ${quorum.explanation}`);
    if (lookup?.member !== undefined)
      notes.push(
        `etcd member of ${hostname ?? address}: \`${lookup.member.id}\`, ${retired ? 'which leaves etcd in its graceful reset' : 'removed at step 2'} after an approver's word.`,
      );
    else if (lookup?.via !== undefined)
      notes.push(`${hostname ?? address} is no longer an etcd member (asked ${lookup.via}): the member removal will be skipped.`);
  }

  // The plan before anything changes: the VM named from Terraform's state, its configuration apply with it, nothing else.
  let vmAddress: string | undefined;
  if (hostname !== undefined && hostname !== '') {
    try {
      const dir = await planTree(deps, cluster, signal);
      const found = await replaceTargets(deps, cluster, dir, hostname, signal);
      if (!found.ok) refusals.push(found.reason);
      else {
        vmAddress = found.targets.vm;
        notes.push(
          `Terraform replaces \`${found.targets.vm}\` (found in its state by the hostname ${hostname})${
            found.targets.configApply ? `; the node's configuration apply is \`${found.targets.configApply}\`` : ''
          }.`,
        );
        const tree = await deps.git.read(dir, signal);
        const planned = await planReplacement(deps, dir, tree, hostname, found.targets, { signal });
        if (planned.refusals.length > 0)
          refusals.push(`the replace plan made now is refused, before anything changes: ${planned.refusals.join('; ')}`);
        else
          notes.push(
            `A replace plan made now (\`tofu plan ${found.targets.replace.map((a) => `-replace=${a}`).join(' ')}\`) holds exactly the replacement: ${planned.judged?.notes.join('; ') ?? ''}. It is planned again, for review, after the member and the Node are gone.`,
          );
      }
    } catch (error) {
      refusals.push(`the Terraform state or the replace plan could not be read: ${errorText(error)}; the VM to replace cannot be checked`);
    }
  }

  const name = hostname ?? address;
  const on = (id: string, kind: Step['kind']): Step => ({ id, kind, node: address, nodeName: name, host: view.host, status: 'pending' });
  const steps: Step[] = [
    { id: 'snapshot', kind: 'snapshot', status: 'pending' },
    // A retired node leaves etcd in its own graceful reset, which is then the first change and asks first.
    ...(retired ? [{ ...on('reset', 'reset-node'), ...(seen.reachable ? { fromVersion: seen.version } : {}) }] : []),
    ...(role === 'control plane' && !retired ? [on('remove-member', 'remove-member')] : []),
    // A failed worker has no member removal: its Node deletion is the first change, and asks an approver first.
    on(role === 'control plane' || retired ? 'delete-node' : WORKER_DELETE_NODE, 'delete-node'),
    on('replace-plan', 'replace-plan'),
    on('tofu-apply', 'tofu-apply'),
    on('join', 'node-join'),
    { id: 'gate', kind: 'replace-gate', status: 'pending' },
  ];
  const data: NodeReplaceData = { hostname: name, vmAddress: vmAddress ?? '', ...(retired ? { retired: true } : {}) };
  const running = answers ? seen.version : view.osVersion;
  return {
    refusals,
    notes,
    steps,
    data,
    target: {
      nodeName: name,
      nodeRole: role === 'control plane' ? 'controlplane' : 'worker',
      // The observed shape, kept with the operation: what the staging was when this replacement ran.
      clusterControlPlanes: cluster.controlPlanes.length,
      ...(running === undefined ? {} : { fromVersion: running, talosVersion: running }),
    },
    // A retired node is drained by its reset: the gate judges the disruption budgets of that drain; a failed one is set aside.
    common: retired
      ? { talosctl, clientRefusal: chosen.refusal, running, where: address, drainNodes: [address] }
      : { talosctl, clientRefusal: chosen.refusal, running, where: address, drainNodes: [], setAside: { address } },
  };
};
