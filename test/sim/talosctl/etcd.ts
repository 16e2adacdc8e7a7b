/** `talosctl etcd status|members|snapshot|remove-member|alarm list` (cmd/talosctl/cmd/talos/etcd.go). */
import { open, rename } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { currentRevision, etcdMembers, etcdService, hasQuorum, leaderSeenBy, raftIndex } from '../cluster-model.ts';
import { buildSnapshot, damageBytes, statusOfBytes } from '../etcd-snapshot-file.ts';
import { realEtcdOf, realSnapshotBytes } from '../etcd-real/attach.ts';
import { wait } from '../exec-io.ts';
import { goQuote, humanizeBytes, multiError, tabwrite } from '../go-format.ts';
import { hasEtcdStorageColumns, isMultiplexingClient } from '../versions.ts';
import type { SimNode } from '../types.ts';
import {
  connect,
  controlPlaneOnly,
  exitAfterPartial,
  fanOut,
  reach,
  reportFailures,
  requireSingleNode,
  successes,
  type NodeResult,
  type Session,
} from './session.ts';

const ETCD_DOWN = 'rpc error: code = Unknown desc = failed to create etcd client: error building etcd client: context deadline exceeded';

export function etcdServing(session: Session, node: SimNode): { error: string } | undefined {
  const notCp = controlPlaneOnly(node, 'etcd');
  if (notCp) return notCp;
  const service = etcdService(session.cluster, node, Date.now(), session.deps.timing);
  if (!service || service.state !== 'Running') return { error: ETCD_DOWN };
  return undefined;
}

export function connected(session: Session): boolean {
  const connection = connect(session);
  if ('error' in connection) {
    session.io.err(`${connection.error}\n`);
    return false;
  }
  return true;
}

export function runEtcdStatus(session: Session): number {
  if (!connected(session)) return 1;
  const { cluster, io } = session;
  const now = Date.now();
  const results = fanOut(session, (node) => {
    const down = etcdServing(session, node);
    if (down) return down;
    return node;
  });
  const failed = reportFailures(session, results, 'error getting status');
  if (failed !== undefined) return failed;
  const rows = [statusHeader(session)];
  const { dbSizeBytes, dbInUseBytes } = cluster.etcd;
  for (const [i, r] of successes(results).entries()) {
    const leader = leaderSeenBy(cluster, r.node);
    const index = raftIndex(cluster, now) - (leader === r.node.etcdMemberId ? 0 : i % 2);
    rows.push(
      statusRow(session, r.address, {
        memberId: r.node.etcdMemberId ?? '',
        dbSize: dbSizeBytes,
        dbSizeInUse: dbInUseBytes,
        leader: leader ?? '0000000000000000',
        raftIndex: index,
        raftTerm: cluster.etcd.raftTerm,
        raftAppliedIndex: index,
        isLearner: r.node.etcdLearner === true,
        errors: leader === undefined ? ['etcdserver: no leader'] : [],
      }),
    );
  }
  io.out(tabwrite(rows));
  return exitAfterPartial(session, results);
}

/** One member's etcd StatusResponse, whichever backend answered it. */
export interface EtcdStatusFacts {
  memberId: string;
  dbSize: number;
  dbSizeInUse: number;
  leader: string;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  isLearner: boolean;
  errors: string[];
}

export function statusHeader(session: Session): string[] {
  const header = ['NODE', 'MEMBER', 'DB SIZE', 'IN USE', 'LEADER', 'RAFT INDEX', 'RAFT TERM', 'RAFT APPLIED INDEX', 'LEARNER'];
  return [...header, ...(hasEtcdStorageColumns(session.clientVersion) ? ['PROTOCOL', 'STORAGE'] : []), 'ERRORS'];
}

export function statusRow(session: Session, address: string, s: EtcdStatusFacts): string[] {
  return [
    address,
    s.memberId,
    humanizeBytes(s.dbSize),
    `${humanizeBytes(s.dbSizeInUse)} (${((s.dbSizeInUse / s.dbSize) * 100).toFixed(2)}%)`,
    s.leader,
    String(s.raftIndex),
    String(s.raftTerm),
    String(s.raftAppliedIndex),
    // A learner reports itself as one until Talos promotes it (etcd StatusResponse.isLearner).
    String(s.isLearner),
    // Talos ships etcd 3.6: its protocol and storage versions, whatever runs underneath (reference/real-etcd.md).
    ...(hasEtcdStorageColumns(session.clientVersion) ? ['3.6.5', '3.6.0'] : []),
    s.errors.join(', '),
  ];
}

