import { setTimeout as sleep } from 'node:timers/promises';
import type { ChatMessage, ChatPort } from '../chat/chat-port.ts';
import type { Logger } from '../log/logger.ts';
import type { AuditEntry, Operation } from './operation.ts';
import type { OperationStore } from './operation-store.ts';
import type { RunLease } from './run-lease.ts';

/**
 * The audit trail of an operation: each entry is numbered and stored with the
 * operation (for the maintenance record) and posted as a reply in its thread.
 */
export interface Audit {
  /**
   * Stores the entry, then posts every entry not yet in the thread, in order. A Slack failure
   * does not fail the caller: the entry is kept and a later `flush` posts it.
   *
   * @param message the reply's text and blocks, or a function of the operation as changed
   * @param change a change of the operation written together with the entry (a step's end and
   *   its entry), so a run that dies in between cannot leave one without the other
   */
  record(
    opId: string,
    entry: { actor: string; event: string; detail?: string },
    message?: ChatMessage | ((op: Operation) => ChatMessage),
    change?: (op: Operation) => Operation,
  ): Promise<Operation>;
  /** Posts the stored entries missing from the thread, oldest first; true when none is left. */
  flush(opId: string): Promise<boolean>;
}

export interface AuditOptions {
  now?: () => Date;
  /** Lets one process at a time post an operation's entries, so replies keep their order and none is posted twice. */
  postLease: RunLease;
  logger?: Logger;
  /** Attempts per entry within one flush, and the first pause between them in ms (doubling). Default 6 and 200. */
  attempts?: number;
  backoffMs?: number;
}

const unposted = (e: AuditEntry): boolean => e.post !== undefined && e.ts === undefined;

/**
 * Posting is idempotent by observation, as acting on a node is: an entry whose post went out
 * without an answer (the process died, Slack failed after writing) is looked for in the thread
 * before it is posted again.
 */
export function createAudit(store: OperationStore, chat: ChatPort, options: AuditOptions): Audit {
  const { now = () => new Date(), postLease, logger, attempts = 6, backoffMs = 200 } = options;
  const setEntry = (opId: string, seq: number, change: (e: AuditEntry) => AuditEntry) =>
    store.update(opId, (o) => ({ ...o, audit: o.audit.map((e) => (e.seq === seq ? change(e) : e)) }));

  /** Posts one entry, or adopts the reply an earlier attempt left; throws when Slack fails. */
  const postOne = async (op: Operation, rootTs: string, entry: AuditEntry): Promise<void> => {
    let ts: string | undefined;
    if (entry.attempted === true) {
      const prefix = `#${entry.seq} `;
      ts = (await chat.replies(op.channel, rootTs)).find((r) => r.text.startsWith(prefix))?.ts;
    }
    if (ts === undefined) {
      if (entry.attempted !== true) await setEntry(op.id, entry.seq, (e) => ({ ...e, attempted: true }));
      ts = (await chat.reply(op.channel, rootTs, entry.post!, { once: true })).ts;
    }
    const posted = ts;
    await setEntry(op.id, entry.seq, (e) => {
      const done = { ...e, ts: posted };
      delete done.post;
      delete done.attempted;
      return done;
    });
  };

  /** Tries one entry a few times; false when Slack kept failing. */
  const postWithRetries = async (op: Operation, rootTs: string, first: AuditEntry): Promise<boolean> => {
    let entry = first;
    for (let attempt = 1; ; attempt += 1) {
      try {
        await postOne(op, rootTs, entry);
        return true;
      } catch (error) {
        if (attempt >= attempts) {
          logger?.warn({ op: op.id, cluster: op.cluster, seq: entry.seq, err: (error as Error).message }, 'audit reply not posted; a later flush posts it');
          return false;
        }
        await sleep(backoffMs * 2 ** (attempt - 1));
        // Re-read: the entry now counts as attempted, so the next try looks in the thread first.
        const latest = (await store.get(op.id))?.audit.find((e) => e.seq === entry.seq);
        if (latest === undefined || !unposted(latest)) return true;
        entry = latest;
      }
    }
  };

  /** `lost` aborts when another process took the post lease (Redis lost it): that one posts the rest. */
  const flushHeld = async (opId: string, lost: AbortSignal): Promise<boolean> => {
    for (;;) {
      const op = await store.get(opId);
      const entry = op?.audit.find(unposted);
      if (!op || entry === undefined) return true;
      if (lost.aborted || op.rootTs === undefined || !(await postWithRetries(op, op.rootTs, entry))) return false;
    }
  };

  const flush = (opId: string): Promise<boolean> => postLease.hold(opId, (lost) => flushHeld(opId, lost));

  return {
    async record(opId, entry, message, change) {
      const at = now().toISOString();
      const { op } = await store.update(opId, (current) => {
        const o = change ? change(current) : current;
        const seq = o.audit.length + 1;
        const reply = typeof message === 'function' ? message(o) : message;
        const text = reply?.text ?? `${entry.event}${entry.detail ? `: ${entry.detail}` : ''}`;
        // Kept until posted; without a root message yet, the first flush after it exists posts it.
        const post = { text: `#${seq} ${text}`, ...(reply?.blocks ? { blocks: reply.blocks } : {}) };
        return { ...o, audit: [...o.audit, { seq, at, ...entry, post }] };
      });
      await flush(opId);
      return (await store.get(opId)) ?? op;
    },
    flush,
  };
}
