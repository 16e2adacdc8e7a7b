import type { ChatMessage } from '../port/chat-port.ts';

/** ✅ fine, ⚠️ works but needs attention, ⛔ will fail an operation. */
export type DoctorStatus = 'ok' | 'warn' | 'fail';

/** One check's result, as the doctor reports it: one line, with the fix in one sentence. */
export interface DoctorFinding {
  status: DoctorStatus;
  /** What was checked, e.g. `Slack scopes` or `Terraform outputs`. */
  check: string;
  /** The cluster the check is about, when it is about one. */
  cluster?: string;
  /** What the check found; never a credential. */
  found: string;
  /** What to do about it; absent when nothing is to be done. */
  fix?: string;
}

const ICON: Record<DoctorStatus, string> = { ok: '✅', warn: '⚠️', fail: '⛔' };
const ORDER: Record<DoctorStatus, number> = { fail: 0, warn: 1, ok: 2 };

function plural(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** The line of one finding: `⛔ *Terraform outputs · production*: found. Fix: …` */
export function findingLine(finding: DoctorFinding): string {
  const subject = finding.cluster === undefined ? finding.check : `${finding.check} · ${finding.cluster}`;
  const fix = finding.fix === undefined ? '' : ` *Fix:* ${finding.fix}`;
  return `${ICON[finding.status]} *${subject}*: ${finding.found}${fix}`;
}

/** The summary that leads the report: what fails first, since that is what stops an operation. */
export function doctorSummary(findings: readonly DoctorFinding[]): string {
  const fails = findings.filter((f) => f.status === 'fail').length;
  const warns = findings.filter((f) => f.status === 'warn').length;
  const oks = findings.length - fails - warns;
  if (fails === 0 && warns === 0) return `🩺 Doctor: all ${plural(findings.length, 'check', 'checks')} passed.`;
  const parts = [fails > 0 ? plural(fails, 'problem', 'problems') : '', warns > 0 ? plural(warns, 'warning', 'warnings') : ''].filter(
    (p) => p !== '',
  );
  return `🩺 Doctor: ${parts.join(' and ')} (${oks} of ${plural(findings.length, 'check', 'checks')} passed). Each line says the fix.`;
}

/** The report: the summary, then the problems, the warnings and the passed checks, one line each. */
export function doctorReportText(findings: readonly DoctorFinding[]): string {
  const sorted = [...findings].sort((a, b) => ORDER[a.status] - ORDER[b.status]);
  return [doctorSummary(findings), ...sorted.map(findingLine)].join('\n');
}

/** Slack's bound of one section's text. */
const SECTION_MAX = 3000;

/** The report as a channel message (the start-up run): the summary, then the lines in as few sections as Slack allows. */
export function doctorStartMessage(findings: readonly DoctorFinding[]): ChatMessage {
  const [summary, ...lines] = doctorReportText(findings).split('\n');
  const lead = (summary ?? '').replace(/^🩺 Doctor:/, '🩺 Doctor at start:');
  const sections: string[] = [];
  for (const line of lines) {
    const last = sections.at(-1);
    if (last !== undefined && last.length + 1 + line.length <= SECTION_MAX) sections[sections.length - 1] = `${last}\n${line}`;
    else sections.push(line.slice(0, SECTION_MAX));
  }
  const blocks = [lead, ...sections].slice(0, 50).map((text) => ({ type: 'section', text: { type: 'mrkdwn', text } }));
  return { text: lead, blocks };
}
