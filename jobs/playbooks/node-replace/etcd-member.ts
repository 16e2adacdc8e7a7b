import { peerHost } from '../../../src/talos/etcd-membership.ts';
import { parseEtcdMembers, type EtcdMember } from '../../../src/talos/parse-etcd-members.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

/** What the remaining control planes say of the replaced node's etcd membership. */
export interface MemberLookup {
  /** Its member (by peer address, or by name for a member that never started), or undefined when none is listed. */
  member?: EtcdMember;
  /** The control plane that answered; undefined when none did, so whether it is a member is unknown. */
  via?: string;
  evidence: string[];
}

/**
 * Looks up the member of `node.address` (or named `node.hostname`) through `through`, one control
 * plane at a time (for a failed node: the others, never the node itself); the first that answers
 * is the view that counts.
 */
export async function lookUpMember(
  talosctl: Talosctl,
  through: readonly string[],
  node: { address?: string; hostname?: string },
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
    const member = members.find(
      (m) =>
        (node.address !== undefined && m.peerUrls.some((u) => peerHost(u) === node.address)) ||
        (node.hostname !== undefined && m.hostname === node.hostname),
    );
    evidence.push(
      `etcd members via ${via}: ${members.map((m) => `${m.hostname || '(not started)'} ${m.id}${m.learner === true ? ' learner' : ''}`).join(', ')}`,
    );
    return { member, via, evidence };
  }
  return { evidence };
}
