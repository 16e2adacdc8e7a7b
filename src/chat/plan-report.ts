import type { ChangeAction, PlannedChange, PlanReview } from '../tofu/parse-plan.ts';
import type { PlanOutcome } from '../tofu/run-plan.ts';
import type { ChatMessage } from './chat-port.ts';
import { context, escapeMrkdwn, fields, header, mentionUser, preformatted, section } from './blocks.ts';

export interface PlanRequest {
  cluster: string;
  requestedBy: string;
}

const SYMBOL: Record<ChangeAction, string> = { create: '+', read: '<=', update: '~', replace: '-/+', delete: '-', forget: '.', 'no-op': ' ', unknown: '?' };
const ACTION_ORDER: ChangeAction[] = ['replace', 'delete', 'create', 'update', 'read', 'forget', 'unknown'];
const COUNT_WORDS: [ChangeAction, string][] = [
  ['replace', 'to replace'],
  ['delete', 'to destroy'],
  ['create', 'to add'],
  ['update', 'to change'],
  ['read', 'to read'],
  ['forget', 'to forget'],
  ['unknown', 'unrecognised'],
];
const DANGER = '🟥';

function files(count: number): string {
  return `${count} ${count === 1 ? 'file' : 'files'}`;
}

export function planRunningMessage(request: PlanRequest): ChatMessage {
  const text = `⏳ tofu fmt, validate and plan of ${request.cluster} running (read-only), requested by ${mentionUser(request.requestedBy)}`;
  return { text, blocks: [section(text)] };
}

/** `1 to replace, 1 to change`, or `no changes`. */
export function planCounts(review: PlanReview): string {
  const parts = COUNT_WORDS.filter(([action]) => review.counts[action as keyof PlanReview['counts']] > 0).map(
    ([action, words]) => `${review.counts[action as keyof PlanReview['counts']]} ${words}`,
  );
  return parts.length === 0 ? 'no changes' : parts.join(', ');
}

function stops(outcome: PlanOutcome) {
  return outcome.plan.status === 'planned' ? outcome.plan.review.dangers.filter((d) => d.level === 'stop') : [];
}

function fmtField(outcome: PlanOutcome): string {
  if (outcome.fmt.status === 'formatted') return '✅ formatted';
  if (outcome.fmt.status === 'unformatted') return `⚠️ ${files(outcome.fmt.files.length)} not formatted`;
  return '❌ could not run';
}

function planField(outcome: PlanOutcome): string {
  if (outcome.plan.status === 'planned') return `${stops(outcome).length > 0 ? DANGER : outcome.plan.review.changes.length > 0 ? '📝' : '✅'} ${planCounts(outcome.plan.review)}`;
  if (outcome.plan.status === 'skipped') return `⏭️ skipped: ${outcome.plan.because}`;
  return '❌ failed';
}

/** The headline: a forbidden replacement first, then a failure, then the changes to review. */
function headline(outcome: PlanOutcome, cluster: string): string {
  const danger = stops(outcome);
  if (danger.length > 0) return `${DANGER} DANGER: the Terraform plan of ${cluster} must not be applied: ${danger.map((d) => `${d.address} ${d.meaning}`).join('; ')}`;
  if (outcome.validate.status === 'invalid') return `❌ tofu validate failed for ${cluster}: ${outcome.validate.lines[0] ?? 'the configuration is not valid'}`;
  if (outcome.plan.status === 'error') return `❌ tofu plan failed for ${cluster}: ${outcome.plan.lines[0] ?? 'no error message'}`;
  if (outcome.plan.status !== 'planned') return `❌ tofu plan did not run for ${cluster}`;
  const { review } = outcome.plan;
  if (review.changes.length === 0) return `✅ Terraform plan of ${cluster}: no changes`;
  return `📝 Terraform plan of ${cluster}: ${planCounts(review)}; inspect every Talos and Proxmox change`;
}

