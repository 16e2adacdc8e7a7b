import type { Block } from '../port/chat-port.ts';
import { actions, context, formatTime, mentionUser, section } from './blocks.ts';
import { OVERRIDE_ACTION } from './buttons.ts';
import { operationRef } from './operation-link.ts';
import type { Operation } from '../ops/operation.ts';

/** The plan's note on staging rehearsal: found, overridden, or missing with an approver's Override button. */
export function rehearsalBlocks(op: Operation): Block[] {
  if (op.rehearsal === undefined) return [];
  if (op.kind === 'terraform-apply') return promotionBlocks(op, op.rehearsal);
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

/** A production Terraform change: the same commit applied to staging (by whom, when, gate passed), overridden, or missing. */
function promotionBlocks(op: Operation, rehearsal: NonNullable<Operation['rehearsal']>): Block[] {
  const commit = `\`${op.terraform?.commit?.slice(0, 12) ?? '?'}\``;
  if (rehearsal.stagingOp !== undefined) {
    const by = rehearsal.appliedBy ? ` by ${mentionUser(rehearsal.appliedBy)}` : '';
    const at = rehearsal.appliedAt ? ` at ${formatTime(rehearsal.appliedAt)}` : '';
    return [context(`✅ Commit ${commit} was applied to staging${by}${at}, gate passed: ${operationRef(rehearsal.stagingOp, rehearsal.stagingLink)}.`)];
  }
  if (op.override !== undefined) return [context(`⚠️ Commit ${commit} was not applied to staging; overridden by ${mentionUser(op.override.by)} at ${formatTime(op.override.at)}.`)];
  const blocks: Block[] = [
    section(`⚠️ *Commit ${commit} was not applied to staging with its gate passed, according to the bot's records.* The runbook applies a change in staging first, then promotes the same change. An approver must override before this plan can be applied.`),
  ];
  if (op.state === 'planned' && op.planNonce) {
    blocks.push(actions(`override-${op.id}-${op.planNonce}`, [{ text: 'Override: not applied in staging', actionId: OVERRIDE_ACTION, value: `${op.id}.${op.planNonce}`, style: 'danger' }]));
  }
  return blocks;
}
