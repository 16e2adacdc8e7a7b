import { errorText } from '../../src/chat/error-text.ts';
import type { Logger } from '../../src/log/logger.ts';
import { WALKING } from '../../src/ops/state-machine.ts';
import type { OpsJobDeps } from './job-context.ts';
import { refreshRoot } from './root-message.ts';

/**
 * Minimum time between two edits of a root by its board, in ms. Slack allows `chat.update` about
 * once a second per channel, and the channel also carries the thread's replies and the node's
 * progress reply: the board takes a share of it, never all.
 */
export const BOARD_EDIT_MS = 3000;

/** The root message of one operation as a live status board, for the run that walks it. */
export interface LiveBoard {
  /**
   * Records what the step `stepId` waits on (`rebooting, waiting for talos-prd-cp-1`, with an optional
   * detail such as the checks still pending) and repaints the root, throttled. Returns at once; a
   * failed write or edit is logged, never the step's failure. A phase whose text is unchanged keeps
   * its start, so the board shows how long the step has waited on it.
   */
  phase(stepId: string, text: string, detail?: string): void;
  /** Repaints the root from the stored operation, throttled (a step started or ended). */
  repaint(): void;
  /** Waits for the writes in flight and drops a repaint still due: the run's own last edit, if any, follows. */
  close(): Promise<void>;
}

/**
 * One operation's board: every edit draws the stored operation, so a repaint after a crash, or
 * from another replica, shows the same board. Edits are coalesced: the first after a quiet spell
 * goes out at once, later ones at most every `minIntervalMs`, the last one always.
 */
export function liveBoard(
  deps: Pick<OpsJobDeps, 'store' | 'chat' | 'logger' | 'presentations' | 'now'>,
  opId: string,
  log: Logger,
  minIntervalMs = BOARD_EDIT_MS,
): LiveBoard {
  let chain: Promise<void> = Promise.resolve();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastEdit = Number.NEGATIVE_INFINITY;
  let closed = false;
  const queue = (work: () => Promise<void>, what: string): void => {
    chain = chain.then(work).catch((error: unknown) => log.warn({ err: errorText(error) }, what));
  };
  const edit = (): void => {
    timer = undefined;
    lastEdit = Date.now();
    queue(async () => {
      const op = await deps.store.get(opId);
      if (op !== undefined) await refreshRoot(deps, op);
    }, 'status board not repainted');
  };
  const repaint = (): void => {
    if (closed || timer !== undefined) return;
    timer = setTimeout(edit, Math.max(0, lastEdit + minIntervalMs - Date.now()));
  };
  return {
    phase(stepId, text, detail) {
      if (closed) return;
      const since = deps.now().toISOString();
      queue(async () => {
        const { changed } = await deps.store.update(opId, (o) => {
          // Only while the step runs: a phase that arrives after its step ended would describe nothing.
          if (!WALKING.includes(o.state) || o.steps.find((s) => s.id === stepId)?.status !== 'running') return undefined;
          const same = o.phase?.step === stepId && o.phase.text === text;
          if (same && o.phase?.detail === detail) return undefined;
          return { ...o, phase: { step: stepId, text, detail, since: same ? o.phase!.since : since } };
        });
        if (changed) repaint();
      }, 'status board phase not recorded');
    },
    repaint,
    async close() {
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      await chain;
    },
  };
}
