import type { AckRecord, AckTimeout, ApiCall, ResponseUrlCall, SocketFrame } from './types.ts';

/** Everything the bot sent, kept so tests can assert on calls and search for leaked secrets. */
export class Recorder {
  readonly apiCalls: ApiCall[] = [];
  readonly socketFrames: SocketFrame[] = [];
  readonly acks: AckRecord[] = [];
  readonly ackTimeouts: AckTimeout[] = [];
  readonly responseUrlCalls: ResponseUrlCall[] = [];
  readonly #traffic: string[] = [];

  /** Raw text of a request body, socket frame or HTTP reply that came from the bot. */
  traffic(text: string): void {
    this.#traffic.push(text);
  }

  allTraffic(): string {
    return this.#traffic.join('\n');
  }
}
