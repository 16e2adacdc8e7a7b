import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { stopAfterNonce } from '../../../src/chat/status-board.ts';
import { cancelRefusal } from '../../../src/ops/transitions.ts';
import { refused, type MoveDeps, type MoveResult } from './deps.ts';
import type { OperationClick } from './start.ts';

/**
 * The status board's [Stop after this node]: the running operation stops at the next step boundary,
 * as a `/talos cancel` of a running operation does (the walk ends it between steps and frees the
 * cluster). The button names the step it was drawn for: a click from a board that showed another step,
 * or after the operation stopped or ended, changes nothing. The request and its entry are one write.
 */
export async function stopAfterStep(deps: MoveDeps, click: OperationClick): Promise<MoveResult> {
  const { op, user } = click;
  const label = (o: typeof op): string => {
    const running = o.steps.find((s) => s.status === 'running');
    return running !== undefined ? deps.policy.presentation(o.kind).stepLabel(running) : 'its current step';
  };
  const refusal = (o: typeof op): MoveResult | undefined => {
    if (o.state !== 'running')
      return refused('stale', `\`${o.id}\` is ${o.state}; this Stop after this node button is no longer valid. Nothing changed.`);
    if (o.cancelRequestedBy !== undefined)
      return refused('already', `\`${o.id}\` is already stopping after ${label(o)}, as <@${o.cancelRequestedBy}> asked. Nothing changed.`);
    if (stopAfterNonce(o) !== click.nonce)
      return refused(
        'stale',
        `This board is out of date: \`${o.id}\` has moved on to ${label(o)}. Nothing changed; use the Stop button of the board as it is now.`,
      );
    const kind = cancelRefusal(o, (x) => deps.policy.cancelRefusal(x));
    if (kind !== undefined) return refused('not-cancellable', `\`${o.id}\` cannot be stopped now: ${kind} Nothing changed.`);
    return undefined;
  };
  const early = refusal(op);
  if (early !== undefined) return early;
  const { op: after, changed } = await deps.audit.transition(
    op.id,
    {
      actor: user,
      event: `stop requested by <@${user}> after ${label(op)}`,
      detail: 'the operation stops once this step ends; no later step starts',
    },
    (o) => (refusal(o) === undefined ? { ...o, cancelRequestedBy: user } : undefined),
  );
  if (!changed) return refusal(after) ?? refused('stale', `\`${op.id}\` changed meanwhile. Nothing changed.`);
  return {
    ok: true,
    op: after,
    reply: `${label(after)} finishes as it would, then \`${after.id}\` stops; no later step starts. The thread will say when.`,
    followUp: async () => {
      if (after.rootTs === undefined) return;
      const latest = (await deps.store.get(after.id)) ?? after;
      await deps.chat.update(latest.channel, after.rootTs, operationRootMessage(latest, deps.policy.presentation(latest.kind), deps.now()));
    },
  };
}
