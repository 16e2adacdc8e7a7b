import { describe, expect, it } from 'vitest';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { ACTION, buttonValue } from '../../../src/chat/buttons.ts';
import { failureMessage } from '../../../src/chat/stop-messages.ts';
import { nodeOutcome, type ClusterStanding } from '../../../src/chat/stop-state.ts';
import type { Block } from '../../../src/port/chat-port.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { anOperation } from '../../support/builders.ts';

const CP = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];

function nodeStep(i: number, overrides: Partial<Step> = {}): Step {
  return {
    id: `cp-${i + 1}`,
    kind: 'upgrade-control-plane',
    node: CP[i],
    nodeName: `talos-prd-cp-${i + 1}`,
    status: 'pending',
    ...overrides,
  };
}

/** An upgrade stopped on its second node after the upgrade was asked of it: a Retry, a Rollback and a Cancel on offer. */
function stoppedOnSecond(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    state: 'failed',
    startedBy: 'U0BOB',
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'done' },
      nodeStep(0, { status: 'done', issuedAt: '2026-11-29T22:10:00.000Z', startedAt: '2026-11-29T22:09:00.000Z' }),
      nodeStep(1, { status: 'failed', issuedAt: '2026-11-29T22:20:00.000Z', startedAt: '2026-11-29T22:19:00.000Z' }),
      nodeStep(2),
    ],
    retry: { step: 'cp-2', nonce: 'r3try', state: 'offered', resume: 'observe' },
    failure: { step: 'cp-2', node: CP[1]!, nonce: 'f41l', rollback: 'offered' },
    stopNonce: 'st0p',
    ...overrides,
  });
}

const STANDING: ClusterStanding = {
  nodes: [
    { node: CP[0]!, name: 'talos-prd-cp-1', version: 'v1.12.1', ready: true, cordoned: false },
    { node: CP[1]!, name: 'talos-prd-cp-2', version: 'v1.11.6', ready: false, cordoned: true },
    { node: CP[2]!, errors: ['talos: no answer within 5 s', 'kubernetes: timeout'] },
  ],
};

const RETRY_NOTE = 'watches the node come back on v1.12.1, then runs the checks again; the upgrade is not sent again';

function stop(op: Operation, standing: ClusterStanding | undefined = STANDING) {
  return failureMessage(
    op,
    op.steps[2],
    'talos-prd-cp-2 was not Ready in time',
    ['Ready=False'],
    presentationOf(op.kind),
    RETRY_NOTE,
    true,
    standing,
  );
}

const texts = (block: Block | undefined): string => JSON.stringify(block ?? {});
const buttons = (blocks: Block[]): Record<string, unknown>[] =>
  blocks.filter((b) => b['type'] === 'actions').flatMap((b) => b['elements'] as Record<string, unknown>[]);

