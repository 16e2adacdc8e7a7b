import type { Block } from './chat-port.ts';
import { actions, context, formatTime, mentionUser, section } from './blocks.ts';
import { OVERRIDE_ACTION } from './buttons.ts';
import { operationRef } from './operation-link.ts';
import type { Operation } from '../ops/operation.ts';

/** The plan's note on staging rehearsal: found, overridden, or missing with an approver's Override button. */
export function rehearsalBlocks(op: Operation): Block[] {
  if (op.rehearsal === undefined) return [];
  const version = op.target.version ?? '?';
  if (op.rehearsal.stagingOp !== undefined) return [context(`Rehearsed in staging: ${operationRef(op.rehearsal.stagingOp, op.rehearsal.stagingLink)} completed the same upgrade to ${version}.`)];
  if (op.override !== undefined) {
    return [context(`⚠️ No staging rehearsal of ${version} in the records; overridden by ${mentionUser(op.override.by)} at ${formatTime(op.override.at)}.`)];
  }
  const blocks: Block[] = [
    section(`⚠️ *No completed staging upgrade to ${version} in the bot's records.* The runbook tests the exact target in staging first. An approver must override before this plan can start.`),
  ];
  if (op.state === 'planned' && op.planNonce) {
    blocks.push(actions(`override-${op.id}-${op.planNonce}`, [{ text: 'Override: no staging rehearsal', actionId: OVERRIDE_ACTION, value: `${op.id}.${op.planNonce}`, style: 'danger' }]));
  }
  return blocks;
}
