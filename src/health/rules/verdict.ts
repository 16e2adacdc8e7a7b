import type { CheckResult } from '../check-result.ts';

/** Whether the gate lets the operation go on, and if not, why. */
export interface GateVerdict {
  passed: boolean;
  /** The summary of every failed check, in check order. */
  stopReasons: string[];
}

/**
 * Combines the checks of one health gate. Warnings never stop; every failed check's summary is a
 * stop reason. A gate that ran no check does not pass.
 */
export function gateVerdict(results: CheckResult[]): GateVerdict {
  if (results.length === 0) return { passed: false, stopReasons: ['no health check ran'] };
  const stopReasons = results.filter((r) => r.status === 'failed').map((r) => r.summary);
  return { passed: stopReasons.length === 0, stopReasons };
}
