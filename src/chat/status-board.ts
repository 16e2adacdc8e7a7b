import { roughDuration } from '../time/rough-duration.ts';
import type { Operation, Step } from '../ops/operation.ts';
import type { Block } from '../port/chat-port.ts';
import { actions, context, escapeAround, escapeMrkdwn, formatTime, mentionUser, section, truncate } from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import type { Presentation } from './presentation.ts';

/**
 * The root message of a running operation as a live status board: what the step in progress
 * waits on and for how long, the time so far, each finished step with its duration, and a
 * [Stop after this node] button. Everything is drawn from the stored operation, so a run that
 * resumes after a crash draws the same board.
 */

const STEP_ICON: Record<Step['status'], string> = { pending: '▫️', running: '⏳', done: '✅', skipped: '⏭️', failed: '❌' };

/** Past this many steps, older finished steps and later pending ones are summarised in one line each. */
const LISTED_STEPS = 15;
/** Finished steps still listed one by one when older ones are summarised. */
const RECENT_FINISHED = 3;
/** Pending steps still listed one by one when later ones are summarised. */
const NEXT_PENDING = 3;

export { roughDuration };

function between(from: string | undefined, to: string | Date | undefined): number | undefined {
  if (from === undefined || to === undefined) return undefined;
  const ms = (typeof to === 'string' ? Date.parse(to) : to.getTime()) - Date.parse(from);
  return Number.isNaN(ms) ? undefined : Math.max(0, ms);
}

/** The step in progress: running, or the one the operation waits to start (approval, window). */
export function currentStep(op: Operation): Step | undefined {
  return op.steps.find((s) => s.status === 'running') ?? op.steps.find((s) => s.status === 'pending');
}

/**
 * The nonce of the [Stop after this node] button: the running step's place and start. A click from a
 * board that showed another step (or an earlier run of this one) is stale. Derived from the stored
 * operation, so a resumed run draws the same button.
 */
export function stopAfterNonce(op: Operation): string | undefined {
  const index = op.steps.findIndex((s) => s.status === 'running');
  if (index < 0) return undefined;
  const started = Date.parse(op.steps[index]!.startedAt ?? '');
  return `s${index}t${Number.isNaN(started) ? '0' : started.toString(36)}`;
}

/** What the button stops after: a node by its name, or the step. */
function stopAfterLabel(step: Step): string {
  return step.node !== undefined ? 'Stop after this node' : 'Stop after this step';
}

/** One step's line: finished steps with their duration; the details of a finished step are in the thread. */
function stepLine(op: Operation, step: Step, index: number, presentation: Presentation): string {
  const label = escapeMrkdwn(presentation.stepLabel(step));
  if (op.state === 'planned') {
    const gate = presentation.plannedGates?.(step) ?? '';
    const detail = step.detail ? ` — ${escapeMrkdwn(step.detail)}` : '';
    return `${STEP_ICON[step.status]} ${index + 1}. ${label}${gate}${detail}`;
  }
  const took = between(step.startedAt, step.endedAt);
  const duration = took !== undefined && step.status !== 'running' && step.status !== 'pending' ? ` · ${roughDuration(took)}` : '';
  // A failure's reason and a skip's why are what a reader needs in the list; a done step's detail is in the thread.
  const detail =
    (step.status === 'failed' || step.status === 'skipped') && step.detail ? ` — ${escapeMrkdwn(truncate(step.detail, 300))}` : '';
  const waiting = op.approvals.filter((a) => a.step === step.id).at(-1)?.state === 'pending' ? ' — awaiting approval' : '';
  return `${STEP_ICON[step.status]} ${index + 1}. ${label}${duration}${waiting}${detail}`;
}

/**
 * The steps, one a line; a long operation summarises its older finished steps (and its later
 * pending ones) in one line each, so the board stays within Block Kit's limits and a phone's screen.
 */
