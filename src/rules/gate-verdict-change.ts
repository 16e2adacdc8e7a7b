import type { GateReport } from '../health/health-gate.ts';

/** What a scheduled gate compares between runs: pass or fail, and which checks failed. */
export interface GateVerdict {
  passed: boolean;
  /** Ids of the failed checks, sorted; `gate-error` when the gate could not run at all. */
  failing: string[];
  /** Each way what runs differs from what Terraform declares; empty when it matches. Absent when not compared. */
  drift?: string[];
}

/** The check id a gate that could not run (credentials, talosctl) counts as failing. */
export const GATE_ERROR = 'gate-error';

export function verdictOf(report: GateReport): GateVerdict {
  const failing = report.checks.filter((c) => c.status === 'failed').map((c) => c.id);
  const drift = report.declared === undefined ? undefined : report.declared.state === 'drift' ? report.declared.lines : [];
  return { passed: report.passed, failing: [...new Set(failing)].sort(), ...(drift === undefined ? {} : { drift }) };
}

/**
 * How drift moved between two scheduled gates, or undefined when it did not: it appeared (or became
 * another), or it cleared. A gate that did not compare (it could not run) moves nothing.
 */
export function driftChange(
  previous: GateVerdict | undefined,
  next: GateVerdict,
): { appeared: string[] } | { cleared: string[] } | undefined {
  if (next.drift === undefined) return undefined;
  const before = previous?.drift ?? [];
  if (before.join('\n') === next.drift.join('\n')) return undefined;
  return next.drift.length > 0 ? { appeared: next.drift } : { cleared: before };
}

/** A gate that could not run is a failure of its own kind, the same on every run, whatever the error text. */
export function errorVerdict(): GateVerdict {
  return { passed: false, failing: [GATE_ERROR] };
}

/**
 * The change a scheduled gate reports, or undefined when there is nothing to say: the first
 * verdict ever, pass→fail, fail→pass, or another set of failing checks. Warnings never count:
 * they come and go with the cluster's normal churn.
 */
export function verdictChange(
  previous: GateVerdict | undefined,
  next: GateVerdict,
): 'first' | 'failing' | 'recovered' | 'changed' | undefined {
  if (previous === undefined) return 'first';
  if (previous.passed && !next.passed) return 'failing';
  if (!previous.passed && next.passed) return 'recovered';
  if (previous.failing.join(',') !== next.failing.join(',')) return 'changed';
  return undefined;
}
