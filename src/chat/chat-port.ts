/** A Block Kit block; built as plain data in `src/chat`, rendered by Slack. */
export type Block = Record<string, unknown>;

export interface ChatMessage {
  /** Plain-text fallback, also what notifications show. */
  text: string;
  blocks?: Block[];
}

/**
 * The narrow interface jobs use to talk to people: post, reply in a thread, edit,
 * whisper to one user, attach a file. Jobs never see Slack's client.
 */
export interface ReplyOptions {
  /**
   * Send it once: a failed attempt is not repeated here, because Slack may have posted the
   * reply before failing (a 5xx after the write, a lost answer). The caller looks in the
   * thread with `replies` before sending it again.
   */
  once?: boolean;
}

/** A reply as the thread shows it. */
export interface ThreadReply {
  ts: string;
  text: string;
}

export interface ChatPort {
  post(channel: string, message: ChatMessage): Promise<{ ts: string }>;
  reply(channel: string, threadTs: string, message: ChatMessage, options?: ReplyOptions): Promise<{ ts: string }>;
  /** The bot's replies in a thread, oldest first. */
  replies(channel: string, threadTs: string): Promise<ThreadReply[]>;
  update(channel: string, ts: string, message: ChatMessage): Promise<void>;
  ephemeral(channel: string, user: string, message: ChatMessage): Promise<void>;
  upload(channel: string, threadTs: string, file: { filename: string; title: string; content: string }): Promise<void>;
}
