import type { Operation } from '../ops/operation.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { escapeMrkdwn, mentionUser, section } from './blocks.ts';

/**
 * A completed operation's follow-up, addressed to the operator who started it: the Terraform
 * steps it lists are theirs to do, so Slack notifies them.
 */
export function toOperator(op: Operation, followUp: ChatMessage): ChatMessage {
  const operator = mentionUser(op.startedBy ?? op.requestedBy);
  const [first, ...rest] = followUp.blocks ?? [section(escapeMrkdwn(followUp.text))];
  const text = first?.['text'] as { type?: string; text?: string } | undefined;
  const addressed =
    first?.['type'] === 'section' && typeof text?.text === 'string'
      ? [{ ...first, text: { ...text, text: `${operator} ${text.text}` } }]
      : [section(operator), ...(first ? [first] : [])];
  return { text: `${operator} ${followUp.text}`, blocks: [...addressed, ...rest] };
}
