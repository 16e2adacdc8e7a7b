/** `manual`: the bot cannot see it; an operator checks it by hand. */
export type GateStatus = 'passed' | 'failed' | 'manual';

/** One of the runbook's production gates, with the evidence behind its status. */
export interface ReadinessGate {
  /** Stable identifier, e.g. `control-plane-topology`. */
  id: string;
  /** The gate as the runbook states it, short. */
  title: string;
  status: GateStatus;
  /** One sentence: why it passed, why it failed, or what to check. */
  summary: string;
  evidence: string[];
}

/** A probe's value, or why it could not be read (already fit for a thread reply). */
export type Observed<T> = { ok: true; value: T } | { ok: false; error: string };
