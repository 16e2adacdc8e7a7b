import { describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/port/chat-port.ts';
import {
  applyRequestMessage,
  approvalDecidedMessage,
  approvalReminderMessage,
  approvalRequestMessage,
  nodeApprovalMessage,
  shownEvidence,
  withApprovers,
  withScope,
} from '../../../src/chat/approval-messages.ts';
import { ACTION, buttonValue } from '../../../src/chat/buttons.ts';
import { toOperator } from '../../../src/chat/follow-ups.ts';
import { terraformFollowUp } from '../../../jobs/playbooks/talos-upgrade/messages.ts';
import { operationRootMessage } from '../../../src/chat/operation-root.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { k8sUpgradeTexts } from '../../../jobs/playbooks/k8s-upgrade/texts.ts';
import { terraformApplyTexts } from '../../../jobs/playbooks/terraform-apply/texts.ts';
import { NO_CHANGES } from '../../../src/rules/terraform-change.ts';
import { REVIEW_ITEMS, talosUpgradeTexts } from '../../../jobs/playbooks/talos-upgrade/texts.ts';
import { failureMessage, windowWaitMessage } from '../../../src/chat/stop-messages.ts';
import { statusText } from '../../../src/chat/status-message.ts';
import type { Approval, Operation, OperationState, Step } from '../../../src/ops/operation.ts';
import { blockKitProblems } from '../../support/block-kit-limits.ts';
import { anOperation } from '../../support/builders.ts';

const LONG = 'x'.repeat(500);
/** 200 evidence lines of 500 characters: more than any block can hold. */
const HUGE_EVIDENCE = Array.from({ length: 200 }, (_, i) => `${i} ${LONG}`.slice(0, 500));

function step(overrides: Partial<Step> = {}): Step {
  return {
    id: 's1',
    kind: 'upgrade-control-plane',
    node: '10.0.30.11',
    nodeName: 'talos-cp-1',
    host: 'pve-1',
    image: 'factory.talos.dev/nocloud-installer/376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba:v1.12.1',
    status: 'pending',
    ...overrides,
  };
}

function approval(overrides: Partial<Approval> = {}): Approval {
  return {
    step: 's1',
    nonce: 'n0nce1',
    messageTs: '1700000000.000100',
    requestedAt: '2026-11-29T22:10:00.000Z',
    expiresAt: '2026-11-29T23:10:00.000Z',
    state: 'pending',
    ...overrides,
  };
}

function operation(overrides: Partial<Operation> = {}): Operation {
  return anOperation({
    revision: 3,
    steps: [step({ id: 's0', kind: 'snapshot', node: undefined, nodeName: undefined, host: undefined, image: undefined }), step()],
    planNonce: 'pl4nn0nce',
    ...overrides,
  });
}

/** An operation with everything as long and numerous as it can plausibly get. */
function hugeOperation(state: OperationState, kind: Operation['kind'] = 'talos-upgrade'): Operation {
  return operation({
    kind,
    state,
    cluster: `c${'-x'.repeat(19)}`,
    startedBy: 'U0BOB',
    startedAt: '2026-11-29T22:05:00.000Z',
    target: { version: 'v1.12.1', fromVersion: 'v1.11.6', node: '10.0.30.11', nodeName: `n${LONG}`, talosVersion: 'v1.11.6' },
    steps: Array.from({ length: 200 }, (_, i) =>
      step({ id: `s${i}`, nodeName: `node-${i}-${LONG}`, host: LONG, detail: LONG, status: 'failed' }),
    ),
    approvals: Array.from({ length: 200 }, (_, i) => approval({ step: `s${i}`, nonce: `n${i}` })),
    refusals: Array.from({ length: 200 }, () => LONG),
    notes: Array.from({ length: 200 }, () => LONG),
    reason: LONG.repeat(10),
    snapshot: {
      id: `snap-${LONG}`,
      path: '/var/backups/talos-etcd/x.db',
      bytes: 1,
      sha256: 'a'.repeat(64),
      revision: 1,
      node: '10.0.30.11',
      takenAt: '2026-11-29T22:01:00.000Z',
    },
    failure: { step: 's1', node: '10.0.30.11', nonce: 'f41l', rollback: 'offered' },
  });
}

/** The mrkdwn and plain texts of every block, joined: what an operator reads. */
function allText(message: ChatMessage): string {
  return JSON.stringify(message.blocks);
}

describe('upgrade messages stay inside Block Kit limits', () => {
  const states: OperationState[] = [
    'preflight',
    'refused',
    'planned',
    'running',
    'awaiting-approval',
    'paused',
    'failed',
    'completed',
    'cancelled',
  ];
  const kinds: Operation['kind'][] = ['talos-upgrade', 'k8s-upgrade', 'node-rollback', 'node-remove', 'snapshot'];

  it.each(kinds.flatMap((kind) => states.map((state) => [kind, state] as const)))(
    'root message of a huge %s in state %s',
    (kind, state) => {
      // Act
      const message = operationRootMessage(hugeOperation(state, kind), presentationOf(kind));

      // Assert
      expect(blockKitProblems(message)).toEqual([]);
    },
  );

  it('approval request with 200 lines of etcd evidence', () => {
    // Arrange
    const op = hugeOperation('awaiting-approval');

    // Act
    const message = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[0]!, version: 'v1.12.1', etcdWords: LONG.repeat(10), etcdEvidence: HUGE_EVIDENCE },
      talosUpgradeTexts,
    );

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
    expect(blockKitProblems(message.evidence!.message)).toEqual([]);
  });

  it.each(['approved', 'stopped', 'expired'] as const)("decided approval (%s) that keeps a huge request's evidence", (state) => {
    // Arrange
    const op = hugeOperation('running');
    const request = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[0]!, version: 'v1.12.1', etcdWords: LONG.repeat(10), etcdEvidence: HUGE_EVIDENCE },
      talosUpgradeTexts,
    );

    // Act
    const message = approvalDecidedMessage(
      op,
      approval({ state, by: 'U0CAROL', at: '2026-11-29T22:20:00.000Z', shown: shownEvidence(request) }),
      op.steps[0]!,
      presentationOf(op.kind),
    );

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('failure with 200 lines of evidence and a long reason', () => {
    // Arrange
    const op = hugeOperation('failed');

    // Act
    const message = failureMessage(op, op.steps[1], LONG.repeat(20), HUGE_EVIDENCE, presentationOf(op.kind));

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('approval request with many approvers, and its reminder', () => {
    // Arrange
    const op = hugeOperation('awaiting-approval');
    const approvers = Array.from({ length: 50 }, (_, i) => `U0APPROVER${i}`);

    // Act
    const request = withApprovers(
      approvalRequestMessage(
        op,
        approval(),
        { step: op.steps[0]!, version: 'v1.12.1', etcdWords: LONG, etcdEvidence: HUGE_EVIDENCE },
        talosUpgradeTexts,
      ),
      approvers,
    );
    const reminder = approvalReminderMessage(
      op,
      approval(),
      op.steps[0]!,
      approvers,
      'https://example.slack.com/archives/C0MAINTPRD/p1700000000000100',
      presentationOf(op.kind),
      new Date('2026-11-29T23:05:00Z'),
    );

    // Assert
    expect(blockKitProblems(request)).toEqual([]);
    expect(blockKitProblems(reminder)).toEqual([]);
  });

  it('Terraform follow-up', () => {
    // Act
    const message = toOperator(
      hugeOperation('completed'),
      terraformFollowUp(hugeOperation('completed'), {
        schematic: 'a'.repeat(64),
        platform: 'nocloud',
        isos: [
          {
            arch: 'amd64',
            url: `https://factory.talos.dev/image/${'a'.repeat(64)}/v1.12.1/nocloud-amd64.iso`,
            checksum: { ok: true, sha256: 'b'.repeat(64), bytes: 1 },
          },
        ],
      }),
    );

    // Assert
    expect(blockKitProblems(message)).toEqual([]);
  });
});

describe('operationRootMessage', () => {
  it('offers Start and Cancel on a planned operation, carrying the plan nonce', () => {
    // Act
    const message = operationRootMessage(operation(), talosUpgradeTexts);

    // Assert
    const actionsBlock = message.blocks!.find((b) => b['type'] === 'actions')!;
    expect(actionsBlock['block_id']).toBe('plan-op-1a2b3c4d5e-pl4nn0nce');
    const buttons = actionsBlock['elements'] as Record<string, unknown>[];
    expect(buttons.map((b) => [b['action_id'], b['value']])).toEqual([
      [ACTION.start, 'op-1a2b3c4d5e.pl4nn0nce'],
      [ACTION.cancelPlan, 'op-1a2b3c4d5e.pl4nn0nce'],
    ]);
    expect(message.text).toBe(
      'Talos upgrade v1.11.6 → v1.12.1: production — 📝 planned — waiting for an operator to start (op-1a2b3c4d5e)',
    );
  });

  it('lists the runbook review items the starter confirms', () => {
    // Act
    const message = operationRootMessage(operation(), talosUpgradeTexts);

    // Assert
    for (const item of REVIEW_ITEMS) expect(allText(message)).toContain(`☐ ${item}`);
  });

  it('shows the staging item its records answer as checked by the bot, and Start does not make the starter confirm it', () => {
    // Act
    const message = operationRootMessage(operation({ rehearsal: { stagingOp: 'op-5a6b7c8d9e' } }), talosUpgradeTexts);

    // Assert
    const text = allText(message);
    expect(text).toContain('✓ the exact target tested in staging: checked by the bot (`op-5a6b7c8d9e` completed)');
    expect(text).not.toContain('☐ the exact target tested in staging');
    const start = (message.blocks!.find((b) => b['type'] === 'actions')!['elements'] as { confirm: { text: { text: string } } }[])[0]!;
    expect(start.confirm.text.text).toMatch(/^By starting you confirm: Talos release notes reviewed; .*compatibility checked\.$/);
    expect(start.confirm.text.text).not.toContain('staging');
  });

  it('offers no buttons once the operation runs', () => {
    // Act
    const message = operationRootMessage(
      operation({ state: 'running', startedBy: 'U0BOB', startedAt: '2026-11-29T22:05:00.000Z' }),
      talosUpgradeTexts,
    );

    // Assert
    expect(message.blocks!.filter((b) => b['type'] === 'actions')).toEqual([]);
    expect(allText(message)).toContain('<@U0BOB> at <!date^1795989900^{date_short_pretty} {time}|2026-11-29 22:05 UTC>');
  });

  it('escapes text from the cluster so it cannot mention the channel or forge a link', () => {
    // Arrange
    const op = operation({
      state: 'failed',
      steps: [step({ status: 'failed', detail: '<!channel> node said <https://evil.example|retry>' })],
      reason: 'kubelet <none> & more',
    });

    // Act
    const text = allText(operationRootMessage(op, presentationOf(op.kind)));

    // Assert
    expect(text).not.toContain('<!channel>');
    expect(text).toContain('&lt;!channel&gt; node said &lt;https://evil.example|retry&gt;');
    expect(text).toContain('*Reason:* kubelet &lt;none&gt; &amp; more');
  });

  it("shows the time in a refusal in each reader's zone, while escaping the rest", () => {
    // Arrange
    const refusal =
      'none is open now. The next window opens <!date^1796162400^{date_short_pretty} {time}|2026-12-01 22:00 UTC>. <!channel>';

    // Act
    const message = operationRootMessage(operation({ state: 'refused', refusals: [refusal] }), talosUpgradeTexts);

    // Assert
    expect(allText(message)).toContain(
      'The next window opens <!date^1796162400^{date_short_pretty} {time}|2026-12-01 22:00 UTC>. &lt;!channel&gt;',
    );
  });

  it('lists the refusals of a refused operation', () => {
    // Act
    const message = operationRootMessage(
      operation({ state: 'refused', refusals: ['etcd has no leader', 'talosctl v1.11.6 is missing'] }),
      talosUpgradeTexts,
    );

    // Assert
    expect(allText(message)).toContain(
      '*Blocking:* refused before touching anything.\\n• etcd has no leader\\n• talosctl v1.11.6 is missing',
    );
  });

  describe('a Terraform plan that changes nothing', () => {
    const terraform = { commit: 'c'.repeat(40), dirty: false, summary: 'no changes', changes: [], listing: [], adds: [] };
    const stateField = (message: ChatMessage): string | undefined =>
      message.blocks
        ?.flatMap((b) => (b.fields as { text: string }[] | undefined) ?? [])
        .map((f) => f.text)
        .find((t) => t.startsWith('*State*'));

    it('reads as good news in its State field, with no refusal listed', () => {
      // Arrange
      const op = anOperation({ kind: 'terraform-apply', state: 'refused', refusals: [NO_CHANGES], data: { terraform }, steps: [] });

      // Act
      const message = operationRootMessage(op, terraformApplyTexts);

      // Assert
      expect(stateField(message)).toBe('*State*\n✅ no changes, nothing to apply');
      expect(allText(message)).not.toContain('refused');
      expect(allText(message)).not.toContain('refused before touching anything');
      expect(message.text).toBe(`✅ No changes: Terraform matches production (commit cccccccccccc); nothing to apply (${op.id})`);
    });

    it('stays a refusal, listed, when anything else is wrong with it', () => {
      // Arrange
      const op = anOperation({
        kind: 'terraform-apply',
        state: 'refused',
        refusals: [NO_CHANGES, 'the working tree has uncommitted changes'],
        data: { terraform },
        steps: [],
      });

      // Act
      const message = operationRootMessage(op, terraformApplyTexts);

      // Assert
      expect(stateField(message)).toBe('*State*\n⛔ refused');
      expect(allText(message)).toContain('*Blocking:* refused before touching anything.');
      expect(allText(message)).toContain('the working tree has uncommitted changes');
    });
  });
});

describe('approval and failure messages', () => {
  /** A control-plane upgrade of three, the first of which is done: the request for the second. */
  function secondOfThree(overrides: Partial<Operation> = {}): Operation {
    return operation({
      state: 'awaiting-approval',
      cluster: 'production',
      steps: [
        step({ id: 's0', kind: 'snapshot', node: undefined, nodeName: undefined, host: undefined, image: undefined, status: 'done' }),
        step({
          id: 's1',
          status: 'done',
          startedAt: '2026-11-29T22:00:00.000Z',
          endedAt: '2026-11-29T22:06:10.000Z',
          detail:
            'now v1.12.1 and Ready; etcd: leader 7 on 10.0.30.12; 3/3 members agree, no errors; health gate passed with Cilium, Flux and pods ready',
        }),
        step({ id: 's2', node: '10.0.30.12', nodeName: 'talos-cp-2', host: 'pve-2' }),
        step({ id: 's3', node: '10.0.30.13', nodeName: 'talos-cp-3', host: 'pve-3' }),
      ],
      ...overrides,
    });
  }

  const ETCD_WORDS = '3 of 3 healthy, one leader';

  it('leads the notification with the cluster, the place in the rollout, the short question and the expiry, without the op id', () => {
    // Arrange
    const op = secondOfThree();

    // Act
    const message = approvalRequestMessage(
      op,
      approval({ step: 's2' }),
      { step: op.steps[2]!, version: 'v1.12.1', etcdWords: ETCD_WORDS, etcdEvidence: ['MEMBER  LEADER'] },
      talosUpgradeTexts,
    );

    // Assert
    expect(message.text).toBe('🔐 production · control plane 2 of 3 · approve talos-cp-2 → Talos v1.12.1? (expires in 60 min · 23:10 UTC)');
    expect(message.text).not.toContain(op.id);
  });

  it('orders the card: question, where it stands, previous node, etcd and its tolerance, the drain, buttons, then expiry and the short image', () => {
    // Arrange
    const op = secondOfThree({ requestedBy: 'U0ALICE', startedBy: 'U0BOB', target: { version: 'v1.12.1', fromVersion: 'v1.11.6' } });

    // Act
    const message = approvalRequestMessage(
      op,
      approval({ step: 's2' }),
      {
        step: op.steps[2]!,
        version: 'v1.12.1',
        etcdWords: ETCD_WORDS,
        etcdEvidence: ['MEMBER  LEADER'],
        whileDown: 'etcd 2 of 3: no further failure tolerated, about 6 min',
        effects: ['The primary of db/pg moves to pg-2 (on talos-cp-3) when talos-cp-2 drains.'],
        people: { asked: 'alice', started: 'bob' },
      },
      talosUpgradeTexts,
    );

    // Assert
    const texts = message.blocks!.map((b) =>
      b['type'] === 'actions'
        ? 'actions'
        : b['type'] === 'context'
          ? `context: ${(b['elements'] as { text: string }[])[0]!.text}`
          : (b['text'] as { text: string }).text,
    );
    expect(texts).toEqual([
      '*Approve the upgrade of control plane talos-cp-2 (10.0.30.12) to v1.12.1?*',
      '*production* · node 2 of 3 · v1.11.6 → v1.12.1 · asked by alice, started by bob',
      '*Previous node:* talos-cp-1 done in 6 min: v1.12.1, Ready, etcd 3/3, gate passed',
      `*etcd:* ${ETCD_WORDS}\n*While it reboots:* etcd 2 of 3: no further failure tolerated, about 6 min`,
      '*Drain:* The primary of db/pg moves to pg-2 (on talos-cp-3) when talos-cp-2 drains.',
      'actions',
      'context: Expires in 60 min · 23:10 UTC · `nocloud · 376567988ad3 · v1.12.1`',
    ]);
    const buttons = message.blocks![5]!['elements'] as Record<string, unknown>[];
    expect(message.blocks![5]!['block_id']).toBe('approve-op-1a2b3c4d5e-n0nce1');
    expect(buttons.map((b) => [b['action_id'], b['value'], b['style']])).toEqual([
      [ACTION.approve, buttonValue('op-1a2b3c4d5e', 'n0nce1'), 'primary'],
      [ACTION.stop, buttonValue('op-1a2b3c4d5e', 'n0nce1'), 'danger'],
    ]);
    expect(blockKitProblems(message)).toEqual([]);
  });

  it('puts the full etcd table in the attached file, not on the card', () => {
    // Arrange
    const op = secondOfThree();

    // Act
    const message = approvalRequestMessage(
      op,
      approval({ step: 's2' }),
      { step: op.steps[2]!, version: 'v1.12.1', etcdWords: ETCD_WORDS, etcdEvidence: ['MEMBER  LEADER', '10.0.30.11  yes'] },
      talosUpgradeTexts,
    );

    // Assert
    expect(allText(message)).not.toContain('MEMBER  LEADER');
    expect(message.evidence!.event).toBe('etcd before talos-cp-2');
    expect(message.evidence!.file.content).toBe('MEMBER  LEADER\n10.0.30.11  yes\n');
    expect(message.evidence!.message.text).toMatch(
      /^etcd before talos-cp-2: the table is in the attached etcd-before-talos-cp-2-\S+\.txt$/,
    );
    expect(blockKitProblems(message.evidence!.message)).toEqual([]);
  });

  it('says when the node is the first of the rollout', () => {
    // Arrange
    const op = operation({ state: 'awaiting-approval' });

    // Act
    const message = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[1]!, version: 'v1.12.1', etcdWords: ETCD_WORDS, etcdEvidence: [] },
      talosUpgradeTexts,
    );

    // Assert
    expect(message.blocks![2]).toEqual({ type: 'section', text: { type: 'mrkdwn', text: '*Previous node:* First node of the rollout.' } });
    expect(message.text).toBe('🔐 production · control plane 1 of 1 · approve talos-cp-1 → Talos v1.12.1? (expires in 60 min · 23:10 UTC)');
  });

  it('confirms Approve naming the node, and Cancel saying what it ends now', () => {
    // Arrange
    const op = operation({ state: 'awaiting-approval' });

    // Act
    const message = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[1]!, version: 'v1.12.1', etcdWords: 'ok', etcdEvidence: [] },
      talosUpgradeTexts,
    );

    // Assert
    const [approve, stop] = message.blocks!.find((b) => b['type'] === 'actions')!['elements'] as Record<string, unknown>[];
    expect(approve!['confirm']).toEqual({
      title: { type: 'plain_text', text: 'Approve talos-cp-1?' },
      text: {
        type: 'mrkdwn',
        text: 'talosctl upgrade of control plane talos-cp-1 (10.0.30.11) on host pve-1 to v1.12.1: the node reboots into the new image; etcd must keep quorum.',
      },
      confirm: { type: 'plain_text', text: 'Approve' },
      deny: { type: 'plain_text', text: 'Not yet' },
    });
    expect(stop!['confirm']).toEqual({
      title: { type: 'plain_text', text: 'Cancel the operation?' },
      text: {
        type: 'mrkdwn',
        text: 'Cancels the Talos upgrade of production now, before talos-cp-1: this step does not run, the operation ends and frees the cluster. Steps already done stay as they are. You may give a reason.',
      },
      confirm: { type: 'plain_text', text: 'Cancel' },
      deny: { type: 'plain_text', text: 'Keep waiting' },
    });
  });

  it.each([
    [
      'node-rollback',
      '🔐 production · node rollback · approve talos-cp-1 → its previous Talos image? (expires in 60 min · 23:10 UTC)',
      'talosctl rollback of talos-cp-1 (10.0.30.11)',
    ],
    [
      'node-remove',
      '🔐 production · node removal · approve the reset and removal of talos-cp-1? (expires in 60 min · 23:10 UTC)',
      'talosctl reset of talos-cp-1 (10.0.30.11)',
    ],
  ] as const)('leads a %s notification with the cluster, and confirms Approve and Cancel', (kind, notification, effect) => {
    // Arrange
    const op = operation({ kind, state: 'awaiting-approval' });

    // Act
    const message = nodeApprovalMessage(
      op,
      approval(),
      op.steps[1]!,
      { summary: '3 members', evidence: ['MEMBER'], warning: 'it reboots' },
      presentationOf(op.kind),
    );

    // Assert
    expect(message.text).toBe(notification);
    expect(message.blocks!.map((b) => b['type'])).toEqual(['section', 'section', 'section', 'actions', 'context']);
    const [approve, stop] = message.blocks![3]!['elements'] as {
      confirm: { title: { text: string }; text: { text: string } };
    }[];
    expect(approve!.confirm.title).toEqual({ type: 'plain_text', text: 'Approve talos-cp-1?' });
    expect(approve!.confirm.text.text).toContain(effect);
    expect(stop!.confirm.title.text).toBe('Cancel the operation?');
    expect(message.evidence?.event).toBe('etcd before talos-cp-1');
  });

  it('leads the Kubernetes Apply notification with the cluster and the versions, and confirms Cancel', () => {
    // Arrange
    const op = operation({ kind: 'k8s-upgrade', state: 'awaiting-approval', target: { version: '1.34.2', fromVersion: '1.34.1' } });

    // Act
    const message = applyRequestMessage(
      op,
      approval(),
      step({ kind: 'k8s-apply', node: '10.0.30.11' }),
      'no deprecated APIs',
      k8sUpgradeTexts,
    );

    // Assert
    expect(message.text).toBe('🔐 production · Kubernetes upgrade · apply Kubernetes 1.34.1 → 1.34.2? (expires in 60 min · 23:10 UTC)');
    expect(message.blocks![0]).toEqual({
      type: 'section',
      text: { type: 'mrkdwn', text: '*Apply the Kubernetes upgrade of production 1.34.1 → 1.34.2?*' },
    });
    const actionsBlock = message.blocks!.find((b) => b['type'] === 'actions')!;
    expect(actionsBlock['block_id']).toBe('apply-op-1a2b3c4d5e-n0nce1');
    const [apply, cancel] = actionsBlock['elements'] as Record<string, unknown>[];
    expect([apply!['action_id'], cancel!['action_id']]).toEqual([ACTION.apply, ACTION.cancelApply]);
    expect(cancel!['confirm']).toBeDefined();
    expect(message.blocks!.at(-1)!['type']).toBe('context');
  });

  it('mentions the approvers once, users and user groups, after the question and not in the notification', () => {
    // Arrange
    const op = operation({ state: 'awaiting-approval' });
    const request = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[1]!, version: 'v1.12.1', etcdWords: 'ok', etcdEvidence: [] },
      talosUpgradeTexts,
    );

    // Act
    const paged = withApprovers(request, ['U0CAROL', 'S0SRE']);

    // Assert
    expect(paged.text).toBe(request.text);
    expect(paged.blocks!.slice(0, 2)).toEqual([
      request.blocks![0],
      { type: 'context', elements: [{ type: 'mrkdwn', text: 'For <@U0CAROL> <!subteam^S0SRE>' }] },
    ]);
    expect(paged.blocks!.slice(2)).toEqual(request.blocks!.slice(1));
    expect(JSON.stringify(paged).split('<@U0CAROL>')).toHaveLength(2);
  });

  it('says on the card what one approval covers under approvalScope: operation, above the buttons', () => {
    // Arrange
    const op = secondOfThree();
    const request = approvalRequestMessage(
      op,
      approval({ step: 's2' }),
      { step: op.steps[2]!, version: 'v1.12.1', etcdWords: ETCD_WORDS, etcdEvidence: [] },
      talosUpgradeTexts,
    );

    // Act
    const scoped = withScope(request, talosUpgradeTexts.approval!.covers!(3), 30);

    // Assert
    expect(scoped.blocks!.map((b) => b['type'])).toEqual(['section', 'section', 'section', 'section', 'context', 'actions', 'context']);
    expect(scoped.blocks![4]).toEqual({
      type: 'context',
      elements: [
        {
          type: 'mrkdwn',
          text: 'This approval covers all 3 control planes that start within 30 min of it; a failure, a Retry or a closed window asks again.',
        },
      ],
    });
  });

  it('keeps what the request showed once decided, and says who decided, when, and why', () => {
    // Arrange
    const op = operation({ state: 'running' });
    const request = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[1]!, version: 'v1.12.1', etcdWords: ETCD_WORDS, etcdEvidence: ['MEMBER  LEADER'] },
      talosUpgradeTexts,
    );

    // Act
    const decided = approvalDecidedMessage(
      op,
      approval({ state: 'approved', by: 'U0CAROL', at: '2026-11-29T22:20:00.000Z', shown: shownEvidence(request) }),
      op.steps[1]!,
      presentationOf(op.kind),
    );
    const stopped = approvalDecidedMessage(
      op,
      approval({
        state: 'stopped',
        by: 'U0CAROL',
        at: '2026-11-29T22:20:00.000Z',
        reason: 'disk alarm on pve-2',
        shown: shownEvidence(request),
      }),
      op.steps[1]!,
      presentationOf(op.kind),
    );

    // Assert
    expect(decided.text).toBe(
      '✅ Approved by <@U0CAROL> at <!date^1795990800^{date_short_pretty} {time}|2026-11-29 22:20 UTC>: the upgrade of control plane talos-cp-1 (10.0.30.11) to v1.12.1 (op-1a2b3c4d5e)',
    );
    expect(decided.blocks).toEqual([
      { type: 'section', text: { type: 'mrkdwn', text: decided.text } },
      ...request.blocks!.filter((b, i) => i > 0 && b['type'] !== 'actions'),
    ]);
    expect(allText(decided)).toContain(`*etcd:* ${ETCD_WORDS}`);
    expect(allText(decided)).toContain('nocloud · 376567988ad3 · v1.12.1');
    expect(stopped.text).toMatch(/^🛑 Stopped by <@U0CAROL> at .* Reason: disk alarm on pve-2$/);
  });

  it('reminds the approvers before the request expires, with a link to it', () => {
    // Arrange
    const op = operation({ state: 'awaiting-approval' });

    // Act
    const message = approvalReminderMessage(
      op,
      approval(),
      op.steps[1]!,
      ['U0CAROL', 'S0SRE'],
      'https://example.slack.com/archives/C0MAINTPRD/p1700000000000100',
      presentationOf(op.kind),
      new Date('2026-11-29T23:05:00Z'),
    );

    // Assert: one clock, the time left and the UTC time.
    expect(message.text).toBe(
      '⏰ Approve the upgrade of control plane talos-cp-1 (10.0.30.11) to v1.12.1? <https://example.slack.com/archives/C0MAINTPRD/p1700000000000100|The request> expires ' +
        'in 5 min · 23:10 UTC; then `op-1a2b3c4d5e` pauses and touches nothing. <@U0CAROL> <!subteam^S0SRE>',
    );
  });

  it('keeps etcd evidence that came from the cluster out of the thread, as it is in the attached file', () => {
    // Arrange
    const op = operation({ state: 'awaiting-approval' });

    // Act
    const message = approvalRequestMessage(
      op,
      approval(),
      { step: op.steps[1]!, version: 'v1.12.1', etcdWords: 'ok', etcdEvidence: ['learner <none> & <!here>'] },
      talosUpgradeTexts,
    );

    // Assert
    expect(JSON.stringify(message.evidence!.message)).not.toContain('learner');
    expect(message.evidence!.file.content).toBe('learner <none> & <!here>\n');
  });

  it('offers a rollback of the failed node only while one is offered', () => {
    // Arrange
    const offered = operation({ state: 'failed', failure: { step: 's1', node: '10.0.30.11', nonce: 'f41l', rollback: 'offered' } });
    const used = operation({
      state: 'failed',
      failure: { step: 's1', node: '10.0.30.11', nonce: 'f41l', rollback: 'requested', rollbackOp: 'op-rb00000001' },
    });

    // Act
    const withButton = failureMessage(offered, offered.steps[1], 'node did not come back', ['no answer'], presentationOf(offered.kind));
    const withoutButton = failureMessage(used, used.steps[1], 'node did not come back', ['no answer'], presentationOf(used.kind));

    // Assert
    const buttons = withButton.blocks!.find((b) => b['type'] === 'actions')!['elements'] as Record<string, unknown>[];
    expect(buttons.map((b) => [b['action_id'], b['value'], b['text']])).toEqual([
      [ACTION.rollback, 'op-1a2b3c4d5e.f41l', { type: 'plain_text', text: 'Roll back talos-cp-1', emoji: true }],
    ]);
    expect(withoutButton.blocks!.filter((b) => b['type'] === 'actions')).toEqual([]);
    expect(withButton.text).toBe(
      "❌ Stopped at control plane talos-cp-1 (10.0.30.11, host pve-1): node did not come back. No further step ran; the cluster stays locked to op-1a2b3c4d5e until an operator cancels it. Recommended: Roll back talos-cp-1: this step cannot be run again safely; a rollback puts talos-cp-1 back on the version it ran, after its own checks and an approver's click. <@U0ALICE> started it",
    );
  });

  it('mentions the operator who started the operation in a failure and a completion', () => {
    // Arrange
    const op = operation({ state: 'failed', startedBy: 'U0BOB' });
    const followUp = terraformFollowUp(op, { schematic: 'a'.repeat(64), platform: 'nocloud', isos: [] });

    // Act
    const failure = failureMessage(op, op.steps[1], 'node did not come back', [], presentationOf(op.kind));
    const completion = toOperator(op, followUp);

    // Assert
    expect(failure.text).toMatch(/ <@U0BOB> started it; <@U0ALICE> asked for it$/);
    expect(JSON.stringify(failure.blocks![0])).toContain('cancels it. <@U0BOB> started it; <@U0ALICE> asked for it');
    expect(completion.text).toBe(`<@U0BOB> ${followUp.text}`);
    expect((completion.blocks![0] as { text: { text: string } }).text.text).toMatch(/^<@U0BOB> \*Terraform follow-up\*/);
  });

  it('says when the maintenance window opens as a date token', () => {
    // Arrange
    const op = operation({ state: 'waiting-window' });

    // Act
    const message = windowWaitMessage(op, op.steps[1]!, 'w1nd0w', '2026-12-01T22:00:00.000Z', presentationOf(op.kind));

    // Assert
    expect(message.text).toContain('The next window opens <!date^1796162400^{date_short_pretty} {time}|2026-12-01 22:00 UTC>;');
    expect(allText(message)).toContain('The next window opens <!date^1796162400^{date_short_pretty} {time}|2026-12-01 22:00 UTC>;');
  });

  it('escapes failure evidence that came from the cluster', () => {
    // Arrange
    const op = operation({ state: 'failed' });

    // Act
    const message = failureMessage(op, op.steps[1], 'upgrade failed', ['rpc error: desc = <nil> & <!channel>'], presentationOf(op.kind));

    // Assert
    expect(allText(message)).not.toContain('<!channel>');
    expect(allText(message)).toContain('rpc error: desc = &lt;nil&gt; &amp; &lt;!channel&gt;');
  });

  it('offers to ask again after an approval expired', () => {
    // Arrange
    const op = operation({ state: 'paused' });

    // Act
    const message = approvalDecidedMessage(op, approval({ state: 'expired' }), op.steps[1]!, presentationOf(op.kind));

    // Assert
    const buttons = message.blocks!.find((b) => b['type'] === 'actions')!['elements'] as Record<string, unknown>[];
    expect(buttons.map((b) => [b['action_id'], b['value']])).toEqual([[ACTION.rerequest, 'op-1a2b3c4d5e.n0nce1']]);
  });
});

describe('/talos status', () => {
  it('shows the step in progress with its latest detail, since the root message changes only with the phase', () => {
    // Arrange
    const running = operation({
      state: 'running',
      planNonce: undefined,
      steps: [
        step({ id: 's0', kind: 'snapshot', node: undefined, nodeName: undefined, host: undefined, image: undefined, status: 'done' }),
        step({ status: 'running', detail: 'talosctl upgrade running (v1.11.6 → v1.12.1)' }),
      ],
    });

    // Act
    const text = statusText([{ cluster: 'production', holder: running.id, ops: [running] }], presentationOf);

    // Assert
    expect(text).toContain('1/2 steps · now: control plane');
    expect(text).toContain('(talosctl upgrade running (v1.11.6 → v1.12.1))');
    expect(
      statusText(
        [{ cluster: 'production', holder: undefined, ops: [operation({ state: 'completed', planNonce: undefined })] }],
        presentationOf,
      ),
    ).not.toContain('now:');
  });
});
