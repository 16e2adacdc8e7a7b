import { peerHost } from '../../../src/talos/etcd-membership.ts';
import { parseEtcdMembers, type EtcdMember } from '../../../src/talos/parse-etcd-members.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

/** What the remaining control planes say of the replaced node's etcd membership. */
export interface MemberLookup {
  /** Its member, found by its peer address in the live list (never by a name), or undefined when none is listed. */
  member?: EtcdMember;
  /** A member that carries the name asked about but another peer address: the name belongs to another machine. */
  named?: EtcdMember;
  /** The control plane that answered; undefined when none did, so whether it is a member is unknown. */
  via?: string;
  evidence: string[];
}

/**
 * Looks up the member of `node.address` by its peer address through `through`, one control plane at
 * a time (for a failed node: the others, never the node itself); the first that answers is the view
 * that counts. A name is never what picks the member: a stored name may be stale or tampered with,
 * and removing another member than the one the quorum arithmetic was made for can lose quorum.
 * `node.hostname` only reports a member of that name at another address (`named`).
 */
export async function lookUpMember(
  talosctl: Talosctl,
  through: readonly string[],
  node: { address: string; hostname?: string },
  signal: () => AbortSignal,
): Promise<MemberLookup> {
  const others = [...through];
  const evidence: string[] = [];
  for (const via of others) {
    const result = await talosctl.run(['etcd', 'members'], [via], { signal: signal(), okExitCodes: [0, 1], endpoints: others });
    if (result.exitCode !== 0 || result.stdout.trim() === '') {
      evidence.push(`etcd members via ${via}: ${result.stderr.trim().split('\n').pop() || 'no answer'}`);
      continue;
    }
    let members: EtcdMember[];
    try {
      members = parseEtcdMembers(result.stdout);
    } catch (error) {
      evidence.push(`etcd members via ${via}: unreadable (${error instanceof Error ? error.message : String(error)})`);
      continue;
    }
    const member = members.find((m) => m.peerUrls.some((u) => peerHost(u) === node.address));
    const named = members.find(
      (m) => node.hostname !== undefined && m.hostname === node.hostname && !m.peerUrls.some((u) => peerHost(u) === node.address),
    );
    evidence.push(
      `etcd members via ${via}: ${members.map((m) => `${m.hostname || '(not started)'} ${m.id}${m.learner === true ? ' learner' : ''}`).join(', ')}`,
    );
    return { ...(member ? { member } : {}), ...(named ? { named } : {}), via, evidence };
  }
  return { evidence };
}
