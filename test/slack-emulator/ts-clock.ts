/**
 * Issues Slack message timestamps (`<epoch seconds>.<6 digits>`).
 * One clock for the whole workspace: strictly increasing everywhere is stricter than
 * Slack's per-channel guarantee, and two posts in the same millisecond still differ.
 */
export class TsClock {
  #lastMicros = 0;

  next(): string {
    let micros = Date.now() * 1000;
    if (micros <= this.#lastMicros) micros = this.#lastMicros + 1;
    this.#lastMicros = micros;
    return formatTs(micros);
  }
}

function formatTs(micros: number): string {
  const seconds = Math.floor(micros / 1_000_000);
  const fraction = micros % 1_000_000;
  return `${seconds}.${String(fraction).padStart(6, '0')}`;
}

/** Milliseconds since the epoch encoded in a Slack `ts`. */
export function tsToMillis(ts: string): number {
  return Math.floor(Number(ts) * 1000);
}
