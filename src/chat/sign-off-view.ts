import type { Block } from '../port/chat-port.ts';
import { SIGN_OFF_EVIDENCE_MAX } from '../rules/gate-signoff.ts';
import { escapeMrkdwn, section } from './blocks.ts';

/** The modal a [Sign off] opens: its callback id, and where the evidence is entered. */
export const SIGN_OFF_VIEW = { callbackId: 'talos-gate-sign-off', block: 'evidence', action: 'text' } as const;

/**
 * The sign-off's modal: which gate of which cluster, what the runbook asks of it, and the evidence
 * (a link or a note) that is kept with the sign-off. Nothing is recorded until Submit.
 */
export function signOffView(args: { cluster: string; title: string; summary: string; value: string; channel: string }): Block {
  return {
    type: 'modal',
    callback_id: SIGN_OFF_VIEW.callbackId,
    private_metadata: JSON.stringify({ value: args.value, channel: args.channel }),
    title: { type: 'plain_text', text: 'Sign off a gate' },
    submit: { type: 'plain_text', text: 'Sign off' },
    close: { type: 'plain_text', text: 'Cancel' },
    blocks: [
      section(
        escapeMrkdwn(
          `${args.title} on ${args.cluster}: ${args.summary}. Your sign-off counts for the cluster's nodes as they are now, until the evidence ages out.`,
        ),
      ),
      {
        type: 'input',
        block_id: SIGN_OFF_VIEW.block,
        label: { type: 'plain_text', text: 'Evidence: a link or a note' },
        hint: { type: 'plain_text', text: 'Kept with the sign-off and shown in /talos gates.' },
        element: { type: 'plain_text_input', action_id: SIGN_OFF_VIEW.action, multiline: true, max_length: SIGN_OFF_EVIDENCE_MAX },
      },
    ],
  };
}

/** The metadata of a submitted sign-off modal, or undefined when it is not one the bot wrote. */
export function parseSignOffMetadata(text: string | undefined): { value: string; channel: string } | undefined {
  try {
    const parsed = JSON.parse(text ?? '') as { value?: unknown; channel?: unknown };
    if (typeof parsed.value !== 'string' || typeof parsed.channel !== 'string') return undefined;
    return { value: parsed.value, channel: parsed.channel };
  } catch {
    return undefined;
  }
}