/** The root message: danger or failure first, then each step's result and what to do next. */
export function planResultMessage(outcome: PlanOutcome, request: PlanRequest): ChatMessage {
  const title = headline(outcome, request.cluster);
  const fmtNote = outcome.fmt.status === 'unformatted' ? ` tofu fmt: ${files(outcome.fmt.files.length)} not formatted.` : '';
  const blocks = [
    header(title),
    fields([
      ['Cluster', request.cluster],
      ['Requested by', mentionUser(request.requestedBy)],
      ['tofu fmt -check', fmtField(outcome)],
      ['tofu validate', outcome.validate.status === 'valid' ? '✅ valid' : '❌ invalid'],
      ['tofu plan', planField(outcome)],
    ]),
  ];
  const danger = stops(outcome);
  if (danger.length > 0) {
    blocks.push(section(danger.map((d) => `${DANGER} *DANGER*: \`${escapeMrkdwn(d.address)}\` ${escapeMrkdwn(d.meaning)}`).join('\n')));
  }
  blocks.push(
    context(
      'Read-only: planned without the state lock, nothing was applied. Apply a reviewed change in staging first and run the health gate, then promote the same change to production in a maintenance window.',
    ),
  );
  return { text: `${title}.${fmtNote}`, blocks };
}

export function planFmtMessage(outcome: PlanOutcome): ChatMessage {
  const { fmt } = outcome;
  if (fmt.status === 'formatted') return reply('✅ *tofu fmt -check -recursive*: every file is formatted', []);
  if (fmt.status === 'unformatted') {
    return reply(`⚠️ *tofu fmt -check -recursive*: ${files(fmt.files.length)} not formatted: run \`tofu fmt -recursive\` in the Terraform directory and commit the result`, fmt.files);
  }
  return reply('❌ *tofu fmt -check -recursive* could not run', fmt.lines);
}

export function planValidateMessage(outcome: PlanOutcome): ChatMessage {
  if (outcome.validate.status === 'valid') return reply('✅ *tofu validate*: the configuration is valid', []);
  return reply('❌ *tofu validate*: the configuration is not valid; fix it before planning', outcome.validate.lines);
}

function changeLine(change: PlannedChange, dangerous: Set<string>): string {
  const symbol = change.action === 'replace' && change.actions[0] === 'create' ? '+/-' : SYMBOL[change.action];
  const action = change.action === 'unknown' ? change.actions.join(',') : change.action;
  const reason = change.reason === undefined ? '' : ` (${change.reason})`;
  return `${symbol.padStart(3)} ${action.padEnd(8)} ${change.address}${reason}${dangerous.has(change.address) ? ` ${DANGER} DANGER` : ''}`;
}

/** Changes grouped by provider (Talos and Proxmox first), then by action, most destructive first. */
export function groupedChanges(review: PlanReview): string[] {
  const dangerous = new Set(review.dangers.filter((d) => d.level === 'stop').map((d) => d.address));
  const providers = [...new Set(review.changes.map((c) => c.provider))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return providers.flatMap((provider) => {
    const mine = review.changes.filter((c) => c.provider === provider);
    const ordered = ACTION_ORDER.flatMap((action) => mine.filter((c) => c.action === action));
    return [provider, ...ordered.map((c) => changeLine(c, dangerous))];
  });
}

function rank(provider: string): number {
  return provider === 'Talos' ? 0 : provider === 'Proxmox' ? 1 : 2;
}

export function planChangesMessage(outcome: PlanOutcome): ChatMessage {
  const { plan } = outcome;
  if (plan.status === 'skipped') return reply(`⏭️ *tofu plan* skipped: ${plan.because}`, []);
  if (plan.status === 'error') return reply('❌ *tofu plan* failed; nothing was applied', plan.lines);
  const { review } = plan;
  if (review.changes.length === 0) return reply('✅ *tofu plan*: no changes; the infrastructure matches the configuration', []);
  const lines = [
    ...review.dangers.filter((d) => d.level === 'stop').map((d) => `${DANGER} *DANGER*: \`${escapeMrkdwn(d.address)}\` ${escapeMrkdwn(d.meaning)}`),
    ...review.dangers.filter((d) => d.level === 'caution').map((d) => `⚠️ \`${escapeMrkdwn(d.address)}\` ${escapeMrkdwn(d.meaning)}`),
  ];
  const head = `${review.dangers.some((d) => d.level === 'stop') ? DANGER : '📝'} *tofu plan*: ${planCounts(review)}`;
  return reply([head, ...lines].join('\n'), groupedChanges(review));
}

/** A thread reply: `mrkdwn` is built from escaped parts; `preformatted` escapes the raw evidence. */
function reply(mrkdwn: string, evidence: string[]): ChatMessage {
  const blocks = [section(mrkdwn)];
  if (evidence.length > 0) blocks.push(preformatted(evidence));
  return { text: mrkdwn, blocks };
}
