import type { Operation } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { section } from '../../../src/chat/blocks.ts';
import type { DeclaredNodes } from '../../../src/config/inventory.ts';

/**
 * The runbook's steps after a removal: Terraform still declares the node. The bot's own inventory
 * needs an edit only where it lists the node (its node lists are assertions); otherwise the next
 * operation finds the cluster without it.
 */
export function removalFollowUp(op: Operation, node: string, role: 'control plane' | 'worker', declared: DeclaredNodes): ChatMessage {
  const key = role === 'worker' ? 'workers' : 'controlPlanes';
  const listed = (declared[key] ?? []).includes(node);
  const lines = [
    `*Next (runbook):* ${node} is reset and out of the cluster; Terraform still declares it, so until its VM is gone the health gate names it as a Terraform node that never joined.`,
    `1. Remove the ${role} entry for ${node} from the ${op.cluster} \`talos_nodes\` inventory.`,
    '2. Run `tofu plan`: it must destroy only that VM. If it replaces `talos_machine_secrets` or any other VM, stop.',
    '3. Apply Terraform.',
    listed
      ? `4. This bot's inventory lists ${node} under \`${key}\`: drop it there (or leave the node lists out, as the bot finds the nodes itself), or every health gate names it as gone.`
      : `Nothing to edit in this bot's inventory: the next operation finds ${op.cluster} without ${node}.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
