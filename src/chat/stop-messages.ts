import type { Operation, Step } from '../ops/operation.ts';
import type { Block, ChatMessage } from '../port/chat-port.ts';
import { actions, context, escapeMrkdwn, formatTime, mentionUser, preformatted, section } from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import type { Presentation } from './presentation.ts';
import { etcdLine, leftBehind, nodeCalled, peopleLine, recommend, retryLabel, whoMayClick } from './stop-advice.ts';
import { stopStateBlocks, type ClusterStanding } from './stop-state.ts';

/** What a stop knows beyond the operation: the command that starts the same change again later. */
export interface StopExtras {
  /** e.g. `/talos upgrade talos v1.12.11 production`: named beside Cancel, for continuing later. */
  continueWith?: string;
}

/**
 * The stop at the first failure, for a person woken by it: what happened, where the cluster
 * stands (each node, etcd for a control plane, what the bot did not do), the one action it
 * recommends and why, who may click what, the evidence, and the buttons: a Retry when the step is
 * safe to run again, a Rollback of the node when the step asked it to change, and a Cancel that
 * says what it leaves. It mentions the operator who started the operation and the approver who
 * approved last, the one most likely awake.
 */
export function failureMessage(
  op: Operation,
  step: Step | undefined,
  reason: string,
  evidence: string[],
  presentation: Presentation,
  retryNote?: string,
  holdsLock = true,
  standing?: ClusterStanding,
  extras: StopExtras = {},
): ChatMessage {
  const where = step ? ` at ${presentation.stepLabel(step)}` : '';
  // An operation that holds no lock (a snapshot) leaves the cluster as free as it found it.
  const lock = holdsLock ? `the cluster stays locked to ${op.id} until an operator cancels it` : `${op.id} held no lock on ${op.cluster}`;
  const said = `❌ Stopped${where}: ${reason}. No further step ran; ${lock}.`;
  const people = peopleLine(op);
  const state = stopStateBlocks(op, standing, presentation);
  const etcd = standing?.etcd === undefined ? undefined : etcdLine(op, standing, standing.etcd);
  const advice = recommend(op, step, standing, presentation, holdsLock);
  const retrying = op.retry?.state === 'offered';
  const rollingBack = op.failure?.rollback === 'offered' && step?.node !== undefined;
  // The notification stays short: what happened, the advice, and who it is for; the blocks carry the nodes.
  const recommended = advice === undefined ? undefined : `Recommended: ${advice.label}: ${advice.why}.`;
  const text = [said, etcd === undefined ? undefined : `etcd: ${etcd}.`, recommended, people].filter((t) => t !== undefined).join(' ');
  const blocks: Block[] = [section(`${escapeMrkdwn(said)} ${people}`), ...state.blocks];
  if (etcd !== undefined) blocks.push({ ...section(`*etcd*: ${escapeMrkdwn(etcd)}`), block_id: 'stop-etcd' });
  if (advice !== undefined)
    blocks.push({ ...section(`*Recommended: ${escapeMrkdwn(advice.label)}*: ${escapeMrkdwn(advice.why)}.`), block_id: 'stop-recommended' });
  const who = whoMayClick(op, { retry: retrying, rollback: rollingBack, cancel: holdsLock && op.stopNonce !== undefined });
  if (who !== '') blocks.push({ ...context(who), block_id: 'stop-who' });
  if (evidence.length > 0) blocks.push(preformatted(evidence));
  if (retrying && op.retry !== undefined) {
    // Named by the step's kind: another kind's step may share the id.
    const retried = op.steps.find((s) => s.id === op.retry?.step);
    const again =
      retryNote ??
      (retried?.kind === 'k8s-apply' ? 'talosctl upgrade-k8s is safe to run again after a failure' : 'nothing was changed by this step');
    const label = retryLabel(op, standing);
    const approverOnly = op.retry.explicit !== undefined ? ` Only an approver may give it (${op.retry.explicit}).` : '';
    blocks.push(
      context(`Fix the cause first if it is still there. A step that needs an approval asks for it again.${approverOnly}`),
      actions(`retry-${op.id}-${op.retry.nonce}`, [
        {
          text: label,
          actionId: ACTION.retry,
          value: buttonValue(op.id, op.retry.nonce),
          style: 'primary',
          confirm: {
            title: 'Run it again?',
            text: `${label}: ${escapeMrkdwn(again)}.`.slice(0, 300),
            confirm: 'Retry',
            deny: 'Not yet',
          },
        },
      ]),
    );
  }
  if (rollingBack && step?.node !== undefined) {
    const name = nodeCalled(op, standing, step.node);
    blocks.push(
      context('A rollback is its own operation: it checks what the node runs now and etcd quorum, then waits for an approver.'),
      actions(`rollback-${op.id}-${op.failure!.nonce}`, [
        {
          text: `Roll back ${name}`,
          actionId: ACTION.rollback,
          value: buttonValue(op.id, op.failure!.nonce),
          style: 'danger',
          confirm: {
            title: 'Request a rollback?',
            text: `Plans talosctl rollback --nodes ${step.node} (${name}): a preflight, then an approver's click before anything is touched.`,
            confirm: 'Request',
            deny: 'Keep',
          },
        },
      ]),
    );
  }
  blocks.push(...cancelBlocks(op, holdsLock, leftBehind(op, standing), extras.continueWith));
  return { text, blocks };
}

