import type { CheckResult } from '../check-result.ts';

/** Whether one node's drain may begin, from the budget check for that node alone. */
export type DrainVerdict = { ok: true; summary: string } | { ok: false; reason: string; evidence: string[] };

/**
 * The verdict before the drain of `node`: a budget that would block it stops the step before the
 * node is touched; a warning (a drain that waits for replacements or for Longhorn's rebuild) lets it
 * begin and is said. `check` is `undefined` when Kubernetes has no Node for the address.
 */
export function drainVerdict(node: string, check: CheckResult | undefined): DrainVerdict {
  if (check === undefined) return { ok: true, summary: `Kubernetes has no Node for ${node}: nothing to drain` };
  if (check.status === 'failed') {
    return {
      ok: false,
      reason: `the drain of ${node} would block, so ${node} was not touched: ${check.summary}`,
      evidence: check.evidence,
    };
  }
  const said = check.status === 'warning' ? `the drain may wait: ${check.summary}` : check.summary;
  return { ok: true, summary: `budgets for the drain of ${node}: ${said}` };
}
