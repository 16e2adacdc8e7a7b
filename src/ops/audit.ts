import type { ChatMessage, ChatPort } from '../chat/chat-port.ts';
import type { Operation } from './operation.ts';
import type { OperationStore } from './operation-store.ts';

/**
 * The audit trail of an operation: each entry is numbered and stored with the
 * operation (for the maintenance record) and posted as a reply in its thread.
 */
export interface Audit {
  record(opId: string, entry: { actor: string; event: string; detail?: string }, message?: ChatMessage): Promise<Operation>;
}

export function createAudit(store: OperationStore, chat: ChatPort, now: () => Date = () => new Date()): Audit {
  return {
    async record(opId, entry, message) {
      const at = now().toISOString();
      const { op } = await store.update(opId, (o) => ({ ...o, audit: [...o.audit, { seq: o.audit.length + 1, at, ...entry }] }));
      if (op.rootTs !== undefined) {
        const seq = op.audit.length;
        const text = message?.text ?? `${entry.event}${entry.detail ? `: ${entry.detail}` : ''}`;
        await chat.reply(op.channel, op.rootTs, { text: `#${seq} ${text}`, blocks: message?.blocks });
      }
      return op;
    },
  };
}
