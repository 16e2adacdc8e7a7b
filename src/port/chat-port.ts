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
export interface PostOptions {
  /**
   * Makes the post exactly once: it travels with the message (as Slack message metadata), so a
   * post whose answer was lost (a 5xx after Slack wrote it, a timeout) is found by its key
   * before it is sent again. Unique per message, e.g. `<op>-root` or `<op>-<seq>`.
   */
  key?: string;
  /**
   * An earlier attempt of this keyed post may already be in Slack (its job runs again after a
   * crash or a failure): it is looked for before the first send, not only after a lost answer.
   */
  maybeSent?: boolean;
}

export interface ReplyOptions extends PostOptions {
  /** Also show the reply in the channel (`reply_broadcast`), where Slack notifies the people it mentions. */
  broadcast?: boolean;
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
  post(channel: string, message: ChatMessage, options?: PostOptions): Promise<{ ts: string }>;
  reply(channel: string, threadTs: string, message: ChatMessage, options?: ReplyOptions): Promise<{ ts: string }>;
  /** The bot's replies in a thread, oldest first. */
  replies(channel: string, threadTs: string): Promise<ThreadReply[]>;
  update(channel: string, ts: string, message: ChatMessage): Promise<void>;
  ephemeral(channel: string, user: string, message: ChatMessage): Promise<void>;
  upload(channel: string, threadTs: string, file: { filename: string; title: string; content: string }): Promise<void>;
  /** A link to the message (`chat.getPermalink`), for messages that point at an operation's thread. */
  permalink(channel: string, ts: string): Promise<string>;
}