export function stepLines(op: Operation, presentation: Presentation): string[] {
  const all = op.steps.map((step, index) => ({ step, index }));
  if (all.length <= LISTED_STEPS) return all.map(({ step, index }) => stepLine(op, step, index, presentation));
  const finished = all.filter(({ step }) => step.status === 'done' || step.status === 'skipped');
  const older = finished.slice(0, Math.max(0, finished.length - RECENT_FINISHED));
  const olderIds = new Set(older.map(({ step }) => step.id));
  const rest = all.filter(({ step }) => !olderIds.has(step.id));
  const pending = rest.filter(({ step }) => step.status === 'pending');
  const later = pending.slice(NEXT_PENDING);
  const laterIds = new Set(later.map(({ step }) => step.id));
  const lines: string[] = [];
  if (older.length > 0) {
    const took = older.reduce((sum, { step }) => sum + (between(step.startedAt, step.endedAt) ?? 0), 0);
    const first = presentation.stepLabel(older[0]!.step);
    const last = presentation.stepLabel(older.at(-1)!.step);
    lines.push(`✅ ${older.length} earlier steps done in ${roughDuration(took)} (${escapeMrkdwn(first)} … ${escapeMrkdwn(last)})`);
  }
  for (const { step, index } of rest) if (!laterIds.has(step.id)) lines.push(stepLine(op, step, index, presentation));
  if (later.length > 0)
    lines.push(`▫️ ${later.length} more steps to go (${escapeMrkdwn(presentation.stepLabel(later.at(-1)!.step))} last)`);
  return lines;
}

/** How long, as of `now`, and since when, in the reader's zone. */
function since(at: string, now: Date | undefined): string {
  const waited = between(at, now);
  return waited === undefined ? `since ${formatTime(at)}` : `${roughDuration(waited)} (since ${formatTime(at)})`;
}

/** What the operation does now, in one line: the step in progress and what it waits on, and for how long. */
export function nowLine(op: Operation, presentation: Presentation, now?: Date): string | undefined {
  const step = currentStep(op);
  if (step === undefined) return undefined;
  const label = escapeMrkdwn(presentation.stepLabel(step));
  if (op.state === 'running' && step.status === 'running') {
    const phase = op.phase?.step === step.id ? op.phase : undefined;
    const what = phase !== undefined ? escapeMrkdwn(truncate(phase.text, 200)) : 'in progress';
    return `⏳ *Now:* ${label}: ${what}, ${since(phase?.since ?? step.startedAt ?? op.startedAt ?? op.createdAt, now)}`;
  }
  if (op.state === 'awaiting-approval') {
    const approval = op.approvals.filter((a) => a.step === step.id && a.state === 'pending').at(-1);
    const expiry = approval !== undefined ? `, expires ${formatTime(approval.expiresAt)}` : '';
    return `⏸ *Now:* waiting for an approver to approve ${label}${expiry} (the request is in the thread)`;
  }
  if (op.state === 'waiting-window') {
    const opens = op.windowWait?.opensAt !== undefined ? `; it opens ${formatTime(op.windowWait.opensAt)}` : '';
    return `⏸ *Now:* waiting for the maintenance window before ${label}${opens}`;
  }
  if (op.state === 'paused') return `⏸ *Now:* paused: the approval of ${label} expired; ask again from its request in the thread`;
  return undefined;
}

/** The board's blocks while the operation runs or waits: now, the time so far, and the Stop button or the stop asked for. */
export function boardBlocks(op: Operation, presentation: Presentation, now?: Date): Block[] {
  if (!['running', 'awaiting-approval', 'waiting-window', 'paused'].includes(op.state)) return [];
  const blocks: Block[] = [];
  const line = nowLine(op, presentation, now);
  const started = op.startedAt ?? op.createdAt;
  const sofar = `*Time so far:* ${since(started, now)}`;
  blocks.push(section(line !== undefined ? `${line}\n${sofar}` : sofar));
  const phase = op.phase;
  const running = op.steps.find((s) => s.status === 'running');
  if (op.state === 'running' && running !== undefined && phase?.step === running.id && phase.detail)
    blocks.push(context(escapeMrkdwn(truncate(phase.detail, 600))));
  const nonce = stopAfterNonce(op);
  if (op.state === 'running' && running !== undefined && op.cancelRequestedBy !== undefined) {
    blocks.push(
      context(
        `⏹ Stopping after ${escapeMrkdwn(presentation.stepLabel(running))}, as ${mentionUser(op.cancelRequestedBy)} asked: no later step starts.`,
      ),
    );
  } else if (op.state === 'running' && running !== undefined && nonce !== undefined) {
    blocks.push(actions(`board-${op.id}-${nonce}`, [stopAfterButton(op, running, nonce, presentation)]));
  }
  return blocks;
}

