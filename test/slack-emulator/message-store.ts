import type { TsClock } from './ts-clock.ts';
import type { Ephemeral, JsonObject, Message, MessageFile, MessageMetadata, MessageVersion } from './types.ts';

export interface NewMessage {
  text: string;
  user?: string;
  bot_id?: string;
  app_id?: string;
  team?: string;
  thread_ts?: string;
  broadcast?: boolean;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
  metadata?: MessageMetadata;
  files?: MessageFile[];
}

/** Fields of an edit; an absent field keeps its value, as `chat.update` does for blocks and metadata. */
export interface MessageChange {
  text: string;
  blocks?: JsonObject[];
  attachments?: JsonObject[];
  metadata?: MessageMetadata;
  editor: string;
  source: MessageVersion['source'];
}

interface StoredMessage {
  message: Message;
  versions: MessageVersion[];
}

/** Channel history, threads, edits and ephemerals. Readers return copies. */
export class MessageStore {
  readonly #clock: TsClock;
  readonly #channels = new Map<string, Map<string, StoredMessage>>();
  readonly #ephemerals: Ephemeral[] = [];

  constructor(clock: TsClock) {
    this.#clock = clock;
  }

  nextTs(): string {
    return this.#clock.next();
  }

  post(channel: string, input: NewMessage): Message {
    const ts = this.#clock.next();
    const message: Message = { type: 'message', channel, ts, text: input.text };
    if (input.broadcast === true && input.thread_ts !== undefined) message.subtype = 'thread_broadcast';
    assignDefined(message, {
      user: input.user,
      bot_id: input.bot_id,
      app_id: input.app_id,
      team: input.team,
      thread_ts: input.thread_ts,
      blocks: input.blocks,
      attachments: input.attachments,
      metadata: input.metadata,
      files: input.files,
    });
    this.#channel(channel).set(ts, { message, versions: [versionOf(message, 'post')] });
    if (input.thread_ts !== undefined) this.#attachReply(channel, input.thread_ts);
    return structuredClone(message);
  }

  update(channel: string, ts: string, change: MessageChange): Message | undefined {
    const stored = this.#channel(channel).get(ts);
    if (stored === undefined) return undefined;
    const message = stored.message;
    message.text = change.text;
    if (change.blocks !== undefined) message.blocks = change.blocks;
    if (change.attachments !== undefined) message.attachments = change.attachments;
    if (change.metadata !== undefined) message.metadata = change.metadata;
    if (message.blocks?.length === 0) delete message.blocks;
    if (message.attachments?.length === 0) delete message.attachments;
    const editedAt = this.#clock.next();
    message.edited = { user: change.editor, ts: editedAt };
    stored.versions.push({ ...versionOf(message, change.source), editedAt });
    return structuredClone(message);
  }

  delete(channel: string, ts: string): boolean {
    const messages = this.#channel(channel);
    const stored = messages.get(ts);
    if (stored === undefined) return false;
    messages.delete(ts);
    const parentTs = stored.message.thread_ts;
    if (parentTs !== undefined && parentTs !== ts) this.#recountReplies(channel, parentTs);
    return true;
  }

  get(channel: string, ts: string): Message | undefined {
    const stored = this.#channel(channel).get(ts);
    return stored === undefined ? undefined : structuredClone(stored.message);
  }

  isReply(message: Message): boolean {
    return message.thread_ts !== undefined && message.thread_ts !== message.ts;
  }

  /** Messages visible in the channel itself, oldest first: parents, plain posts and broadcast replies. */
  topLevel(channel: string): Message[] {
    return this.#all(channel).filter((m) => !this.isReply(m) || m.subtype === 'thread_broadcast');
  }

  /** Replies of a thread, oldest first, without the parent. */
  replies(channel: string, parentTs: string): Message[] {
    return this.#all(channel).filter((m) => m.thread_ts === parentTs && m.ts !== parentTs);
  }

  versions(channel: string, ts: string): MessageVersion[] {
    return structuredClone(this.#channel(channel).get(ts)?.versions ?? []);
  }

  addEphemeral(entry: Omit<Ephemeral, 'message_ts' | 'at'>): Ephemeral {
    const ephemeral: Ephemeral = { ...entry, message_ts: this.#clock.next(), at: Date.now() };
    this.#ephemerals.push(ephemeral);
    return structuredClone(ephemeral);
  }

  ephemerals(channel?: string, user?: string): Ephemeral[] {
    return structuredClone(
      this.#ephemerals.filter((e) => (channel === undefined || e.channel === channel) && (user === undefined || e.user === user)),
    );
  }

  channelIds(): string[] {
    return [...this.#channels.keys()];
  }

  #all(channel: string): Message[] {
    return [...this.#channel(channel).values()].map((s) => structuredClone(s.message)).sort((a, b) => compareTs(a.ts, b.ts));
  }

  #channel(id: string): Map<string, StoredMessage> {
    let messages = this.#channels.get(id);
    if (messages === undefined) {
      messages = new Map();
      this.#channels.set(id, messages);
    }
    return messages;
  }

  #attachReply(channel: string, parentTs: string): void {
    // Slack accepts a thread_ts that names no message; the reply is then an orphan.
    const parent = this.#channel(channel).get(parentTs)?.message;
    if (parent === undefined || this.isReply(parent)) return;
    parent.thread_ts = parent.ts;
    this.#recountReplies(channel, parentTs);
  }

  #recountReplies(channel: string, parentTs: string): void {
    const parent = this.#channel(channel).get(parentTs)?.message;
    if (parent === undefined) return;
    const replies = [...this.#channel(channel).values()]
      .map((s) => s.message)
      .filter((m) => m.thread_ts === parentTs && m.ts !== parentTs)
      .sort((a, b) => compareTs(a.ts, b.ts));
    const last = replies.at(-1);
    if (last === undefined) {
      for (const key of ['reply_count', 'reply_users', 'reply_users_count', 'latest_reply'] as const) {
        delete parent[key];
      }
      return;
    }
    const users = [...new Set(replies.map((r) => r.user ?? r.bot_id ?? ''))].filter((u) => u !== '');
    parent.reply_count = replies.length;
    parent.reply_users = users;
    parent.reply_users_count = users.length;
    parent.latest_reply = last.ts;
  }
}

export function compareTs(a: string, b: string): number {
  const [aSec = '0', aFrac = '0'] = a.split('.');
  const [bSec = '0', bFrac = '0'] = b.split('.');
  return Number(aSec) - Number(bSec) || Number(aFrac) - Number(bFrac);
}

function versionOf(message: Message, source: MessageVersion['source']): MessageVersion {
  const version: MessageVersion = { text: message.text, source };
  assignDefined(version, {
    blocks: structuredClone(message.blocks),
    attachments: structuredClone(message.attachments),
    metadata: structuredClone(message.metadata),
  });
  return version;
}

function assignDefined<T extends object>(target: T, values: Partial<T>): void {
  for (const [key, value] of Object.entries(values)) {
    if (value !== undefined) (target as Record<string, unknown>)[key] = value;
  }
}
