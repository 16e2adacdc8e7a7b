import { actions, context, escapeMrkdwn, fields, formatTime, mentionUser, preformatted, section } from '../../../src/chat/blocks.ts';
import { ACTION, buttonValue, PLAN_AGAIN_NONCE } from '../../../src/chat/buttons.ts';
import type { Block } from '../../../src/port/chat-port.ts';
import { operationRef } from '../../../src/chat/operation-link.ts';
import type { Presentation, RehearsalWording, StartConfirmation } from '../../../src/chat/presentation.ts';
import { overriddenBy, overrideButton } from '../../../src/chat/rehearsal-message.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { isoBlocks, isoConfirmationsOf } from '../shared/boot-iso-texts.ts';
import { planFileName } from '../shared/plan-text.ts';
import { SNAPSHOT_LABEL } from '../shared/step-texts.ts';
import { terraformData } from './data.ts';
import { NO_CHANGES } from '../../../src/rules/terraform-change.ts';

/** The steps of a Terraform change: a snapshot, the apply, each new node's join, the gate. */
export type TerraformApplyStepKind = 'snapshot' | 'tofu-apply' | 'node-join' | 'apply-gate';

/** Diff lines shown in the plan message, and their characters (a section holds 3000); the whole plan is attached in the thread. */
const LISTED_LINES = 30;
const LISTED_CHARS = 2600;

/** The head of the diff that fits one message: whole lines, at most `LISTED_LINES` and `LISTED_CHARS`. */
function diffHead(listing: readonly string[]): string[] {
  const head: string[] = [];
  let chars = 0;
  for (const line of listing.slice(0, LISTED_LINES)) {
    if (chars + line.length + 1 > LISTED_CHARS) break;
    head.push(line);
    chars += line.length + 1;
  }
  return head;
}

/**
 * A Terraform change's plan as the reviewer reads it: first what applying it does to the nodes, then
 * the diff (each resource and the attributes it changes, sensitive ones named with their values
 * blanked), then the commit and the plan's hash. A diff too long for one message is cut, and says
 * where the whole one is.
 */