function stopAfterButton(op: Operation, running: Step, nonce: string, presentation: Presentation) {
  const label = presentation.stepLabel(running);
  const untouched = op.steps.filter((s) => s.status === 'pending').length;
  const rest =
    untouched === 0 ? 'No step is left after it.' : `The ${untouched} step${untouched === 1 ? '' : 's'} after it will not start.`;
  return {
    text: stopAfterLabel(running),
    actionId: ACTION.stopAfter,
    value: buttonValue(op.id, nonce),
    style: 'danger' as const,
    confirm: {
      title: `${stopAfterLabel(running)}?`,
      text: `${label} finishes as it would (it is not interrupted), then the operation stops and *${op.cluster}* is free. ${rest}`,
      confirm: 'Stop after it',
      deny: 'Keep going',
    },
  };
}

/** A user's mention the bot wrote into a reason (`cancelled by <@U…>`): kept; everything else escaped. */
const USER_MENTION = /<@[UW][A-Z0-9]{2,20}>/g;

function reasonText(reason: string): string {
  return escapeAround(truncate(reason, 300), USER_MENTION, escapeMrkdwn);
}

/**
 * The outcome a finished root leads with, with the duration: `✅ completed in 24 min: …`,
 * `❌ stopped at the first failure after 9 min, at talos-prd-cp-2: …`, `🚫 cancelled after 9 min, after talos-prd-cp-1: …`.
 */
export function outcomeLine(op: Operation, presentation: Presentation): string | undefined {
  const took = between(op.startedAt, op.endedAt);
  const duration = took === undefined ? undefined : roughDuration(took);
  const reason = op.reason !== undefined ? reasonText(op.reason) : undefined;
  if (op.state === 'completed') {
    // Nodes, not steps: a replacement runs several steps on the one node it replaces.
    const nodes = new Set(op.steps.filter((s) => s.node !== undefined && s.status === 'done').map((s) => s.node)).size;
    const onNodes = nodes > 0 ? ` on ${nodes} node${nodes === 1 ? '' : 's'}` : '';
    return `✅ completed${duration ? ` in ${duration}` : ''}: ${escapeMrkdwn(presentation.title(op))}${onNodes}`;
  }
  if (op.state === 'failed') {
    const failed = op.steps.find((s) => s.status === 'failed');
    const at = failed !== undefined ? `, at ${escapeMrkdwn(presentation.stepLabel(failed))}` : '';
    return `❌ stopped at the first failure${duration ? ` after ${duration}` : ''}${at}: ${reason ?? 'see the thread'}`;
  }
  if (op.state === 'cancelled') {
    if (op.startedAt === undefined) return `🚫 cancelled before it started${reason ? `: ${reason}` : ''}`;
    const last = op.steps.filter((s) => s.status === 'done' || s.status === 'skipped').at(-1);
    const after = last !== undefined ? `, after ${escapeMrkdwn(presentation.stepLabel(last))}` : ', before its first step';
    const left = op.steps.filter((s) => s.status === 'pending').length;
    const untouched = left > 0 ? `; ${left} step${left === 1 ? '' : 's'} not started` : '';
    return `🚫 cancelled${duration ? ` after ${duration}` : ''}${after}${reason ? `: ${reason}` : ''}${untouched}`;
  }
  return undefined;
}