export function runEtcdMembers(session: Session): number {
  if (!connected(session)) return 1;
  const { cluster, io } = session;
  const results = fanOut(session, (node) => {
    const down = etcdServing(session, node);
    if (down) return down;
    if (cluster.faults.etcdNoLeader || !hasQuorum(cluster)) return { error: 'rpc error: code = Unknown desc = etcdserver: no leader' };
    // talosctl asks with QueryLocal (cmd/talosctl/cmd/talos/etcd.go v1.13.9), so the node's own etcd answers; a learner
    // refuses MemberList (etcd-io/etcd v3.6.12 server/etcdserver/api/v3rpc/interceptor.go, rpctypes ErrGRPCNotSupportedForLearner).
    if (node.etcdLearner === true)
      return { error: 'rpc error: code = FailedPrecondition desc = etcdserver: rpc not supported for learner' };
    // RaftCluster.Members (etcd-io/etcd v3.6.5 server/etcdserver/api/membership/cluster.go) sorts by member id.
    const id = (m: SimNode): bigint => BigInt(`0x${m.etcdMemberId ?? '0'}`);
    return etcdMembers(cluster).sort((a, b) => (id(a) < id(b) ? -1 : id(a) > id(b) ? 1 : 0));
  });
  const failed = reportFailures(session, results, 'error getting members');
  if (failed !== undefined) return failed;
  const rows = [MEMBERS_HEADER];
  for (const r of successes(results)) {
    for (const m of r.value) rows.push(memberRow(r.address, m.etcdMemberId ?? '', m));
  }
  io.out(tabwrite(rows));
  return exitAfterPartial(session, results);
}

export const MEMBERS_HEADER = ['NODE', 'ID', 'HOSTNAME', 'PEER URLS', 'CLIENT URLS', 'LEARNER'];

/** One member as talosctl lists it; the URLs are the machine's, as Talos advertises them. */
export function memberRow(address: string, id: string, m: { hostname: string; address: string; etcdLearner?: boolean }): string[] {
  return [address, id, m.hostname, `https://${m.address}:2380`, `https://${m.address}:2379`, String(m.etcdLearner === true)];
}

export function runEtcdAlarmList(session: Session): number {
  if (!connected(session)) return 1;
  const results = fanOut(session, (node) => etcdServing(session, node) ?? node);
  const failed = reportFailures(session, results, 'error getting alarms');
  if (failed !== undefined) return failed;
  session.io.out(tabwrite([['NODE', 'MEMBER', 'ALARM']]));
  return exitAfterPartial(session, results);
}

/**
 * Streams a snapshot like talosctl does (cmd/talosctl/cmd/talos/etcd.go v1.13.9): into `<path>.part`,
 * checks `size % 512 == 32` (etcd appends a sha256), renames, then prints etcdutl's Status of the
 * file. A killed client leaves the `.part` file behind. The file's layout and what Status reads
 * from it: ../etcd-snapshot-file.ts. The `snapshotDamage` fault alters the bytes on their way.
 */
