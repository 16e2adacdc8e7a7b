import type { Operation } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { section } from '../../../src/chat/blocks.ts';

/** The runbook's steps after a removal: Terraform and the bot's inventory still have the node. */
export function removalFollowUp(op: Operation, node: string, role: 'control plane' | 'worker'): ChatMessage {
  const lines = [
    `*Next (runbook):* ${node} is reset and out of the cluster; Terraform still declares it.`,
    `1. Remove the ${role} entry for ${node} from the ${op.cluster} \`talos_nodes\` inventory.`,
    '2. Run `tofu plan`: it must destroy only that VM. If it replaces `talos_machine_secrets` or any other VM, stop.',
    '3. Apply Terraform.',
    `4. Remove ${node} from \`${role === 'worker' ? 'workers' : 'controlPlanes'}\` in this bot's cluster inventory, or every health gate will look for it.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
