import { section } from '../../src/chat/blocks.ts';
import type { Block, ChatMessage, ChatPort } from '../../src/port/chat-port.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { AuditEntry, Operation } from '../../src/ops/operation.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import type { RunLease } from '../../src/ops/run-lease.ts';
import { systemClock, type Clock } from '../../src/time/clock.ts';

/**
 * An entry's own reply. `broadcast`: the reply is also shown in the channel (`reply_broadcast`), so
 * Slack notifies the people it mentions (an approval request's approvers), and the entry leads the
 * reply: its first line is what a notification shows.
 */
export interface AuditPost extends ChatMessage {
  broadcast?: boolean;
}

/**
 * The audit trail of an operation: each entry is numbered and stored with the
 * operation (for the maintenance record) and posted as a reply in its thread.
 */
export interface Audit {
  /**
   * Stores the entry, then posts every entry not yet in the thread as one reply. A Slack failure
   * does not fail the caller: the entry is kept and a later `flush` posts it.
   *
   * @param message the entry's text and blocks, or a function of the operation as changed
   * @param change a change of the operation written together with the entry (a step's end and
   *   its entry), so a run that dies in between cannot leave one without the other. It returns
   *   undefined when the operation is no longer in the state it expects (a compare-and-set):
   *   then neither the change nor the entry is written, and the operation is returned as it is.
   */
  record(
    opId: string,
    entry: { actor: string; event: string; detail?: string },
    message?: AuditPost | ((op: Operation) => AuditPost),
    change?: (op: Operation) => Operation | undefined,
  ): Promise<Operation>;
  /**
   * Stores the entry without posting it: it goes to the thread in the reply of the next
   * recorded entry. Used where another message already tells the channel (an edited approval
   * request says the step has started), so the thread costs one Slack call per step.
   */
  note(
    opId: string,
    entry: { actor: string; event: string; detail?: string },
    change?: (op: Operation) => Operation | undefined,
  ): Promise<Operation>;
  /**
   * A person's decision (a click) and its entry in one compare-and-set write, so a process that
   * dies right after the decision cannot leave it without its entry. `change` returns undefined
   * when the operation is not in the state the decision expects: then nothing is written and
   * `changed` is false. `hold` notes the entry (it goes out with the next reply); otherwise it
   * is posted now.
   */
  transition(
    opId: string,
    entry: { actor: string; event: string; detail?: string },
    change: (op: Operation) => Operation | undefined,
    options?: { hold?: boolean },
  ): Promise<{ op: Operation; changed: boolean }>;
  /** Posts the stored entries missing from the thread, oldest first; true when none is left but noted ones. */
  flush(opId: string): Promise<boolean>;
}

export interface AuditOptions {
  /** Timestamps of the entries and the pauses between attempts. Default the system's clock. */
  clock?: Clock;
  /** Lets one process at a time post an operation's entries, so replies keep their order and none is posted twice. */
  postLease: RunLease;
  logger?: Logger;
  /** Attempts per entry within one flush, and the first pause between them in ms (doubling). Default 6 and 200. */
  attempts?: number;
  backoffMs?: number;
}

const unposted = (e: AuditEntry): boolean => e.post !== undefined && e.ts === undefined;

/** Whether a flush would post something now: the thread exists and an entry that is not held waits for it. */
export function awaitsPosting(op: Operation): boolean {
  return op.rootTs !== undefined && nextBatch(op).length > 0;
}

