import { setTimeout as sleep } from 'node:timers/promises';
import type { JsonObject } from './types.ts';

/** Picks the calls a fault applies to by their arguments, e.g. the reply that carries an approval's buttons. */
export type CallFilter = (args: JsonObject) => boolean;

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
  /** Only calls whose arguments pass; every call of `methods` when omitted. */
  where?: CallFilter;
}

export interface LostAnswerFault {
  /** Calls to apply without answering. Default 1. */
  count?: number;
  methods?: string[];
  /**
   * `hang` (default): the call takes effect and its answer never comes, so the client's timeout
   * ends it; `cut`: the call takes effect, then its connection is closed without an answer.
   */
  how?: 'hang' | 'cut';
  where?: CallFilter;
}

export interface DelayFault {
  ms: number;
  /** Calls to delay; every call until `clear()` when omitted. */
  count?: number;
  methods?: string[];
}

export interface HoldFault {
  /** Web API methods held (e.g. `usergroups.users.list`); all when omitted. */
  methods?: string[];
}

export interface HoldAnswerFault {
  methods?: string[];
  /** Calls whose answer is held; every call of `methods` when omitted. Default 1. */
  count?: number;
  where?: CallFilter;
}

/**
 * Calls stopped by `Faults.hold()`: each stays unanswered until `release()`, so a test can
 * assert what the bot did while a Slack call was outstanding, by order rather than by the clock.
 */
export interface HeldCalls {
  /** Methods of the calls that reached the hold, in arrival order, those already let through included. */
  readonly arrived: readonly string[];
  /** Calls held right now. */
  readonly waiting: number;
  readonly released: boolean;
  /** Answers every held call; later calls are no longer held. */
  release(): void;
}

class HoldGate implements HeldCalls {
  readonly #arrived: string[] = [];
  readonly #open = Promise.withResolvers<void>();
  #waiting = 0;
  #released = false;

  get arrived(): readonly string[] {
    return this.#arrived;
  }

  get waiting(): number {
    return this.#waiting;
  }

  get released(): boolean {
    return this.#released;
  }

  release(): void {
    this.#released = true;
    this.#open.resolve();
  }

  async pass(method: string): Promise<void> {
    if (this.#released) return;
    this.#arrived.push(method);
    this.#waiting += 1;
    try {
      await this.#open.promise;
    } finally {
      this.#waiting -= 1;
    }
  }
}

/** The injected reply that replaces the real one, if any. */
export type FaultReply =
  | { kind: 'rate_limit'; retryAfterSec: number }
  | { kind: 'server_error'; status: 500 | 502 | 503; afterWrite: boolean }
  | { kind: 'lost_answer'; how: 'hang' | 'cut' }
  | { kind: 'held_answer'; gate: HoldGate };

interface Rule {
  methods: string[] | undefined;
  where: CallFilter | undefined;
  remaining: number;
  apply: { kind: 'delay'; ms: number } | { kind: 'hold'; gate: HoldGate } | FaultReply;
}

/** Fault injection for the Web API, applied in the order the rules were added. */
export class Faults {
  #rules: Rule[] = [];
  readonly #sleeps = new Set<AbortController>();
  /** Every hold's gate, kept apart from the rules: a held answer's rule is spent once its call arrives, while the call still waits. */
  readonly #gates = new Set<HoldGate>();

  rateLimit(fault: RateLimitFault = {}): void {
    this.#add(fault.methods, fault.count ?? 1, { kind: 'rate_limit', retryAfterSec: fault.retryAfterSec ?? 1 });
  }

  serverError(fault: ServerErrorFault = {}): void {
    this.#add(
      fault.methods,
      fault.count ?? 1,
      { kind: 'server_error', status: fault.status ?? 500, afterWrite: fault.afterWrite ?? false },
      fault.where,
    );
  }

  /** Applies matching calls and never answers them (or cuts their connection): the write is in Slack, the bot does not know. */
  lostAnswer(fault: LostAnswerFault = {}): void {
    this.#add(fault.methods, fault.count ?? 1, { kind: 'lost_answer', how: fault.how ?? 'hang' }, fault.where);
  }

  delay(fault: DelayFault): void {
    this.#add(fault.methods, fault.count ?? Number.POSITIVE_INFINITY, { kind: 'delay', ms: fault.ms });
  }

  /** Holds matching calls unanswered until the returned handle's `release()` (or `clear()`). */
  hold(fault: HoldFault = {}): HeldCalls {
    const gate = new HoldGate();
    this.#gates.add(gate);
    this.#add(fault.methods, Number.POSITIVE_INFINITY, { kind: 'hold', gate });
    return gate;
  }

  /**
   * Applies matching calls at once and holds their answers until `release()`: the message is in the
   * channel, where people can see and click it, before the caller learns where Slack posted it (as
   * when Slack's answer is slow on the way back).
   */
  holdAnswer(fault: HoldAnswerFault = {}): HeldCalls {
    const gate = new HoldGate();
    this.#gates.add(gate);
    this.#add(fault.methods, fault.count ?? 1, { kind: 'held_answer', gate }, fault.where);
    return gate;
  }

  /** Drops every rule; held calls are released so that none is left hanging. */
  clear(): void {
    this.#releaseHolds();
    this.#rules = [];
  }

  /** Waits out matching holds and delays in the order they were added, then returns the first matching error reply (consuming one use). */
  async intercept(method: string, args: JsonObject = {}): Promise<FaultReply | undefined> {
    for (const rule of this.#take(method, args, 'wait')) {
      if (rule.apply.kind === 'delay') await this.#sleep(rule.apply.ms);
      if (rule.apply.kind === 'hold') await rule.apply.gate.pass(method);
    }
    const [failure] = this.#take(method, args, 'reply', 1);
    if (failure === undefined || failure.apply.kind === 'delay' || failure.apply.kind === 'hold') return undefined;
    return failure.apply;
  }

  /** Cuts pending delays short and releases held calls, so that closing the emulator is never held up by them. */
  abortDelays(): void {
    for (const controller of this.#sleeps) controller.abort();
    this.#sleeps.clear();
    this.#releaseHolds();
  }

  #releaseHolds(): void {
    for (const gate of this.#gates) gate.release();
    this.#gates.clear();
  }

  #add(methods: string[] | undefined, count: number, apply: Rule['apply'], where?: CallFilter): void {
    this.#rules.push({ methods, where, remaining: count, apply });
  }

  #take(method: string, args: JsonObject, which: 'wait' | 'reply', limit = Number.POSITIVE_INFINITY): Rule[] {
    const taken: Rule[] = [];
    for (const rule of this.#rules) {
      if (taken.length >= limit) break;
      const waits = rule.apply.kind === 'delay' || rule.apply.kind === 'hold';
      if (waits !== (which === 'wait')) continue;
      if (rule.methods !== undefined && !rule.methods.includes(method)) continue;
      if (rule.where !== undefined && !rule.where(args)) continue;
      rule.remaining -= 1;
      taken.push(rule);
    }
    // A released hold has done its work: later calls go straight through.
    this.#rules = this.#rules.filter((r) => r.remaining > 0 && !(r.apply.kind === 'hold' && r.apply.gate.released));
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
