import type { GateReport } from '../health/health-gate.ts';
import type { CheckResult, CheckStatus } from '../health/check-result.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { context, escapeMrkdwn, fields, formatDuration, formatTime, header, mentionUser, preformatted, section } from './blocks.ts';

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

/** The root message: the verdict first, then who, when, how long, and the stop reasons. */
export function gateVerdictMessage(report: GateReport, request: GateRequest): ChatMessage {
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
    blocks.push(section(`*Stop:*\n${report.stopReasons.map((r) => `• ${escapeMrkdwn(r)}`).join('\n')}`));
  }
  blocks.push(context(`${counts.passed} passed · ${counts.warning} warning · ${counts.failed} failed — one reply per check in the thread`));
  const reasons = report.passed ? '' : ` Stop: ${report.stopReasons.join('; ')}`;
  return { text: `${title} (${formatDuration(report.durationMs)}).${reasons}`, blocks };
}

/** One thread reply per check, with its evidence. */
export function checkMessage(check: CheckResult): ChatMessage {
  // A failed probe's summary already names the check, for use as a stop reason.
  const summary = check.summary.startsWith(`${check.title}: `) ? check.summary.slice(check.title.length + 2) : check.summary;
  check = { ...check, summary };
  const line = `${ICON[check.status]} *${escapeMrkdwn(check.title)}*: ${escapeMrkdwn(check.summary)}`;
  const took = check.durationMs === undefined ? '' : ` (${formatDuration(check.durationMs)})`;
  const blocks = [section(`${line}${took}`)];
  if (check.evidence.length > 0) blocks.push(preformatted(check.evidence));
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
