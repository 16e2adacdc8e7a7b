import type { Operation, Step } from '../ops/operation.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { actions, context, escapeMrkdwn, formatTime, mentionUser, preformatted, section } from './blocks.ts';
import { ACTION, buttonValue } from './buttons.ts';
import type { Presentation } from './presentation.ts';
import { stopStateBlocks, type ClusterStanding } from './stop-state.ts';

/**
 * The stop at the first failure: the reason, then where things stand (each node as the stop found
 * it, and what the bot did not do), the evidence, and what may follow: a Retry when the step is
 * safe to run again, a Rollback of the node when the step asked it to change, and a Cancel that
 * releases the cluster. It mentions the operator who started the operation, who must act on it.
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
): ChatMessage {
  const where = step ? ` at ${presentation.stepLabel(step)}` : '';
  // An operation that holds no lock (a snapshot) leaves the cluster as free as it found it.
  const lock = holdsLock ? `the cluster stays locked to ${op.id} until an operator cancels it` : `${op.id} held no lock on ${op.cluster}`;
  const said = `❌ Stopped${where}: ${reason}. No further step ran; ${lock}.`;
  const operator = mentionUser(op.startedBy ?? op.requestedBy);
  const state = stopStateBlocks(op, standing, presentation);
  // The notification stays short; the blocks carry the nodes.
  const text = `${said} ${operator}`;
  const blocks = [section(`${escapeMrkdwn(said)} ${operator}`), ...state.blocks];
  if (evidence.length > 0) blocks.push(preformatted(evidence));
  if (op.retry?.state === 'offered') {
    // Named by the step's kind: another kind's step may share the id.
    const retried = op.steps.find((s) => s.id === op.retry?.step);
    const again =
      retryNote ??
      (retried?.kind === 'k8s-apply' ? 'talosctl upgrade-k8s is safe to run again after a failure' : 'nothing was changed by this step');
    const label = op.retry.explicit ?? 'Retry';
    const who = op.retry.explicit !== undefined ? ' Only an approver may give it.' : '';
    blocks.push(
      context(`Fix the cause, then ${label} (${again}). A step that needs an approval asks for it again.${who}`),
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
  if (op.failure?.rollback === 'offered' && step?.node) {
    blocks.push(
      context('A rollback is its own operation: it checks what the node runs now and etcd quorum, then waits for an approver.'),
      actions(`rollback-${op.id}-${op.failure.nonce}`, [
        {
          text: `Roll back ${step.node}`,
          actionId: ACTION.rollback,
          value: buttonValue(op.id, op.failure.nonce),
          style: 'danger',
          confirm: {
            title: 'Request a rollback?',
            text: `Plans talosctl rollback --nodes ${step.node}: a preflight, then an approver's click before anything is touched.`,
            confirm: 'Request',
            deny: 'Keep',
          },
        },
      ]),
    );
  }
  blocks.push(...cancelBlocks(op, holdsLock));
  return { text, blocks };
}

/**
 * What a Cancel of the stopped operation releases: the cluster lock; the nodes stay as they are. An
 * operation without a lock has nothing for a button to release: the command is named for the record.
 */
function cancelBlocks(op: Operation, holdsLock: boolean): ReturnType<typeof context>[] {
  if (!holdsLock) return [context(`\`/talos cancel ${op.id}\` ends ${op.id}; it holds no lock, and the nodes stay as they are.`)];
  const releases = `Cancel ends ${op.id} and releases the lock on ${op.cluster}; the nodes stay as they are, nothing is undone.`;
  const note = context(`${escapeMrkdwn(releases)} \`/talos cancel ${op.id}\` does the same.`);
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