export async function runEtcdSnapshot(session: Session): Promise<number> {
  const { cluster, io, deps } = session;
  if (!requireSingleNode(session, 'etcd snapshot')) return 1;
  if (!connected(session)) return 1;
  const address = session.nodes[0] ?? '';
  const reached = reach(session, address);
  if ('error' in reached) {
    io.err(`error reading file: ${reached.error}\n`);
    return 1;
  }
  const down = controlPlaneOnly(reached.node, 'etcd snapshot') ?? etcdServing(session, reached.node);
  if (down) {
    io.err(`error reading file: ${down.error}\n`);
    return 1;
  }
  const path = session.parsed.args[0] ?? '';
  const target = isAbsolute(path) ? path : resolve(session.cwd, path);
  const part = `${target}.part`;
  cluster.etcd.revisionBase += 17 + Math.floor(Math.random() * 50);
  const revision = currentRevision(cluster);
  const real = realEtcdOf(cluster);
  const streamed = real
    ? await realSnapshotBytes(real, reached.node, `${target}.etcd`)
    : buildSnapshot({ revision, totalKeys: cluster.etcd.totalKeys }, 470 + (revision % 30));
  if ('error' in streamed) {
    io.err(`error reading file: ${streamed.error}\n`);
    return 1;
  }
  let bytes = streamed;
  const damage = cluster.faults.snapshotDamage;
  if (damage) {
    // One snapshot only: the fault is consumed by the transfer it damages.
    delete cluster.faults.snapshotDamage;
    bytes = damageBytes(bytes, damage);
  }
  const file = await open(part, 'w', 0o600);
  try {
    const chunks = 4;
    const chunkSize = Math.ceil(bytes.length / chunks);
    for (let i = 0; i < chunks; i++) {
      await file.write(bytes.subarray(i * chunkSize, (i + 1) * chunkSize));
      await wait(Math.max(1, Math.floor(deps.timing.stepMs / 2)), io.signal);
    }
  } finally {
    await file.close();
  }
  const size = bytes.length;
  if (size % 512 !== 32) {
    io.err(`sha256 checksum not found (size ${size})\n`);
    return 1;
  }
  await rename(part, target);
  deps.recorder.event({ cluster: cluster.name, node: reached.node.address, kind: 'snapshot', detail: target });
  io.out(`etcd snapshot saved to ${goQuote(path)} (${size} bytes)\n`);
  const status = real ? await real.snapshotStatus(target) : statusOfBytes(bytes, target);
  if ('crash' in status) {
    io.err(status.crash);
    return 2;
  }
  if ('error' in status) {
    io.err(`${status.error}\n`);
    return 1;
  }
  io.out(
    `snapshot info: hash ${status.hash}, revision ${status.revision}, total keys ${status.totalKeys}, total size ${status.totalSize}\n`,
  );
  return 0;
}

/**
 * `etcdresource.ParseMemberID` (pkg/machinery/resources/etcd/etcd.go, siderolabs/talos v1.13.9):
 * `strconv.ParseUint(s, 16, 64)`, so hex digits only (no `0x`, no hostname), at most 64 bits.
 */
export function parseMemberId(text: string): bigint | string {
  const quoted = goQuote(text);
  if (!/^[0-9a-fA-F]+$/.test(text)) return `strconv.ParseUint: parsing ${quoted}: invalid syntax`;
  const value = BigInt(`0x${text}`);
  if (value > 0xffff_ffff_ffff_ffffn) return `strconv.ParseUint: parsing ${quoted}: value out of range`;
  return value;
}

/**
 * `talosctl etcd remove-member <member ID>` (etcdMemberRemoveCmd, cmd/talosctl/cmd/talos/etcd.go
 * v1.13.9): the id parsed on the client, then EtcdRemoveMemberByID on the node (control planes
 * only; v1alpha1_server.go v1.13.9), which asks etcd through the control planes' client. Errors
 * are printed as they are (root.go `Execute`); success prints nothing.
 */
export function runEtcdRemoveMember(session: Session): number {
  const { cluster, io, deps } = session;
  const id = parseMemberId(session.parsed.args[0] ?? '');
  if (typeof id === 'string') {
    io.err(`error parsing member ID: error parsing etcd member id: ${id}\n`);
    return 1;
  }
  if (!connected(session)) return 1;
  const results = fanOut(session, (node) => {
    const notCp = controlPlaneOnly(node, 'etcd remove member');
    if (notCp) return notCp;
    const error = deps.lifecycle.removeEtcdMember(cluster, id);
    return error === undefined ? node : { error };
  });
  return printRemoveFailures(session, results);
}

/** remove-member's failures as the client version prints them; 0 when every node succeeded. */
export function printRemoveFailures(session: Session, results: NodeResult<SimNode>[]): number {
  const { io } = session;
  const failed = results.filter((r): r is { address: string; error: string } => 'error' in r);
  if (failed.length === 0) return 0;
  // ≥ 1.14 (v1.14.0-rc.1 etcd.go): one request per node, the failures joined as `error from node <node>: <err>`.
  if (isMultiplexingClient(session.clientVersion)) {
    io.err(`${failed.map((f) => `error from node ${f.address}: ${f.error}`).join('\n')}\n`);
    return 1;
  }
  // Before: one node gives the proxied call's own error; several, FilterMessages' aggregate of the failed ones.
  io.err(`${results.length === 1 ? failed[0]!.error : multiError(failed.map((f) => `${f.address}: ${f.error}`))}\n`);
  return 1;
}
