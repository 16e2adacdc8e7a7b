import type { GateStatus, ReadinessGate, ReadinessReport } from '../rules/readiness-gates.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { context, escapeMrkdwn, fields, formatTime, header, mentionUser, preformatted, section } from './blocks.ts';

const ICON: Record<GateStatus, string> = { passed: '✅', failed: '❌', manual: '✋' };
const LABEL: Record<GateStatus, string> = { passed: 'passed', failed: 'failed', manual: 'check by hand' };

export interface ReadinessRequest {
  cluster: string;
  requestedBy: string;
  requestedAt: string;
}

export function readinessRunningMessage(request: ReadinessRequest): ChatMessage {
  const text = `⏳ Production gates being checked on ${request.cluster}, requested by ${mentionUser(request.requestedBy)}`;
  return { text, blocks: [section(text)] };
}

function verdict(report: ReadinessReport): string {
  return report.ready ? 'production-ready' : `not production-ready: ${report.failed.join('; ')}`;
}

function tally(report: ReadinessReport): string {
  return `${report.counts.passed} passed, ${report.counts.failed} failed, ${report.counts.manual} by hand`;
}

/** The root message: the verdict and the tally first, then the failed gates with their reasons. */
export function readinessVerdictMessage(report: ReadinessReport, request: ReadinessRequest, checkedAt: string): ChatMessage {
  const icon = report.ready ? '✅' : '❌';
  const blocks = [
    header(`${icon} Production gates: ${report.cluster} is ${report.ready ? '' : 'not '}production-ready`),
    fields([
      ['Cluster', report.cluster],
      ['Requested by', mentionUser(request.requestedBy)],
      ['Checked', formatTime(checkedAt)],
      ['Gates', tally(report)],
    ]),
  ];
  const failed = report.gates.filter((g) => g.status === 'failed');
  if (failed.length > 0) {
    blocks.push(
      section(`*Not production-ready:*\n${failed.map((g) => `• *${escapeMrkdwn(g.title)}*: ${escapeMrkdwn(g.summary)}`).join('\n')}`),
    );
  }
  const byHand = report.counts.manual;
  const next = report.ready
    ? `Every gate the bot can see passed; confirm the ${byHand} marked ✋ by hand before moving workloads here.`
    : `Fix the failed gates, then run \`/talos gates ${report.cluster}\` again; the ${byHand} marked ✋ need a person either way.`;
  blocks.push(context(`${next} One reply per gate in the thread.`));
  return { text: `${icon} Production gates of ${report.cluster}: ${verdict(report)} (${tally(report)})`, blocks };
}

/** One thread reply per gate, with its evidence. */
export function readinessGateMessage(gate: ReadinessGate): ChatMessage {
  const line = `${ICON[gate.status]} *${escapeMrkdwn(gate.title)}*: ${LABEL[gate.status]} — ${escapeMrkdwn(gate.summary)}`;
  const blocks = [section(line)];
  if (gate.evidence.length > 0) blocks.push(preformatted(gate.evidence));
  return { text: `${ICON[gate.status]} ${gate.title}: ${LABEL[gate.status]} — ${gate.summary}`, blocks };
}

export function readinessErrorMessage(request: ReadinessRequest, reason: string): ChatMessage {
  const text = `❌ Production gates could not be checked on ${request.cluster}: ${reason}`;
  return { text, blocks: [section(escapeMrkdwn(text))] };
}
