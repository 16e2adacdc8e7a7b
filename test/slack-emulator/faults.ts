import { setTimeout as sleep } from 'node:timers/promises';

export interface RateLimitFault {
  /** Calls to fail. Default 1. */
  count?: number;
  /** Value of the `Retry-After` header, in seconds. Default 1. */
  retryAfterSec?: number;
  /** Web API methods affected (e.g. `chat.postMessage`); all when omitted. */
  methods?: string[];
}

export interface ServerErrorFault {
  /** Calls to fail. Default 1. */
  count?: number;
  /** Default 500. */
  status?: 500 | 502 | 503;
  methods?: string[];
  /** The call takes effect (the message is posted) and only its answer is the error, as when Slack fails after writing. Default false. */
  afterWrite?: boolean;
}

export interface DelayFault {
  ms: number;
  /** Calls to delay; every call until `clear()` when omitted. */
  count?: number;
  methods?: string[];
}

/** The injected reply that replaces the real one, if any. */
export type FaultReply =
  | { kind: 'rate_limit'; retryAfterSec: number }
  | { kind: 'server_error'; status: 500 | 502 | 503; afterWrite: boolean };

interface Rule {
  methods: string[] | undefined;
  remaining: number;
  apply: { kind: 'delay'; ms: number } | FaultReply;
}

/** Fault injection for the Web API, applied in the order the rules were added. */
export class Faults {
  #rules: Rule[] = [];
  readonly #sleeps = new Set<AbortController>();

  rateLimit(fault: RateLimitFault = {}): void {
    this.#add(fault.methods, fault.count ?? 1, { kind: 'rate_limit', retryAfterSec: fault.retryAfterSec ?? 1 });
  }

  serverError(fault: ServerErrorFault = {}): void {
    this.#add(fault.methods, fault.count ?? 1, { kind: 'server_error', status: fault.status ?? 500, afterWrite: fault.afterWrite ?? false });
  }

  delay(fault: DelayFault): void {
    this.#add(fault.methods, fault.count ?? Number.POSITIVE_INFINITY, { kind: 'delay', ms: fault.ms });
  }

  clear(): void {
    this.#rules = [];
  }

  /** Waits out matching delays, then returns the first matching error reply (consuming one use). */
  async intercept(method: string): Promise<FaultReply | undefined> {
    for (const rule of this.#take(method, 'delay')) {
      if (rule.apply.kind === 'delay') await this.#sleep(rule.apply.ms);
    }
    const [failure] = this.#take(method, 'reply', 1);
    if (failure === undefined || failure.apply.kind === 'delay') return undefined;
    return failure.apply;
  }

  /** Cuts pending delays short so that closing the emulator is never held up by them. */
  abortDelays(): void {
    for (const controller of this.#sleeps) controller.abort();
    this.#sleeps.clear();
  }

  #add(methods: string[] | undefined, count: number, apply: Rule['apply']): void {
    this.#rules.push({ methods, remaining: count, apply });
  }

  #take(method: string, which: 'delay' | 'reply', limit = Number.POSITIVE_INFINITY): Rule[] {
    const taken: Rule[] = [];
    for (const rule of this.#rules) {
      if (taken.length >= limit) break;
      const isDelay = rule.apply.kind === 'delay';
      if (isDelay !== (which === 'delay')) continue;
      if (rule.methods !== undefined && !rule.methods.includes(method)) continue;
      rule.remaining -= 1;
      taken.push(rule);
    }
    this.#rules = this.#rules.filter((r) => r.remaining > 0);
    return taken;
  }

  async #sleep(ms: number): Promise<void> {
    const controller = new AbortController();
    this.#sleeps.add(controller);
    try {
      await sleep(ms, undefined, { signal: controller.signal });
    } catch {
      // Aborted by close(): the request is abandoned anyway.
    } finally {
      this.#sleeps.delete(controller);
    }
  }
}
