import { describe, expect, it } from 'vitest';
import { approvalDecidedMessage, approvalReminderMessage } from '../../../src/chat/approval-messages.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import { statusText } from '../../../src/chat/status-message.ts';
import { failureMessage } from '../../../src/chat/stop-messages.ts';
import { PLAYBOOKS, PRESENTATIONS, presentationOf } from '../../../jobs/playbooks/index.ts';
import { newOperation, type Approval, type Operation } from '../../../src/ops/operation.ts';

/** A kind no presenter knows: everything it shows comes from this declaration. */
const FAKE: Presentation = {
  name: 'fake procedure',
  title: (op) => `Fake procedure on ${op.cluster}`,
  order: 'fake order',
  gates: 'fake gates',
  startTitle: 'Fake it?',
  startLabel: 'Fake',
  reviewItems: ['fake item reviewed'],
  context: () => 'fake context',
  stepLabel: (step) => `fake step ${step.id}`,
  plannedGates: () => ' · fake gate',
  approval: { verb: 'Apply', subject: (op, step) => `the fake change ${step.id} of ${op.cluster}` },
  closing: () => [{ type: 'context', elements: [{ type: 'mrkdwn', text: 'fake closing' }] }],
};

function operation(fields: Partial<Operation> = {}): Operation {
  return newOperation({
    kind: 'talos-upgrade',
    cluster: 'staging',
    channel: 'C0MAINTSTG',
    requestedBy: 'U0ALICE',
    createdAt: '2026-12-01T10:00:00.000Z',
    state: 'planned',
    planNonce: 'pl4n',
    steps: [{ id: 'one', kind: 'verify', status: 'pending' }],
    ...fields,
  });
}

const approval: Approval = {
  step: 'one',
  nonce: 'n0nce',
  messageTs: '1.2',
  requestedAt: '2026-12-01T10:00:00.000Z',
  expiresAt: '2026-12-01T11:00:00.000Z',
  state: 'approved',
  by: 'U0CAROL',
};

describe('the presenters take their texts from the declaration they are given', () => {
  it('builds the root message from the title, steps, gates, review items and Start of the declaration', () => {
    // Act
    const message = operationRootMessage(operation(), FAKE);
    const text = JSON.stringify(message.blocks);

    // Assert
    expect(message.text).toMatch(/^Fake procedure on staging — /);
    expect(text).toContain('*Steps* (fake order):');
    expect(text).toContain('fake step one · fake gate');
    expect(text).toContain('☐ fake item reviewed');
    expect(text).toContain('"title":{"type":"plain_text","text":"Fake it?"}');
    expect(text).toContain('fake closing');
    expect(text).not.toContain('verify every node');
  });

  it('names steps and approvals in the words of the declaration', () => {
    // Arrange
    const op = operation({ state: 'running', steps: [{ id: 'one', kind: 'verify', status: 'running' }] });

    // Act
    const failure = failureMessage(op, op.steps[0], 'it broke', [], FAKE);
    const decided = approvalDecidedMessage(op, approval, op.steps[0]!, FAKE);
    const reminder = approvalReminderMessage(op, { ...approval, state: 'pending' }, op.steps[0]!, [], undefined, FAKE, new Date());
    const status = statusText([{ cluster: 'staging', holder: op.id, ops: [op] }], () => FAKE);

    // Assert
    expect(failure.text).toContain('Stopped at fake step one: it broke.');
    expect(decided.text).toContain('the fake change one of staging');
    expect(reminder.text).toContain('Apply the fake change one of staging?');
    expect(status).toContain('now: fake step one');
  });
});

describe('the presentation registry', () => {
  it('presents every operation kind: each playbook by its own texts, the snapshot by its own', () => {
    // Assert
    expect(Object.keys(PRESENTATIONS).sort()).toEqual([
      'etcd-restore',
      'k8s-upgrade',
      'node-remove',
      'node-replace',
      'node-rollback',
      'snapshot',
      'talos-upgrade',
      'terraform-apply',
    ]);
    for (const [kind, playbook] of Object.entries(PLAYBOOKS)) expect(presentationOf(kind)).toBe(playbook.texts);
    expect(presentationOf('snapshot').title(operation({ kind: 'snapshot' }))).toBe('etcd snapshot: staging');
  });

  it('refuses a kind nothing presents', () => {
    // Assert
    expect(() => presentationOf('toString')).toThrow('operation kind toString has no presentation');
  });
});
