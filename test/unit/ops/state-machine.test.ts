import { describe, expect, it } from 'vitest';
import { OperationState } from '../../../src/ops/operation.ts';
import { ACTIVE, canTransition, FINISHED, HOLDING_LOCK, TRANSITIONS, WAITING, WALKING } from '../../../src/ops/state-machine.ts';

/** Every move the code makes, and who makes it. */
const MOVES: [OperationState, OperationState, string][] = [
  ['preflight', 'refused', 'preflight job: a refusal'],
  ['preflight', 'planned', 'preflight job: a plan'],
  ['preflight', 'running', 'preflight job: an operation that starts with its request'],
  ['preflight', 'cancelled', 'lifecycle.cancel'],
  ['planned', 'running', 'lifecycle.start'],
  ['planned', 'cancelled', 'lifecycle.cancel, plan expiry job'],
  ['running', 'awaiting-approval', 'walk: approval requested'],
  ['running', 'waiting-window', 'walk: outside the window'],
  ['running', 'failed', 'walk: stop at the first failure; snapshot job'],
  ['running', 'completed', 'walk: every step done; snapshot job'],
  ['running', 'cancelled', 'walk: cancel between steps'],
  ['awaiting-approval', 'running', 'lifecycle.decide: approved'],
  ['awaiting-approval', 'paused', 'approval expiry job'],
  ['awaiting-approval', 'failed', 'walk: stop (guarded by the walking states)'],
  ['awaiting-approval', 'cancelled', 'lifecycle.decide: stopped; lifecycle.cancel; walk: cancel between steps'],
  ['waiting-window', 'running', 'walk: the window opened; lifecycle.overrideWindow'],
  ['waiting-window', 'failed', 'walk: stop (guarded by the walking states)'],
  ['waiting-window', 'cancelled', 'lifecycle.cancel; walk: cancel between steps'],
  ['paused', 'running', 'lifecycle.rerequestApproval'],
  ['paused', 'cancelled', 'lifecycle.cancel'],
  ['failed', 'running', 'lifecycle.retry'],
  ['failed', 'cancelled', 'lifecycle.cancel'],
];

const STATES = OperationState.options;

describe('the operation state machine', () => {
  it.each(MOVES)('allows %s → %s (%s)', (from, to) => {
    expect(canTransition(from, to)).toBe(true);
  });

  it('allows no move but those the code makes', () => {
    // Arrange
    const declared = STATES.flatMap((from) => TRANSITIONS[from].map((to) => `${from} → ${to}`));

    // Assert
    expect(declared.sort()).toEqual(MOVES.map(([from, to]) => `${from} → ${to}`).sort());
  });

  it('lets a write keep any state, and takes nothing out of a finished one', () => {
    expect(STATES.every((s) => canTransition(s, s))).toBe(true);
    expect(FINISHED.flatMap((from) => STATES.filter((to) => to !== from && canTransition(from, to)))).toEqual([]);
    expect(canTransition('cancelled', 'running')).toBe(false);
    expect(canTransition('planned', 'completed')).toBe(false);
  });

  it('groups the states consistently: what is active is what has not finished, and only active states wait, walk or hold a lock', () => {
    expect([...ACTIVE, ...FINISHED].sort()).toEqual([...STATES].sort());
    expect(ACTIVE.filter((s) => FINISHED.includes(s))).toEqual([]);
    for (const group of [WAITING, WALKING, HOLDING_LOCK]) expect(group.every((s) => ACTIVE.includes(s))).toBe(true);
    // A cancel ends at once what does not walk; a walking operation other than running waits too.
    expect(STATES.filter((s) => !WAITING.includes(s) && !FINISHED.includes(s))).toEqual(['running']);
  });
});