/** Entry numbers a reply carries: each entry is a line (or block) that starts `#<seq> `. */
export function seqsIn(text: string): number[] {
  return [...text.matchAll(/^#(\d+) /gm)].map((m) => Number(m[1]));
}

/** What an entry says when it has no message of its own. */
function entryText(e: { event: string; detail?: string }): string {
  return `${e.event}${e.detail ? `: ${e.detail}` : ''}`;
}

/** An entry as its line in the thread. */
function entryLine(e: AuditEntry): string {
  return `#${e.seq} ${entryText(e)}`;
}

/**
 * The new content of a reply that carries entries, for an edit of its own entry (an approval
 * request decided or expired): it keeps its number and leads, as the request led when posted;
 * the other entries it carried stay after it.
 */
export function editCarrier(op: Operation, ts: string, ownSeq: number | undefined, message: ChatMessage): ChatMessage {
  // Entries sent with it but not yet adopted (Slack wrote the reply, then answered 5xx) stay too: they are found by their lines.
  const carried = (e: AuditEntry): boolean =>
    e.ts === ts || (ownSeq !== undefined && e.ts === undefined && e.attempted === true && e.seq < ownSeq);
  const others = op.audit.filter((e) => e.seq !== ownSeq && carried(e)).map(entryLine);
  if (ownSeq === undefined && others.length === 0) return message;
  const own = ownSeq === undefined ? message.text : `#${ownSeq} ${message.text}`;
  const blocks = message.blocks ?? [section(message.text)];
  return {
    text: [own, ...others].join('\n'),
    blocks: [...(ownSeq === undefined ? blocks : numbered(blocks, ownSeq)), ...others.map(section)],
  };
}

/** The entry's number in front of its first section's text, as the thread shows every entry. */
function numbered(blocks: Block[], seq: number): Block[] {
  const [first, ...rest] = blocks;
  const text = first?.['text'] as { type?: string; text?: string } | undefined;
  if (first?.['type'] !== 'section' || typeof text?.text !== 'string') return [section(`#${seq}`), ...blocks];
  return [{ ...first, text: { ...text, text: `#${seq} ${text.text}` } }, ...rest];
}

/** Slack shows up to 50 blocks in a message; a long backlog goes out in several replies. */
const MAX_BLOCKS = 40;

/** The entries the next reply carries: the unposted ones up to the last that is not held. */
function nextBatch(op: Operation): AuditEntry[] {
  const pending = op.audit.filter(unposted);
  const last = pending.findLastIndex((e) => e.hold !== true);
  const batch: AuditEntry[] = [];
  let blocks = 0;
  for (const entry of pending.slice(0, last + 1)) {
    const size = entry.post!.blocks?.length ?? 1;
    if (batch.length > 0 && blocks + size > MAX_BLOCKS) break;
    batch.push(entry);
    blocks += size;
  }
  return batch;
}

/**
 * One reply for several entries: their lines as the text, their blocks (or a section each). A
 * broadcast entry (an approval request) leads, so the question is what the channel and a
 * notification show first; the entries it carries follow in order. Every entry keeps its `#<seq> `
 * line start, by which `seqsIn` finds it in any order.
 */
export function batchMessage(entries: readonly AuditEntry[]): ChatMessage {
  const ordered = [...entries.filter((e) => e.post!.broadcast === true), ...entries.filter((e) => e.post!.broadcast !== true)];
  if (ordered.length === 1)
    return { text: ordered[0]!.post!.text, ...(ordered[0]!.post!.blocks ? { blocks: ordered[0]!.post!.blocks } : {}) };
  return { text: ordered.map((e) => e.post!.text).join('\n'), blocks: ordered.flatMap((e) => e.post!.blocks ?? [section(e.post!.text)]) };
}

/**
 * Posting is idempotent by observation, as acting on a node is: entries whose post went out
 * without an answer (the process died, Slack failed after writing) are looked for in the
 * thread before they are posted again.
 */
export function createAudit(store: OperationStore, chat: ChatPort, options: AuditOptions): Audit {
  const { clock = systemClock, postLease, logger, attempts = 6, backoffMs = 200 } = options;
  const setEntries = (opId: string, seqs: readonly number[], change: (e: AuditEntry) => AuditEntry) =>
    store.update(opId, (o) => ({ ...o, audit: o.audit.map((e) => (seqs.includes(e.seq) ? change(e) : e)) }));
  const markPosted = (opId: string, seqs: readonly number[], ts: string) =>
    setEntries(opId, seqs, (e) => {
      const done = { ...e, ts };
      delete done.post;
      delete done.attempted;
      delete done.hold;
      return done;
    });

  /** Posts the next batch, or adopts the reply an earlier attempt left; throws when Slack fails. */
  const postBatch = async (op: Operation, rootTs: string, batch: AuditEntry[]): Promise<void> => {
    const first = batch[0]!;
    if (first.attempted === true) {
      const found = (await chat.replies(op.channel, rootTs)).find((r) => seqsIn(r.text).includes(first.seq));
      if (found !== undefined) {
        const carried = new Set(seqsIn(found.text));
        await markPosted(
          op.id,
          op.audit.filter((e) => unposted(e) && carried.has(e.seq)).map((e) => e.seq),
          found.ts,
        );
        return;
      }
    }
    const seqs = batch.map((e) => e.seq);
    if (batch.some((e) => e.attempted !== true)) await setEntries(op.id, seqs, (e) => ({ ...e, attempted: true }));
    // A broadcast shows the reply in the channel as well: one message whose buttons are edited in
    // place, while the thread keeps the operation's history together.
    const broadcast = batch.some((e) => e.post!.broadcast === true);
    const { ts } = await chat.reply(op.channel, rootTs, batchMessage(batch), { once: true, ...(broadcast ? { broadcast } : {}) });
    await markPosted(op.id, seqs, ts);
  };

  /** Tries the next batch a few times; false when Slack kept failing. */
  const postWithRetries = async (opId: string): Promise<boolean> => {
    for (let attempt = 1; ; attempt += 1) {
      const op = await store.get(opId);
      const batch = op === undefined ? [] : nextBatch(op);
      if (op === undefined || batch.length === 0 || op.rootTs === undefined) return true;
      try {
        await postBatch(op, op.rootTs, batch);
        return true;
      } catch (error) {
        if (attempt >= attempts) {
          logger?.warn(
            { op: op.id, cluster: op.cluster, seq: batch[0]!.seq, err: (error as Error).message },
            'audit reply not posted; a later flush posts it',
          );
          return false;
        }
        // The next try re-reads the entries: now marked attempted, they are looked for in the thread first.
        await clock.sleep(backoffMs * 2 ** (attempt - 1));
      }
    }
  };

  /** `lost` aborts when another process took the post lease (Redis lost it): that one posts the rest. */
  const flushHeld = async (opId: string, lost: AbortSignal): Promise<boolean> => {
    for (;;) {
      const op = await store.get(opId);
      if (!op || nextBatch(op).length === 0) return true;
      if (lost.aborted || op.rootTs === undefined || !(await postWithRetries(opId))) return false;
    }
  };

  const flush = (opId: string): Promise<boolean> => postLease.hold(opId, (lost) => flushHeld(opId, lost));

  const append = async (
    opId: string,
    entry: { actor: string; event: string; detail?: string },
    hold: boolean,
    message?: AuditPost | ((op: Operation) => AuditPost),
    change?: (op: Operation) => Operation | undefined,
  ) => {
    const at = clock.now().toISOString();
    return store.update(opId, (current) => {
      const o = change ? change(current) : current;
      if (o === undefined) return undefined;
      const seq = o.audit.length + 1;
      const reply = typeof message === 'function' ? message(o) : message;
      const text = reply?.text ?? entryText(entry);
      // Kept until posted; without a root message yet, the first flush after it exists posts it.
      // A broadcast (an approval request) is what a phone's notification shows: it leads with its own words, and its number follows.
      const post = {
        text: reply?.broadcast === true ? `${text}\n#${seq} ${entry.event}` : `#${seq} ${text}`,
        ...(reply?.blocks ? { blocks: reply.blocks } : {}),
        ...(reply?.broadcast === true ? { broadcast: true } : {}),
      };
      return { ...o, audit: [...o.audit, { seq, at, ...entry, post, ...(hold ? { hold } : {}) }] };
    });
  };

  return {
    async transition(opId, entry, change, options = {}) {
      const written = await append(opId, entry, options.hold === true, undefined, change);
      if (!written.changed || options.hold === true) return written;
      await flush(opId);
      return { op: (await store.get(opId)) ?? written.op, changed: true };
    },
    async record(opId, entry, message, change) {
      const { op } = await append(opId, entry, false, message, change);
      await flush(opId);
      return (await store.get(opId)) ?? op;
    },
    async note(opId, entry, change) {
      return (await append(opId, entry, true, undefined, change)).op;
    },
    flush,
  };
}
