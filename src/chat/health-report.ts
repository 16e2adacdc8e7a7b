import type { GateReport } from '../health/health-gate.ts';
import type { CheckResult, CheckStatus } from '../health/check-result.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import {
  actions,
  context,
  escapeMrkdwn,
  fields,
  formatDuration,
  formatTime,
  header,
  mentionUser,
  plainTime,
  preformatted,
  section,
} from './blocks.ts';
import { GATE_AGAIN_ACTION, gateAgainValue } from './buttons.ts';
import { fixFor } from './gate-fixes.ts';

const ICON: Record<CheckStatus, string> = { passed: '✅', failed: '❌', warning: '⚠️' };

export interface GateRequest {
  cluster: string;
  requestedBy: string;
  requestedAt: string;
}

export function gateRunningMessage(request: GateRequest): ChatMessage {
  const text = `⏳ Health gate running on ${request.cluster}, requested by ${mentionUser(request.requestedBy)}`;
  return { text, blocks: [section(text)] };
}

/** Where a gate's verdict stands, for its [Run the gate again] button; none: no button (a replayed or scheduled gate). */
export interface GateAgain {
  /** The job of the gate this message reports: a button names it, so a second click of it is recognised. */
  gateJob: string;
}

/**
 * The root message: the verdict first, then who, when, how long. A failed gate says what to fix,
 * one sentence per failing check, and offers to run the gate again.
 */
export function gateVerdictMessage(report: GateReport, request: GateRequest, again?: GateAgain): ChatMessage {
  const verdict = report.passed ? 'passed' : 'failed';
  const title = `${report.passed ? '✅' : '❌'} Health gate ${verdict}: ${report.cluster}`;
  const counts = countByStatus(report.checks);
  const blocks = [
    header(title),
    fields([
      ['Cluster', report.cluster],
      ['Requested by', mentionUser(request.requestedBy)],
      ['Started', formatTime(report.startedAt)],
      ['Took', formatDuration(report.durationMs)],
    ]),
  ];
  if (!report.passed) {
    blocks.push(section(`*Blocking:*\n${report.stopReasons.map((r) => `• ${escapeMrkdwn(r)}`).join('\n')}`));
    const fixes = report.checks
      .filter((c) => c.status === 'failed')
      .map((c) => `• *${escapeMrkdwn(shortName(c))}*: ${escapeMrkdwn(fixFor(c))}`);
    if (fixes.length > 0) blocks.push(section(`*What to fix:*\n${fixes.join('\n')}`));
  }
  blocks.push(
    context(
      `${counts.passed} passed · ${counts.warning} warning · ${counts.failed} failed — every check in the thread, full evidence attached`,
    ),
  );
  if (!report.passed && again !== undefined) {
    blocks.push(
      actions(`gate-${report.cluster}-again`, [
        { text: 'Run the gate again', actionId: GATE_AGAIN_ACTION, value: gateAgainValue(report.cluster, again.gateJob), style: 'primary' },
      ]),
    );
  }
  const reasons = report.passed ? '' : ` Blocking: ${report.stopReasons.join('; ')}`;
  return { text: `${title} (${formatDuration(report.durationMs)}).${reasons}`, blocks };
}

/** A check's name without the nodes it ran against: `talosctl etcd status`, `Kubernetes pods`. */
function shortName(check: CheckResult): string {
  return check.title.replace(/\s*\([^)]*\)\s*$/, '');
}

/** A check's result without the check's own name in front (a failed probe's summary names it, for use as a stop reason). */
function resultOf(check: CheckResult): string {
  return check.summary.startsWith(`${check.title}: `) ? check.summary.slice(check.title.length + 2) : check.summary;
}

/** Characters of a check's result on its line of the summary reply; the whole of it is in the attached evidence. */
const SHORT_RESULT = 110;

/** The one thread reply that holds every passing check, one line each: `✅ name: short result`. */
export function passedChecksMessage(checks: readonly CheckResult[]): ChatMessage {
  const lines = checks.map((c) => {
    const result = resultOf(c);
    const short = result.length > SHORT_RESULT ? `${result.slice(0, SHORT_RESULT - 1).trimEnd()}…` : result;
    return `${ICON[c.status]} ${shortName(c)}: ${short}`;
  });
  const text = lines.join('\n');
  return { text, blocks: [section(lines.map((l) => escapeMrkdwn(l)).join('\n'))] };
}

/**
 * A gate's thread: one reply for the passing checks, then one per failing or warning check with
 * its evidence, in the gate's order.
 */
export function gateReplies(report: GateReport): { key: string; message: ChatMessage }[] {
  const passed = report.checks.filter((c) => c.status === 'passed');
  const unwell = report.checks.filter((c) => c.status !== 'passed');
  return [
    ...(passed.length > 0 ? [{ key: 'passed', message: passedChecksMessage(passed) }] : []),
    ...unwell.map((c) => ({ key: `check-${c.id}`, message: checkMessage(c) })),
  ];
}

/** Every check with its whole evidence, as a text file for the thread: what the one-line replies leave out. */
export function gateEvidenceFile(report: GateReport): { filename: string; title: string; content: string } {
  const stamp = report.startedAt.replace(/[-:]/g, '').replace(/\.\d+Z$/, 'Z');
  const sections = report.checks.map((c) => {
    const took = c.durationMs === undefined ? '' : ` (${formatDuration(c.durationMs)})`;
    return [`${c.status.toUpperCase()}  ${c.title}${took}`, `  ${resultOf(c)}`, ...c.evidence.map((l) => `    ${l}`)].join('\n');
  });
  const head = `Health gate ${report.passed ? 'passed' : 'failed'} on ${report.cluster}, started ${plainTime(new Date(report.startedAt))}, took ${formatDuration(report.durationMs)}`;
  return {
    filename: `health-gate-${report.cluster}-${stamp}.txt`,
    title: `Health gate evidence: ${report.cluster}`,
    content: `${[head, ...sections].join('\n\n')}\n`,
  };
}

/** One thread reply per check, with its evidence. */
export function checkMessage(check: CheckResult): ChatMessage {
  check = { ...check, summary: resultOf(check) };
  const line = `${ICON[check.status]} *${escapeMrkdwn(check.title)}*: ${escapeMrkdwn(check.summary)}`;
  const took = check.durationMs === undefined ? '' : ` (${formatDuration(check.durationMs)})`;
  const blocks = [section(`${line}${took}`)];
  if (check.evidence.length > 0) blocks.push(preformatted(check.evidence));
  if (check.status === 'failed' || check.status === 'warning') blocks.push(context(`*What to fix:* ${escapeMrkdwn(fixFor(check))}`));
  return { text: `${ICON[check.status]} ${check.title}: ${check.summary}`, blocks };
}

export function gateErrorMessage(request: GateRequest, reason: string): ChatMessage {
  const text = `❌ Health gate could not run on ${request.cluster}: ${reason}`;
  return { text, blocks: [section(escapeMrkdwn(text))] };
}

function countByStatus(checks: CheckResult[]): Record<CheckStatus, number> {
  const counts: Record<CheckStatus, number> = { passed: 0, failed: 0, warning: 0 };
  for (const c of checks) counts[c.status] += 1;
  return counts;
}
