import { driftWords, judgeDeclared, type RunningVersions } from './declared-judgement.ts';
import { KIND_WORDS, sourceWords, type DeclaredVersions } from '../../tofu/declared-versions.ts';
import type { CheckResult } from '../check-result.ts';

/** The gate's check of what Terraform declares against what runs: a stable id the scheduled gate, the status and the Home read. */
export const DECLARED_CHECK = 'declared-versions';

/**
 * Where the cluster stands against what Terraform declares, as the status, the Home and the
 * scheduled gate show it: `drift` names each difference and the exact change that clears it.
 */
export interface DeclaredState {
  state: 'match' | 'drift' | 'off' | 'unknown';
  /** One line per version that drifts, or why it could not be compared. */
  lines: string[];
  /** What clears it: the exact Terraform change, or the upgrade to finish first. */
  fixes: string[];
}

/**
 * Drift, what runs differing from what Terraform declares, is a warning: the cluster is healthy,
 * but the next routine plan would take a node back (and is refused for it) until the follow-up is made.
 * A version the bot cannot read is a warning too: the rules that need it are off, and the gate says so.
 */
export function evaluateDeclaredVersions(
  declared: DeclaredVersions,
  running: RunningVersions,
): { check: CheckResult; state: DeclaredState } {
  const judged = judgeDeclared(declared, running);
  const lines: string[] = [];
  const fixes: string[] = [];
  const evidence: string[] = [];
  let state: DeclaredState['state'] = 'match';
  for (const j of judged) {
    const what = KIND_WORDS[j.kind];
    if (j.state === 'drift') {
      const words = driftWords(j);
      lines.push(words.summary);
      fixes.push(words.fix);
      evidence.push(...words.evidence.map((e) => `${what}: ${e}`), `${what}: to clear it, ${words.fix}`);
      state = 'drift';
    } else if (j.state === 'off') {
      lines.push(`the declared ${what} version is not read: ${j.why}`);
      evidence.push(`${what}: ${j.why}`);
      if (state === 'match') state = 'off';
    } else if (j.state === 'unknown') {
      lines.push(`whether every node runs ${what} ${j.declared} is unknown: ${j.why.join('; ')}`);
      evidence.push(...j.why.map((w) => `${what}: ${w}`));
      if (state === 'match') state = 'unknown';
    } else {
      const d = declared[j.kind];
      evidence.push(`${what}: every node runs ${j.declared}, as ${'source' in d ? sourceWords(d.source) : 'Terraform'} declares`);
    }
  }
  const title = 'Versions declared in Terraform';
  const summary =
    state === 'match'
      ? `every node runs the Talos and Kubernetes versions Terraform declares (${judged.map((j) => ('declared' in j ? j.declared : '?')).join(', ')})`
      : state === 'drift'
        ? `drift: ${lines.join('; ')}; to clear it, ${fixes.join('; and ')}`
        : `${lines.join('; ')}: drift is not checked for it, and a plan says which rule is off`;
  return {
    check: { id: DECLARED_CHECK, title, status: state === 'match' ? 'passed' : 'warning', summary, evidence },
    state: { state, lines, fixes },
  };
}
