/**
 * `talosctl etcd status|members|remove-member` and the snapshot's bytes and Status when the cluster
 * runs real etcd: the answers are etcd's, the output talosctl's, printed by the same row code as the
 * model's (../talosctl/etcd.ts). Talos's own wrapping of etcd's errors: v1alpha1_server.go v1.13.9.
 */
import { tabwrite } from '../go-format.ts';
import type { SimNode } from '../types.ts';
import {
  connected,
  etcdServing,
  MEMBERS_HEADER,
  memberRow,
  parseMemberId,
  printRemoveFailures,
  statusHeader,
  statusRow,
  type EtcdStatusFacts,
} from '../talosctl/etcd.ts';
import {
  controlPlaneOnly,
  exitAfterPartial,
  reach,
  reportFailures,
  successes,
  type NodeResult,
  type Session,
} from '../talosctl/session.ts';
import type { RealEtcdCluster, RealMember } from './etcd-cluster.ts';

const NO_LEADER = 'etcdserver: no leader';

/** etcd's error as the gRPC status Talos passes on: a learner's refusal is Unavailable (rpctypes), the rest Unknown. */
function grpcError(cause: string): string {
  return cause === 'etcdserver: rpc not supported for learner'
    ? `rpc error: code = Unavailable desc = ${cause}`
    : `rpc error: code = Unknown desc = ${cause}`;
}

/** The per-node calls run side by side, as apid proxies them: each is an etcdctl process against that node's member. */
function fanOutAsync<T>(session: Session, fn: (node: SimNode) => Promise<T | { error: string }>): Promise<NodeResult<T>[]> {
  return Promise.all(
    session.nodes.map(async (address): Promise<NodeResult<T>> => {
      const reached = reach(session, address);
      if ('error' in reached) return { address, error: reached.error };
      const value = await fn(reached.node);
      return value !== null && typeof value === 'object' && 'error' in value
        ? { address, error: value.error }
        : { address, node: reached.node, value: value as T };
    }),
  );
}

export async function runRealEtcdStatus(session: Session, etcd: RealEtcdCluster): Promise<number> {
  if (!connected(session)) return 1;
  const results = await fanOutAsync<EtcdStatusFacts>(session, async (node) => {
    const down = etcdServing(session, node);
    if (down) return down;
    const status = await etcd.status(node.hostname);
    if ('error' in status) return { error: grpcError(status.error) };
    const noLeader = session.cluster.faults.etcdNoLeader === true || status.leader === '0000000000000000';
    return {
      ...status,
      leader: noLeader ? '0000000000000000' : status.leader,
      errors: noLeader ? [...status.errors, NO_LEADER] : status.errors,
    };
  });
  const failed = reportFailures(session, results, 'error getting status');
  if (failed !== undefined) return failed;
  const rows = [statusHeader(session), ...successes(results).map((r) => statusRow(session, r.address, r.value))];
  session.io.out(tabwrite(rows));
  return exitAfterPartial(session, results);
}

export async function runRealEtcdMembers(session: Session, etcd: RealEtcdCluster): Promise<number> {
  if (!connected(session)) return 1;
  const { cluster } = session;
  const results = await fanOutAsync<RealMember[]>(session, async (node) => {
    const down = etcdServing(session, node);
    if (down) return down;
    if (cluster.faults.etcdNoLeader) return { error: grpcError(NO_LEADER) };
    const members = await etcd.members(node.hostname);
    return 'error' in members ? { error: grpcError(members.error) } : members;
  });
  const failed = reportFailures(session, results, 'error getting members');
  if (failed !== undefined) return failed;
  const rows = [MEMBERS_HEADER];
  for (const r of successes(results)) {
    for (const m of r.value) {
      // A learner that has not started yet has no name: it is known by the id its add returned.
      const owner = cluster.nodes.find((n) => n.hostname === m.name) ?? cluster.nodes.find((n) => n.etcdMemberId === m.id);
      rows.push(memberRow(r.address, m.id, { hostname: m.name, address: owner?.address ?? '', etcdLearner: m.isLearner }));
    }
  }
  session.io.out(tabwrite(rows));
  return exitAfterPartial(session, results);
}

/**
 * EtcdRemoveMemberByID through etcd's MemberRemove with its strict reconfiguration check; on success
 * the machine whose member it was learns it (its etcd stops for good, as Talos's does).
 */
export async function runRealEtcdRemoveMember(session: Session, etcd: RealEtcdCluster): Promise<number> {
  const { cluster, io, deps } = session;
  const id = parseMemberId(session.parsed.args[0] ?? '');
  if (typeof id === 'string') {
    io.err(`error parsing member ID: error parsing etcd member id: ${id}\n`);
    return 1;
  }
  if (!connected(session)) return 1;
  const hex = id.toString(16).padStart(16, '0');
  const decimal = id.toString(10);
  const results = await fanOutAsync<SimNode>(session, async (node) => {
    const notCp = controlPlaneOnly(node, 'etcd remove member');
    if (notCp) return notCp;
    if (cluster.faults.etcdNoLeader)
      return { error: `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal}: ${NO_LEADER}` };
    const refused = await etcd.removeMember(hex);
    if (refused === 'etcdserver: member not found') {
      return { error: `rpc error: code = NotFound desc = failed to remove member ${decimal}: ${refused}` };
    }
    if (refused !== undefined)
      return { error: `rpc error: code = Unknown desc = failed to remove member: failed to remove member ${decimal}: ${refused}` };
    deps.lifecycle.etcdMemberRemoved(cluster, hex);
    return node;
  });
  return printRemoveFailures(session, results);
}
