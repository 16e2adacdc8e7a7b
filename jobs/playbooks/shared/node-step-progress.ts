import type { ChatMessage } from '../../../src/port/chat-port.ts';
import { escapeMrkdwn, section } from '../../../src/chat/blocks.ts';
import { talosUpgradeStepLabel as stepLabel } from '../talos-upgrade/texts.ts';
import type { Logger } from '../../../src/log/logger.ts';
import type { Step } from '../../../src/ops/operation.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import { startProgressReply } from './progress-reply.ts';

/** Minimum time between two edits of a node step's progress reply, in ms. */
const PROGRESS_EDIT_MS = 2000;

/** A node step's live progress in its own thread reply. */
export interface NodeStepProgress {
  /** The newest progress (pull, install, drain, reboot …): posted at the first, then edited. */
  show(detail: string): void;
  /** The last state of the reply once the step has ended (`detail`: its result, when done); waits for every edit. */
  close(outcome: 'done' | 'stopped', detail?: string): Promise<void>;
}

/** What the reply shows: the newest detail, and whether the step still runs. */
interface Shown {
  detail: string;
  state: 'running' | 'done' | 'stopped';
}

function render(step: Step, detail: string, state: Shown['state']): ChatMessage {
  const icon = state === 'running' ? '⏳' : state === 'done' ? '✅' : '⏹';
  const text = `${icon} ${stepLabel(step)}: ${detail}${state === 'stopped' ? ' (the step stopped; see the reply below)' : ''}`;
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
  const key = `${op.id}-progress-${step.id}-${Date.parse(step.startedAt ?? deps.now().toISOString())}`;
  const reply = startProgressReply<Shown>(deps, op, {
    key,
    render: (shown) => render(step, shown.detail, shown.state),
    minIntervalMs: PROGRESS_EDIT_MS,
    onError: (error) => log.warn({ err: (error as Error).message }, 'node progress reply failed'),
  });
  let latest: string | undefined;
  return {
    show(detail) {
      latest = detail;
      reply.update({ detail, state: 'running' });
    },
    async close(outcome, detail) {
      // Nothing shown, nothing posted: there is no reply to close.
      if (latest !== undefined) await reply.finish({ detail: detail ?? latest, state: outcome });
    },
  };
}
