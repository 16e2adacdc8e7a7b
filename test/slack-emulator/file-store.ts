import { randomBytes } from 'node:crypto';
import type { UploadedFile } from './types.ts';

interface PendingFile {
  id: string;
  filename: string;
  length: number;
  bytes?: Buffer;
}

export interface Completion {
  id: string;
  title: string;
  channel?: string;
  thread_ts?: string;
  initial_comment?: string;
}

/** The three steps of an external upload: reserve, receive bytes, complete. */
export class FileStore {
  readonly #pending = new Map<string, PendingFile>();
  readonly #completed: UploadedFile[] = [];

  reserve(filename: string, length: number): string {
    const id = `F${randomBytes(5).toString('hex').toUpperCase()}`;
    this.#pending.set(id, { id, filename, length });
    return id;
  }

  receive(id: string, bytes: Buffer): boolean {
    const pending = this.#pending.get(id);
    if (pending === undefined) return false;
    pending.bytes = bytes;
    return true;
  }

  /** Whether the file was reserved and its bytes arrived, so it can be completed. */
  isReady(id: string): boolean {
    return this.#pending.get(id)?.bytes !== undefined;
  }

  complete(c: Completion): UploadedFile | undefined {
    const pending = this.#pending.get(c.id);
    if (pending?.bytes === undefined) return undefined;
    this.#pending.delete(c.id);
    const file: UploadedFile = {
      id: pending.id,
      filename: pending.filename,
      // Slack shows the file name when no title was given.
      title: c.title === '' ? pending.filename : c.title,
      content: pending.bytes.toString('utf8'),
      bytes: pending.bytes,
    };
    if (c.channel !== undefined) file.channel = c.channel;
    if (c.thread_ts !== undefined) file.thread_ts = c.thread_ts;
    if (c.initial_comment !== undefined) file.initial_comment = c.initial_comment;
    this.#completed.push(file);
    return file;
  }

  completed(): UploadedFile[] {
    return this.#completed.map((f) => ({ ...f, bytes: Buffer.from(f.bytes) }));
  }
}