function terraformDetails(op: Operation): Block[] {
  const tf = terraformData(op).terraform;
  if (tf === undefined) return [];
  const commit = tf.commit ? `\`${tf.commit.slice(0, 12)}\`${tf.dirty ? ' with uncommitted changes' : ''}` : 'not a git checkout';
  const blocks: Block[] = [];
  const effect = tf.effect ?? [];
  if (effect.length > 0) blocks.push(section(`*What applying it does:*\n${effect.map((l) => `• ${escapeMrkdwn(l)}`).join('\n')}`));
  blocks.push(
    fields([
      ['Terraform commit', commit],
      ['Plan', `${escapeMrkdwn(tf.summary)}${tf.planSha256 ? ` · sha256 \`${tf.planSha256.slice(0, 12)}…\`` : ''}`],
    ]),
  );
  const listed = diffHead(tf.listing);
  if (listed.length > 0) blocks.push(preformatted(listed));
  if (listed.length < tf.listing.length)
    blocks.push(
      context(
        `Diff cut at ${listed.length} of ${tf.listing.length} lines: the whole plan is in the attached file \`${planFileName(op.id)}\` (sensitive values hidden).`,
      ),
    );
  blocks.push(...isoBlocks(tf.iso));
  return blocks;
}

/** The approver's tick that the uploaded ISO is the one the bot hashed, offered while the plan has its sha256. */
function isoConfirmations(op: Operation): StartConfirmation[] {
  return isoConfirmationsOf(terraformData(op).terraform?.iso);
}

/** A Terraform change that was refused, stopped or expired offers a fresh plan, once. */
export function planAgainBlocks(op: Operation): Block[] {
  if (!['refused', 'failed', 'cancelled'].includes(op.state)) return [];
  const { replannedAs } = terraformData(op);
  if (replannedAs !== undefined) return [context(`Planned again as \`${replannedAs}\`.`)];
  return [
    actions(`replan-${op.id}-${PLAN_AGAIN_NONCE}`, [
      { text: 'Plan again', actionId: ACTION.planAgain, value: buttonValue(op.id, PLAN_AGAIN_NONCE) },
    ]),
  ];
}

/** A Terraform change's step: `` `tofu apply` of exactly the reviewed plan file ``. */
export function terraformApplyStepLabel(step: Step): string {
  if (step.kind === 'snapshot') return SNAPSHOT_LABEL;
  if (step.kind === 'tofu-apply') return '`tofu apply` of exactly the reviewed plan file';
  if (step.kind === 'node-join')
    return `watch ${step.nodeName ?? '?'} join: Node Ready; a control plane a voting etcd member under one leader`;
  return 'health gate after the apply, new nodes included';
}

const commitOf = (op: Operation): string => terraformData(op).terraform?.commit?.slice(0, 12) ?? '?';

/** A production Terraform change's rehearsal: the same commit applied to staging (by whom, when, gate passed), overridden, or missing. */
const PROMOTION: RehearsalWording = {
  blocks(op, rehearsal) {
    const commit = `\`${commitOf(op)}\``;
    if (rehearsal.stagingOp !== undefined) {
      const by = rehearsal.appliedBy ? ` by ${mentionUser(rehearsal.appliedBy)}` : '';
      const at = rehearsal.appliedAt ? ` at ${formatTime(rehearsal.appliedAt)}` : '';
      return [
        context(
          `✅ Commit ${commit} was applied to staging${by}${at}, gate passed: ${operationRef(rehearsal.stagingOp, rehearsal.stagingLink)}.`,
        ),
      ];
    }
    if (op.override?.second !== undefined)
      return [context(`⚠️ Commit ${commit} was not applied to staging; ${overriddenBy(op.override)}.`)];
    if (op.override !== undefined)
      return [
        section(
          `⚠️ *Commit ${commit} was not applied to staging with its gate passed, according to the bot's records.* ${overriddenBy(op.override)}; a second approver must override too before this plan can be applied.`,
        ),
        ...overrideButton(op, 'Override: not applied in staging'),
      ];
    return [
      section(
        `⚠️ *Commit ${commit} was not applied to staging with its gate passed, according to the bot's records.* The runbook applies a change in staging first, then promotes the same change. Two approvers must override before this plan can be applied.`,
      ),
      ...overrideButton(op, 'Override: not applied in staging'),
    ];
  },
  missing: (op) => `no apply of commit ${commitOf(op)} in staging with its gate passed`,
  overridden: (op) => `commit ${terraformData(op).terraform?.commit ?? '?'} was not applied in staging according to the records`,
};

/** A plan refused only because it changes nothing: good news, told as such. */
export function changesNothing(op: Operation): boolean {
  return op.state === 'refused' && op.refusals.length === 1 && op.refusals[0] === NO_CHANGES;
}

/** How a Terraform change reads in Slack. */
export const terraformApplyTexts: Presentation = {
  name: 'Terraform change',
  title: (op) => {
    if (changesNothing(op)) return `✅ No changes: Terraform matches ${op.cluster}`;
    const tf = terraformData(op).terraform;
    return `Terraform change: ${op.cluster}${tf ? ` (${tf.summary})` : ''}`;
  },
  order: "after an approver's Apply: snapshot, `tofu apply` of exactly this plan, new nodes watched until they join, the health gate",
  gates:
    'the apply runs the saved plan file only (never a fresh plan); production needs the same commit applied to staging with its gate passed; new control planes must become voting etcd members under one leader.',
  startTitle: 'Apply this plan?',
  startLabel: 'Apply',
  plannedText: "📝 planned — waiting for an approver's Apply",
  reviewItems: [],
  startConfirmations: isoConfirmations,
  details: terraformDetails,
  context: (op) => (op.snapshot ? `Snapshot \`${op.snapshot.id}\`` : undefined),
  closing: planAgainBlocks,
  rootText: (op) =>
    changesNothing(op) ? `✅ No changes: Terraform matches ${op.cluster} (commit ${commitOf(op)}); nothing to apply (${op.id})` : undefined,
  stateText: (op) => (changesNothing(op) ? '✅ no changes, nothing to apply' : undefined),
  stepLabel: terraformApplyStepLabel,
  rehearsal: PROMOTION,
  approval: {
    verb: 'Approve',
    subject: (op) => `\`tofu apply\` of the reviewed plan of ${op.cluster} (commit ${commitOf(op)})`,
    headline: (op) => ({ what: 'Terraform apply', ask: `tofu apply of the reviewed plan (commit ${commitOf(op)})` }),
  },
};
