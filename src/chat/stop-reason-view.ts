import type { Operation, Step } from '../ops/operation.ts';
import type { Block } from '../port/chat-port.ts';
import { escapeMrkdwn, section } from './blocks.ts';
import type { Presentation } from './presentation.ts';

/** The modal a Stop opens: its callback id, and where its reason is entered. */
export const STOP_REASON = { callbackId: 'talos-stop-reason', block: 'reason', action: 'text' } as const;

/** What the modal carries back to the submission: the clicked button's value and the message it was on. */
export interface StopReasonMetadata {
  /** `<op>.<nonce>`, as the Stop button carried it. */
  value: string;
  /** The request's message, for a request Slack wrote before the bot learned where. */
  ts?: string;
}

/**
 * The Stop's modal: what it stops, and an optional reason that goes to the audit and the record.
 * The stop happens on Submit; closing the modal stops nothing, and the request keeps its buttons.
 */
export function stopReasonView(op: Operation, step: Step | undefined, presentation: Presentation, metadata: StopReasonMetadata): Block {
  const where = step?.nodeName ?? step?.node;
  return {
    type: 'modal',
    callback_id: STOP_REASON.callbackId,
    private_metadata: JSON.stringify(metadata),
    title: { type: 'plain_text', text: 'Stop the operation' },
    submit: { type: 'plain_text', text: 'Stop' },
    close: { type: 'plain_text', text: 'Keep waiting' },
    blocks: [
      section(
        escapeMrkdwn(
          `Stops the ${presentation.name} of ${op.cluster}${where ? ` before ${where}` : ''}: this step does not run, the operation ends and frees the cluster. Steps already done stay as they are.`,
        ),
      ),
      {
        type: 'input',
        block_id: STOP_REASON.block,
        optional: true,
        label: { type: 'plain_text', text: 'Reason (optional)' },
        hint: { type: 'plain_text', text: 'Kept in the audit and the maintenance record.' },
        element: { type: 'plain_text_input', action_id: STOP_REASON.action, multiline: true, max_length: 500 },
      },
    ],
  };
}

/** The metadata of a submitted Stop modal, or undefined when it is not one the bot wrote. */
export function parseStopReasonMetadata(text: string | undefined): StopReasonMetadata | undefined {
  try {
    const parsed = JSON.parse(text ?? '') as Partial<StopReasonMetadata>;
    if (typeof parsed.value !== 'string') return undefined;
    return { value: parsed.value, ...(typeof parsed.ts === 'string' ? { ts: parsed.ts } : {}) };
  } catch {
    return undefined;
  }
}
