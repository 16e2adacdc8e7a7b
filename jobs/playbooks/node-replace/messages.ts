import { section } from '../../../src/chat/blocks.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { replaceData } from './data.ts';

/** What the record states of a completed replacement: which member left, which joined, the VM and the plan. */
export function replaceValidation(op: Operation, gate: string): string {
  const data = replaceData(op);
  const removed = data.removedMember ? `etcd member ${data.removedMember.id} (${data.removedMember.hostname}) removed` : undefined;
  const joined = data.joinedMember ? `member ${data.joinedMember.id} (${data.joinedMember.hostname}) joined and votes` : undefined;
  const members = [removed, joined].filter((p) => p !== undefined).join(', ');
  const plan = data.terraform?.planSha256 ? ` (plan sha256 ${data.terraform.planSha256.slice(0, 12)}…)` : '';
  return `${data.hostname} (${op.target.node ?? '?'}) replaced: ${members === '' ? 'worker, no etcd member' : members}; VM ${data.vmAddress} replaced${plan}; ${gate}`;
}

/** What remains after a replacement: nothing in the inventories, since the same hostname and address came back. */
export function replaceFollowUp(op: Operation): ChatMessage {
  const data = replaceData(op);
  const lines = [
    `*Replaced* ${data.hostname} (${op.target.node ?? '?'}) on ${op.cluster}: the new node joined${data.joinedMember ? ` as etcd member \`${data.joinedMember.id}\`` : ''} and the health gate passed.`,
    "*Next (runbook):* nothing changes in the Terraform inventory or in this bot's inventory: the same hostname and address came back.",
    `1. Check that Longhorn rebuilt the replicas the old node held, and that workloads spread back onto ${data.hostname}.`,
    `2. If the old machine's hardware failed, record it with the host${op.snapshot ? `; the snapshot taken before is \`${op.snapshot.id}\`` : ''}.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
