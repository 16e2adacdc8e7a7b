import type { HealthReport } from '../../talos/parse-health.ts';
import type { CheckResult } from '../check-result.ts';
import { oneLine, plural } from './format.ts';

const ID = 'talos-health';

/**
 * The runbook's `talosctl health` verdict. Failed on a nonzero exit, naming the check it was
 * waiting for and that check's last error; also failed on exit 0 when a check never reported
 * OK/SKIP or no check ran, so truncated output can never pass.
 */
export function evaluateTalosHealth(parsed: HealthReport, exitCode: number): CheckResult {
  const title = 'talosctl health';
  const ok = parsed.checks.filter((c) => c.result === 'OK');
  const skipped = parsed.checks.filter((c) => c.result === 'SKIP');
  const pending = parsed.checks.filter((c) => c.result === 'pending');
  const evidence: string[] = [];
  if (parsed.discoveredNodes !== undefined) evidence.push(`discovered nodes: ${parsed.discoveredNodes.join(', ')}`);
  evidence.push(`${plural(ok.length, 'check')} OK${skipped.length > 0 ? `, skipped: ${skipped.map((c) => c.name).join(', ')}` : ''}`);
  for (const check of pending) {
    evidence.push(`waiting for ${check.name}: ${check.lastError === undefined ? 'no error reported' : oneLine(check.lastError)}`);
  }
  if (parsed.finalError !== undefined) evidence.push(`talosctl: ${oneLine(parsed.finalError)}`);

  const stuck = pending[0];
  if (exitCode !== 0) {
    const summary =
      stuck === undefined
        ? `talosctl health exited with ${exitCode}: ${parsed.finalError === undefined ? 'no error text' : oneLine(parsed.finalError)}`
        : `talosctl health failed waiting for ${stuck.name}${stuck.lastError === undefined ? '' : `: ${oneLine(stuck.lastError)}`}`;
    return { id: ID, title, status: 'failed', summary, evidence };
  }
  if (stuck !== undefined) {
    return { id: ID, title, status: 'failed', summary: `talosctl health exited 0 but ${stuck.name} never reported OK`, evidence };
  }
  if (parsed.checks.length === 0) {
    return { id: ID, title, status: 'failed', summary: 'talosctl health exited 0 without reporting any check', evidence };
  }
  if (parsed.finalError !== undefined) {
    // On success talosctl ends with its last check; anything after it is an error or cut-off output.
    const tail = oneLine(parsed.finalError);
    const shown = tail.length > 200 ? `${tail.slice(0, 200)}…` : tail;
    return { id: ID, title, status: 'failed', summary: `talosctl health exited 0 but ended with text that is no check result, so its output cannot be trusted: ${shown}`, evidence };
  }
  const summary = `all ${plural(ok.length + skipped.length, 'check')} passed${skipped.length > 0 ? ` (${skipped.length} skipped)` : ''}`;
  return { id: ID, title, status: 'passed', summary, evidence };
}
