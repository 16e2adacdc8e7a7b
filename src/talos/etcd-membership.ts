import { observeEtcdStatus, type EtcdStatusObservation } from './observe.ts';
import { parseEtcdMembers } from './parse-etcd-members.ts';
import type { Talosctl } from './talosctl.ts';

/** The etcd membership as the quorum arithmetic needs it: how many vote, and which control planes are healthy now. */
export interface EtcdMembership {
  /** Voting members, from `etcd members`; the inventory's control-plane count when that could not be read. */
  memberCount: number;
  /** Control-plane addresses whose member answers `etcd status` without errors and sees a leader. */
  healthy: string[];
  /** Whether `address` is a member, judged by its peer URL; undefined when the membership could not be read. */
  isMember(address: string): boolean | undefined;
  /** What was observed, for the thread. */
  evidence: string[];
}

const NO_LEADER = /^0+$/;

/** The host of an etcd peer URL (`https://10.0.30.12:2380` → `10.0.30.12`, brackets of an IPv6 address dropped). */
export function peerHost(url: string): string {
  return url
    .replace(/^\w+:\/\//, '')
    .replace(/:\d+$/, '')
    .replace(/^\[|\]$/g, '');
}

/**
 * Reads etcd's membership and health through the control planes other than `avoid` (the node
 * about to reboot or leave), so the answer does not depend on that node. `status` is an `etcd
 * status` of `controlPlanes` the caller has just read through those same endpoints: it is not read again.
 */
export async function observeEtcdMembership(
  talosctl: Talosctl,
  controlPlanes: string[],
  avoid: string,
  signal?: AbortSignal,
  status?: EtcdStatusObservation,
): Promise<EtcdMembership> {
  const others = controlPlanes.filter((cp) => cp !== avoid);
  const endpoints = others.length > 0 ? others : controlPlanes;
  const evidence: string[] = [];

  const { rows, nodeErrors } = status ?? (await observeEtcdStatus(talosctl, controlPlanes, signal, endpoints));
  const healthy: string[] = [];
  for (const [index, row] of rows.entries()) {
    const node = row.node ?? (controlPlanes.length === 1 ? controlPlanes[index] : undefined);
    if (node === undefined) continue;
    const ok = row.errors.length === 0 && !NO_LEADER.test(row.leader);
    if (ok) healthy.push(node);
    evidence.push(`${node}: member ${row.member}, leader ${row.leader}${row.errors.length > 0 ? `, errors ${row.errors.join(', ')}` : ''}`);
  }
  for (const error of nodeErrors) evidence.push(`${error.node}: ${error.message}`);

  // Ask a healthy member other than the node itself: its view of the membership is the one that stays.
  const asked = healthy.find((n) => n !== avoid) ?? others[0] ?? controlPlanes[0];
  let peers: string[] | undefined;
  if (asked !== undefined) {
    const members = await talosctl.run(['etcd', 'members'], [asked], { signal, okExitCodes: [0, 1], endpoints });
    try {
      const voting = members.stdout.trim() === '' ? [] : parseEtcdMembers(members.stdout).filter((m) => m.learner !== true);
      if (voting.length > 0) peers = [...new Set(voting.flatMap((m) => m.peerUrls.map(peerHost)))];
    } catch {
      // An unreadable answer leaves the inventory as the count; the evidence says so.
    }
    if (peers === undefined)
      evidence.push(
        `etcd members via ${asked}: ${members.stderr.trim().split('\n').pop() || 'no answer'}; counting the inventory's ${controlPlanes.length} control planes`,
      );
  }
  return {
    memberCount: peers?.length ?? controlPlanes.length,
    healthy,
    isMember: (address) => (peers === undefined ? undefined : peers.includes(address)),
    evidence,
  };
}

/** Whether etcd keeps quorum while `node` reboots: the other healthy members must still be a majority. */
export function quorumWhileRebooting(membership: EtcdMembership, node: string): { ok: boolean; explanation: string } {
  const quorum = Math.floor(membership.memberCount / 2) + 1;
  const others = membership.healthy.filter((n) => n !== node).length;
  const ok = others >= quorum;
  const explanation = `${membership.memberCount} members need ${quorum} for quorum; while ${node} reboots ${others} other healthy ${others === 1 ? 'member remains' : 'members remain'}, which ${ok ? 'keeps' : 'cannot keep'} quorum`;
  return { ok, explanation };
}
