import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { escapeMrkdwn, section } from '../../../src/chat/blocks.ts';
import { nodeResultWords } from './texts.ts';
import type { Logger } from '../../../src/log/logger.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { roughDuration } from '../../../src/time/rough-duration.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import { startProgressReply } from '../shared/progress-reply.ts';

/** Minimum time between two edits of a node step's progress reply, in ms. */
const PROGRESS_EDIT_MS = 2000;

/** Characters of a stop's reason on the node's line; the whole reason is in the stop's own reply and the record. */
const REASON_CHARS = 80;

/** A node step's one line in the thread, edited in place as the node progresses. */
export interface NodeStepProgress {
  /** The newest progress (pull, install, drain, reboot …): posted at the first, then edited. */
  show(detail: string): void;
  /** The node's last line once the step has ended: its result (`detail`, when done) or why it stopped; waits for every edit. */
  close(outcome: 'done' | 'stopped', detail?: string): Promise<void>;
}

/** What the line shows: the newest detail, whether the step still runs, and how long it took once it ended. */
interface Shown {
  detail: string;
  state: 'running' | 'done' | 'stopped';
  tookMs?: number;
}

/** A reason cut to its first clause and a phone's width: the line says why, the stop's reply says everything. */
function shortReason(reason: string): string {
  const first = reason.split(/[;:\n]/)[0]!.trim();
  return first.length > REASON_CHARS ? `${first.slice(0, REASON_CHARS - 1)}…` : first;
}

/**
 * `✅ talos-prd-cp-1 · v1.12.11 · Ready · etcd 3/3 · gate ✓ · 6 min`, `⏳ talos-prd-cp-1 · installing …`,
 * `❌ talos-prd-cp-1 · the health gate after 10.0.30.11 failed · 4 min`.
 */
export function nodeLine(step: Step, shown: Shown): string {
  const name = step.nodeName ?? step.node ?? step.id;
  const took = shown.tookMs === undefined ? [] : [roughDuration(shown.tookMs)];
  if (shown.state === 'running') return [`⏳ ${name}`, shown.detail].join(' · ');
  if (shown.state === 'stopped') return [`❌ ${name}`, shortReason(shown.detail), ...took].join(' · ');
  const words = nodeResultWords({ ...step, detail: shown.detail });
  const facts = words === shown.detail ? [shortReason(words)] : words.split(', ').map((w) => (w === 'gate passed' ? 'gate ✓' : w));
  return [`✅ ${name}`, ...facts, ...took].join(' · ');
}

function render(step: Step, shown: Shown): ChatMessage {
  const text = nodeLine(step, shown);
  return { text, blocks: [section(escapeMrkdwn(text))] };
}

/**
 * One reply per run of the step, keyed by its start, so a resumed step edits the same reply and
 * never posts a second one. Best effort: a failed post or edit is logged, never fails the upgrade.
 */
export function nodeStepProgress(
  deps: PlaybookDeps,
  op: { id: string; channel: string; rootTs: string },
  step: Step,
  log: Logger,
): NodeStepProgress {
  const startedAt = Date.parse(step.startedAt ?? deps.now().toISOString());
  const key = `${op.id}-progress-${step.id}-${startedAt}`;
  const onError = (error: unknown): void => log.warn({ err: (error as Error).message }, 'node progress reply failed');
  const reply = startProgressReply<Shown>(deps, op, {
    key,
    render: (shown) => render(step, shown),
    minIntervalMs: PROGRESS_EDIT_MS,
    onError,
  });
  let latest: string | undefined;
  return {
    show(detail) {
      latest = detail;
      reply.update({ detail, state: 'running' });
    },
    async close(outcome, detail) {
      // Durations on the injected clock, from the step's start (a resumed step counts from its first start).
      const last: Shown = { detail: detail ?? latest ?? 'stopped', state: outcome, tookMs: deps.now().getTime() - startedAt };
      // A node that showed no progress still gets its line.
      if (latest === undefined) await reply.open(last).catch(onError);
      await reply.finish(last);
    },
  };
}