/**
 * What a Cancel of the stopped operation releases and leaves: the cluster lock goes, the nodes stay
 * as they are (which version each runs), and the command that continues later. An operation without
 * a lock has nothing for a button to release: the command is named for the record.
 */
function cancelBlocks(op: Operation, holdsLock: boolean, leaves: string | undefined, continueWith: string | undefined): Block[] {
  if (!holdsLock) return [context(`\`/talos cancel ${op.id}\` ends ${op.id}; it holds no lock, and the nodes stay as they are.`)];
  const stay = leaves === undefined ? 'the nodes stay as they are' : `the nodes stay as they are (${leaves})`;
  const releases = `Cancel ends ${op.id} and releases the lock on ${op.cluster}; ${stay}, nothing is undone.`;
  const later = continueWith === undefined ? '' : ` To continue later: \`${continueWith}\`.`;
  const note = context(`${escapeMrkdwn(releases)} \`/talos cancel ${op.id}\` does the same.${later}`);
  if (op.stopNonce === undefined) return [note];
  return [
    note,
    actions(`cancel-${op.id}-${op.stopNonce}`, [
      {
        text: 'Cancel',
        actionId: ACTION.cancelPlan,
        value: buttonValue(op.id, op.stopNonce),
        confirm: { title: 'Cancel the operation?', text: releases, confirm: 'Cancel it', deny: 'Keep' },
      },
    ]),
  ];
}

/** The failure message once its Retry was clicked: the button goes, the record of who retried stays. */
export function retriedMessage(op: Operation, by: string, at: string): ChatMessage {
  const text = `🔁 Retry requested by ${mentionUser(by)} at ${formatTime(at)} (${op.id}); the failed step runs again.`;
  return { text, blocks: [section(text)] };
}

/** A step that would start outside the maintenance window: it waits, and an approver may say go now. */
export function windowWaitMessage(
  op: Operation,
  step: Step,
  nonce: string,
  opensAt: string | undefined,
  presentation: Presentation,
): ChatMessage {
  const when = opensAt
    ? `The next window opens ${formatTime(opensAt)}; the step starts then by itself.`
    : 'No window lies ahead in the inventory.';
  const text = `⏸ Waiting for the maintenance window before ${presentation.stepLabel(step)} (${op.id}). ${when}`;
  return {
    text,
    blocks: [
      section(escapeMrkdwn(text)),
      context(
        'Nothing is touched while it waits. Two approvers may start the step now, outside the window: each clicks, and the record names both.',
      ),
      actions(`window-${op.id}-${nonce}`, [
        {
          text: 'Start outside the window',
          actionId: ACTION.windowOverride,
          value: buttonValue(op.id, nonce),
          style: 'danger',
          confirm: {
            title: 'Start outside the window?',
            text: `Asks to start ${presentation.stepLabel(step)} now, outside ${op.cluster}'s maintenance window; it starts once a second approver clicks too.`,
            confirm: 'Start now',
            deny: 'Wait',
          },
        },
      ]),
    ],
  };
}