describe('a stop says where things stand', () => {
  it('lists each node with its version, Ready, cordoned and what this operation did to it, right after the reason', () => {
    // Act
    const message = stop(stoppedOnSecond());

    // Assert
    const nodes = message.blocks![1] as { type: string; text: { text: string } };
    expect(nodes.type).toBe('section');
    expect(nodes.text.text.split('\n')).toEqual([
      '*Nodes now*:',
      '• talos-prd-cp-1 (10.0.30.11): v1.12.1 · Ready · not cordoned · upgraded by this operation',
      '• talos-prd-cp-2 (10.0.30.12): v1.11.6 · NotReady · cordoned · upgrade requested by this operation, then stopped',
      '• talos-prd-cp-3 (10.0.30.13): version unknown · Ready unknown · cordoned unknown · not touched by this operation',
    ]);
    expect(texts(message.blocks![2])).toContain('The bot did not touch talos-prd-cp-3.');
    expect(texts(message.blocks![2])).not.toContain('no answer within');
  });

  it('offers Retry, Rollback and Cancel with the action ids the handlers listen on, each saying what it does', () => {
    // Act
    const message = stop(stoppedOnSecond());

    // Assert
    const offered = buttons(message.blocks!);
    expect(offered.map((b) => [b['action_id'], b['value']])).toEqual([
      [ACTION.retry, buttonValue('op-1a2b3c4d5e', 'r3try')],
      [ACTION.rollback, buttonValue('op-1a2b3c4d5e', 'f41l')],
      [ACTION.cancelPlan, buttonValue('op-1a2b3c4d5e', 'st0p')],
    ]);
    expect(JSON.stringify(offered[0]!['confirm'])).toContain(RETRY_NOTE);
    expect(JSON.stringify(message.blocks)).toContain('Fix the cause first if it is still there.');
    expect(offered.map((b) => (b['text'] as { text: string }).text)).toEqual([
      'Retry talos-prd-cp-2',
      'Roll back talos-prd-cp-2',
      'Cancel',
    ]);
    expect(JSON.stringify(offered[2]!['confirm'])).toContain('releases the lock on production; the nodes stay as they are');
    expect(message.blocks!.filter((b) => b['type'] === 'actions').map((b) => b['block_id'])).toEqual([
      'retry-op-1a2b3c4d5e-r3try',
      'rollback-op-1a2b3c4d5e-f41l',
      'cancel-op-1a2b3c4d5e-st0p',
    ]);
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('names the nodes it never reached when the stop came before the step began', () => {
    // Arrange
    const op = stoppedOnSecond({
      steps: [
        { id: 'snapshot', kind: 'snapshot', status: 'done' },
        nodeStep(0, { status: 'done', issuedAt: '2026-11-29T22:10:00.000Z' }),
        nodeStep(1),
        nodeStep(2),
      ],
      failure: undefined,
    });

    // Act
    const message = failureMessage(op, undefined, 'etcd quorum could not be read', [], presentationOf(op.kind), undefined, true, STANDING);

    // Assert
    expect(JSON.stringify(message.blocks)).toContain('The bot did not touch talos-prd-cp-2, talos-prd-cp-3.');
    expect(buttons(message.blocks!).map((b) => b['action_id'])).toEqual([ACTION.retry, ACTION.cancelPlan]);
  });

  it('says every node is unknown when the bot could not reach the cluster, and still offers a Cancel', () => {
    // Arrange
    const op = stoppedOnSecond({ retry: undefined, failure: undefined });
    const standing: ClusterStanding = { nodes: CP.map((node) => ({ node })), unreachable: 'the bot could not reach it' };

    // Act
    const message = stop(op, standing);

    // Assert
    const nodes = texts(message.blocks![1]);
    expect(nodes).toContain('the bot could not read the cluster: the bot could not reach it');
    expect(nodes.match(/version unknown · Ready unknown · cordoned unknown/g)).toHaveLength(3);
    expect(buttons(message.blocks!).map((b) => b['action_id'])).toEqual([ACTION.cancelPlan]);
  });

  it('says a rollback changed its node, not upgraded it', () => {
    // Arrange
    const op = stoppedOnSecond({ kind: 'node-rollback', retry: undefined, failure: undefined });

    // Act
    const message = stop(op);

    // Assert
    expect(JSON.stringify(message.blocks)).toContain(
      'talos-prd-cp-1 (10.0.30.11): v1.12.1 · Ready · not cordoned · changed by this operation',
    );
    expect(JSON.stringify(message.blocks)).not.toContain('upgraded by this operation');
  });

  it('offers no Cancel button for an operation that holds no lock, and says there is nothing to release', () => {
    // Arrange
    const op = stoppedOnSecond({ kind: 'snapshot', retry: undefined, failure: undefined });

    // Act
    const message = failureMessage(
      op,
      undefined,
      'the snapshot could not be written',
      [],
      presentationOf(op.kind),
      undefined,
      false,
      STANDING,
    );

    // Assert
    expect(buttons(message.blocks!)).toEqual([]);
    expect(JSON.stringify(message.blocks!.at(-1))).toContain('it holds no lock, and the nodes stay as they are');
  });

  it('stays inside Block Kit limits with 200 nodes of long names', () => {
    // Arrange
    const long = 'n'.repeat(200);
    const nodes = Array.from({ length: 200 }, (_, i) => `10.0.${Math.floor(i / 250)}.${i % 250}`);
    const op = stoppedOnSecond({
      steps: nodes.map((node, i) => ({ id: `s${i}`, kind: 'upgrade-worker', node, nodeName: `${long}${i}`, status: 'pending' })),
    });
    const standing: ClusterStanding = {
      nodes: nodes.map((node, i) => ({ node, name: `${long}${i}`, version: 'v1.12.1', ready: true, cordoned: false })),
    };

    // Act
    const message = failureMessage(op, op.steps[0], 'x'.repeat(5000), [], presentationOf(op.kind), 'y'.repeat(5000), true, standing);

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
    expect(texts(message.blocks![1])).toMatch(/… \d+ more node\(s\)/);
  });
});

describe('what an operation did to a node, from its steps', () => {
  it.each([
    [{ status: 'done', issuedAt: 't' }, 'upgraded'],
    [{ status: 'skipped' }, 'skipped'],
    [{ status: 'failed', issuedAt: 't' }, 'failed-after-issue'],
    [{ status: 'failed' }, 'failed-before-issue'],
    [{ status: 'pending' }, 'untouched'],
  ] as const)('a step %o reads as %s', (step, outcome) => {
    const op = anOperation({ steps: [nodeStep(0, step)] });

    expect(nodeOutcome(op, CP[0]!)).toBe(outcome);
    expect(nodeOutcome(op, CP[1]!)).toBe('untouched');
  });
});
