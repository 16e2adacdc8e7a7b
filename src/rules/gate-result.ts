/**
 * `manual`: the bot cannot see it; a person checks it by hand. `signed-off`: such a gate an approver
 * of the cluster signed off, with evidence, for the cluster's shape as it is now.
 */
export type GateStatus = 'passed' | 'failed' | 'manual' | 'signed-off';

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
  /** A person's sign-off of a gate only a person can judge; `lapse` says why it no longer counts. */
  signOff?: { by: string; at: string; evidence: string; lapse?: string };
}

/** A probe's value, or why it could not be read (already fit for a thread reply). */
export type Observed<T> = { ok: true; value: T } | { ok: false; error: string };
