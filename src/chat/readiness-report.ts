import type { GateStatus, ReadinessGate, ReadinessReport } from '../rules/readiness-gates.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { actions, context, escapeMrkdwn, fields, formatTime, header, mentionUser, preformatted, section } from './blocks.ts';
import { SIGN_OFF_ACTION, signOffValue } from './buttons.ts';
import { plainTime } from '../time/plain-time.ts';

const ICON: Record<GateStatus, string> = { passed: '✅', failed: '❌', manual: '✋', 'signed-off': '🖊️' };
const LABEL: Record<GateStatus, string> = {
  passed: 'passed',
  failed: 'failed',
  manual: 'waits for an approver to sign it off',
  'signed-off': 'signed off',
};

export interface ReadinessRequest {
  cluster: string;
  requestedBy: string;
  requestedAt: string;
}

export function readinessRunningMessage(request: ReadinessRequest): ChatMessage {
  const text = `⏳ Production gates being checked on ${request.cluster}, requested by ${mentionUser(request.requestedBy)}`;
  return { text, blocks: [section(text)] };
}

function waiting(report: ReadinessReport): string[] {
  return report.gates.filter((g) => g.status === 'manual').map((g) => g.title);
}

/** Not ready says why: the failed gates first, then those no approver signed off. */
function verdict(report: ReadinessReport): string {
  if (report.ready) return 'production-ready';
  const unsigned = waiting(report);
  const reasons = [
    ...(report.failed.length > 0 ? [report.failed.join('; ')] : []),
    ...(unsigned.length > 0 ? [`not signed off: ${unsigned.join('; ')}`] : []),
  ];
  return `not production-ready: ${reasons.join('; ')}`;
}

function tally(report: ReadinessReport): string {
  return `${report.counts.passed} passed, ${report.counts.failed} failed, ${report.counts['signed-off']} signed off, ${report.counts.manual} to sign off`;
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
  const unsigned = waiting(report);
  if (unsigned.length > 0) {
    blocks.push(
      section(
        `*Waiting for an approver's sign-off:*\n${unsigned.map((t) => `• ${escapeMrkdwn(t)}`).join('\n')}\nAn approver checks each by hand and clicks [Sign off] on its reply in the thread, with a link or a note as evidence.`,
      ),
    );
  }
  const next = report.ready
    ? `Every gate passed or was signed off by an approver.`
    : `Fix the failed gates and sign off those marked ✋, then run \`/talos gates ${report.cluster}\` again.`;
  blocks.push(context(`${next} One reply per gate in the thread.`));
  return { text: `${icon} Production gates of ${report.cluster}: ${verdict(report)} (${tally(report)})`, blocks };
}

/** Who signed a gate off, when and on what evidence; or why that sign-off no longer counts. */
function signOffLine(signOff: NonNullable<ReadinessGate['signOff']>): string {
  const given = `${mentionUser(signOff.by)} signed it off ${formatTime(signOff.at)}, evidence: ${escapeMrkdwn(signOff.evidence)}`;
  return signOff.lapse === undefined ? `🖊️ ${given}` : `⚠️ ${given}. That no longer counts: ${escapeMrkdwn(signOff.lapse)}`;
}

function signOffText(signOff: NonNullable<ReadinessGate['signOff']>): string {
  const given = `signed off by ${signOff.by} ${plainTime(signOff.at)}, evidence: ${signOff.evidence}`;
  return signOff.lapse === undefined ? ` (${given})` : ` (${given}; no longer counts: ${signOff.lapse})`;
}

/**
 * One thread reply per gate, with its evidence. A gate that waits for a person carries [Sign off]
 * for the cluster's approvers; `gatesJob` ties the button to this report, so a newer one makes it stale.
 */
export function readinessGateMessage(gate: ReadinessGate, signOff?: { cluster: string; gatesJob: string }): ChatMessage {
  const line = `${ICON[gate.status]} *${escapeMrkdwn(gate.title)}*: ${LABEL[gate.status]} — ${escapeMrkdwn(gate.summary)}`;
  const blocks = [section(line)];
  if (gate.signOff !== undefined) blocks.push(section(signOffLine(gate.signOff)));
  if (gate.evidence.length > 0) blocks.push(preformatted(gate.evidence));
  if (gate.status === 'manual' && signOff !== undefined)
    blocks.push(
      actions(`signoff-${gate.id}`, [
        { text: 'Sign off', actionId: SIGN_OFF_ACTION, value: signOffValue(signOff.cluster, gate.id, signOff.gatesJob) },
      ]),
    );
  const signed = gate.signOff === undefined ? '' : signOffText(gate.signOff);
  return { text: `${ICON[gate.status]} ${gate.title}: ${LABEL[gate.status]} — ${gate.summary}${signed}`, blocks };
}

export function readinessErrorMessage(request: ReadinessRequest, reason: string): ChatMessage {
  const text = `❌ Production gates could not be checked on ${request.cluster}: ${reason}`;
  return { text, blocks: [section(escapeMrkdwn(text))] };
}
