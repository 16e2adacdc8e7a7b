import type { Block } from '../port/chat-port.ts';
import { actions, context, formatTime, mentionUser, section } from './blocks.ts';
import { OVERRIDE_ACTION } from './buttons.ts';
import { operationRef } from './operation-link.ts';
import type { RehearsalWording } from './presentation.ts';
import type { Operation } from '../ops/operation.ts';

/** The plan's note on staging rehearsal, in the words of its kind; none when the kind needs no rehearsal. */
export function rehearsalBlocks(op: Operation, wording: RehearsalWording | undefined): Block[] {
  if (op.rehearsal === undefined || wording === undefined) return [];
  return wording.blocks(op, op.rehearsal);
}

/** The Override button under a plan that lacks its rehearsal, while it waits for Start. */
export function overrideButton(op: Operation, text: string): Block[] {
  if (op.state !== 'planned' || !op.planNonce) return [];
  return [
    actions(`override-${op.id}-${op.planNonce}`, [{ text, actionId: OVERRIDE_ACTION, value: `${op.id}.${op.planNonce}`, style: 'danger' }]),
  ];
}

/** Who overrode a missing staging rehearsal: one approver, or both. */
export function overriddenBy(override: NonNullable<Operation['override']>): string {
  const first = `${mentionUser(override.by)} at ${formatTime(override.at)}`;
  return override.second === undefined
    ? `overridden by ${first}`
    : `overridden by ${first} and ${mentionUser(override.second.by)} at ${formatTime(override.second.at)}`;
}

/** An upgrade's rehearsal: a completed staging upgrade to the same version, found, overridden, or missing with an approver's Override button. */
export const UPGRADE_REHEARSAL: RehearsalWording = {
  blocks(op, rehearsal) {
    const version = op.target.version ?? '?';
    if (rehearsal.stagingOp !== undefined)
      return [
        context(
          `Rehearsed in staging: ${operationRef(rehearsal.stagingOp, rehearsal.stagingLink)} completed the same upgrade to ${version}.`,
        ),
      ];
    if (op.override?.second !== undefined) {
      return [context(`⚠️ No staging rehearsal of ${version} in the records; ${overriddenBy(op.override)}.`)];
    }
    if (op.override !== undefined) {
      return [
        section(
          `⚠️ *No completed staging upgrade to ${version} in the bot's records.* ${overriddenBy(op.override)}; a second approver must override too before this plan can start.`,
        ),
        ...overrideButton(op, 'Override: no staging rehearsal'),
      ];
    }
    return [
      section(
        `⚠️ *No completed staging upgrade to ${version} in the bot's records.* The runbook tests the exact target in staging first. Two approvers must override before this plan can start.`,
      ),
      ...overrideButton(op, 'Override: no staging rehearsal'),
    ];
  },
  missing: (op) => `no staging rehearsal of ${op.target.version ?? 'its target'}`,
  overridden: (op) => `${op.target.version ?? ''} was not upgraded in staging according to the records`,
};

/** The review item a staging rehearsal in the bot's records answers, in every upgrade kind's list. */
export const STAGING_REVIEW_ITEM = 'the exact target tested in staging';

/**
 * The review items the bot checked itself, from its records, with what it found: the staging item
 * when the plan found the completed staging operation. No person reviewed these; Start confirms the rest.
 */
export function checkedByBot(op: Operation, items: readonly string[]): { item: string; found: string }[] {
  const staging = op.rehearsal?.stagingOp;
  return items.includes(STAGING_REVIEW_ITEM) && staging !== undefined ? [{ item: STAGING_REVIEW_ITEM, found: staging }] : [];
}
