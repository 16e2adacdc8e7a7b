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
export interface ChatPort {
  post(channel: string, message: ChatMessage): Promise<{ ts: string }>;
  reply(channel: string, threadTs: string, message: ChatMessage): Promise<{ ts: string }>;
  update(channel: string, ts: string, message: ChatMessage): Promise<void>;
  ephemeral(channel: string, user: string, message: ChatMessage): Promise<void>;
  upload(channel: string, threadTs: string, file: { filename: string; title: string; content: string }): Promise<void>;
}
