import type { Operation } from '../../../src/ops/operation.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { escapeMrkdwn, section } from '../../../src/chat/blocks.ts';

/** What the thread says once a node is back on its previous image: what it runs, and what not to do until the incident is resolved. */
export function rollbackFollowUp(op: Operation, node: string, version: string, others: string[]): ChatMessage {
  const lines = [
    `↩️ *${node} was rolled back:* it now runs ${version} (ran ${op.target.fromVersion ?? '?'}) and is Ready.`,
    ...(others.length > 0 ? [`Other nodes: ${others.join('; ')}.`] : []),
    '• Investigate the failure before trying the upgrade again.',
    '• Do not move the Terraform `talos_version` declaration until the incident is resolved. If you already changed it, revert that change before the next apply.',
  ];
  return { text: lines.join('\n'), blocks: [section(escapeMrkdwn(lines.join('\n')))] };
}
