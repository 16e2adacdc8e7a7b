import { plainTimes } from './blocks.ts';
import { operationTitle } from './operation-title.ts';
import type { Presentation } from './presentation.ts';
import { plainLinks } from './operation-link.ts';
import { FollowUpOf, TerraformPlan, type Operation } from '../ops/operation.ts';
import { continuationOf, doneNodeText } from '../ops/upgrade-continuation.ts';
import { describeItem } from '../health/baseline.ts';
import { KIND_WORDS } from '../tofu/declared-versions.ts';

/** The runbook's record of a production lifecycle operation, as Markdown: commit, plan, snapshot, times, validation, who did what. */
export function maintenanceRecordMarkdown(op: Operation, appendix?: string, presentation?: Pick<Presentation, 'name' | 'noun'>): string {
  // Named as people name it, with the mechanics (kind, address) beside for whoever searches the records.
  const mechanics = `${op.kind}${op.target.node ? ` of ${op.target.node}` : ''}${op.target.version ? ` to ${op.target.version}` : ''}${op.target.fromVersion ? ` (from ${op.target.fromVersion})` : ''}`;
  const lines = [
    `# Maintenance record ${op.id}`,
    '',
    `- Cluster: ${op.cluster}`,
    `- Operation: ${presentation === undefined ? mechanics : `${operationTitle(op, presentation)} — ${mechanics}`}`,
    `- Result: ${op.state}${op.reason ? ` (${plainTimes(op.reason)})` : ''}`,
    `- Commit: ${commitText(op)}`,
    `- Snapshot: ${op.snapshot ? `${op.snapshot.id} (${op.snapshot.bytes} bytes, sha256 ${op.snapshot.sha256}, revision ${op.snapshot.revision}, from ${op.snapshot.node}, at ${op.snapshot.path})` : 'none'}`,
    `- Requested by: ${op.requestedBy} at ${op.createdAt}`,
    `- Started by: ${op.startedBy ?? '-'} at ${op.startedAt ?? '-'}`,
    `- Ended: ${op.endedAt ?? '-'}`,
    `- Validation: ${op.validation ?? '-'}`,
    ...(op.rehearsal !== undefined
      ? [
          `- Staging rehearsal: ${op.rehearsal.stagingOp !== undefined ? `${op.rehearsal.stagingOp} (checked by the bot from its records, not by a person)` : op.override ? `none in the records; overridden by ${op.override.by} at ${op.override.at}${op.override.second ? ` and ${op.override.second.by} at ${op.override.second.at}` : ', no second approver'}` : 'none in the records'}`,
        ]
      : []),
    ...outsideWindowLines(op),
    ...(op.confirmedReview.length > 0 ? [`- Review confirmed by the starter: ${op.confirmedReview.join('; ')}`] : []),
    ...terraformLines(op),
    ...followUpLines(op),
    ...continuationLines(op),
    '',
    '## Plan and per-node result',
    '',
    '| # | step | node | image | result | detail |',
    '|---|---|---|---|---|---|',
    ...op.steps.map(
      (s, i) => `| ${i + 1} | ${s.kind} | ${s.node ?? ''} | ${s.image ?? ''} | ${s.status} | ${(s.detail ?? '').replace(/\|/g, '/')} |`,
    ),
    '',
    ...baselineLines(op),
    ...(op.mechanics?.length ? ['## How the bot ran it', '', ...op.mechanics.map((m) => `- ${m}`), ''] : []),
    '## Approvals',
    '',
    ...(op.approvals.length === 0
      ? ['none']
      : op.approvals.map(
          (a) =>
            `- ${a.step}: ${a.state}${a.by ? ` by ${a.by}` : ''}${a.at ? ` at ${a.at}` : ''}${approvalScopeNote(a)}${a.reason ? `, reason: ${a.reason}` : ''} (requested ${a.requestedAt})`,
        )),
    '',
    '## Audit trail',
    '',
    // A file is not mrkdwn: Slack date tokens in what the thread said read as their UTC fallback here, links as the operation's id.
    ...op.audit.map((e) => `${e.seq}. ${e.at} ${e.actor}: ${e.event}${e.detail ? ` (${plainLinks(plainTimes(e.detail))})` : ''}`),
    '',
    ...(appendix === undefined ? [] : ['## Terraform plan as reviewed (tofu show)', '', '```', appendix.trimEnd(), '```', '']),
  ];
  return lines.join('\n');
}

/**
 * The commit the operation worked from: the reviewed plan's own when it carries one (the apply runs
 * on it, whatever the checkout held when the run began), else the one read when it started.
 */
export function recordedCommit(op: Operation): string | undefined {
  return terraformPlanOf(op)?.commit ?? op.commit;
}

/** The commit as the record says it, or why there is none. */
export function commitText(op: Operation): string {
  const commit = recordedCommit(op);
  if (commit !== undefined) return commit;
  return op.startedAt === undefined ? 'not recorded (the operation never started)' : 'none: the Terraform directory is not a git checkout';
}

/** Steps started outside the maintenance window, and the approvers who chose to (an earlier version took one). */
function outsideWindowLines(op: Operation): string[] {
  return op.steps.flatMap((s) => {
    const o = s.windowOverride;
    if (o === undefined) return [];
    const second =
      o.secondBy === undefined ? 'no second approver (one sufficed then)' : `confirmed by ${o.secondBy} at ${o.secondAt ?? '?'}`;
    return [`- Started outside the maintenance window: ${s.node ?? s.id}, asked by ${o.by} at ${o.at}, ${second}`];
  });
}

/** Whether one approval covered the operation (`approvalScope: operation`), or this step went on such an approval. */
function approvalScopeNote(a: Operation['approvals'][number]): string {
  if (a.coveredBy !== undefined) return `, covered by the operation-wide approval ${a.coveredBy} (approvalScope: operation)`;
  return a.scope === 'operation'
    ? ', for every step of the operation that asks one until a failure or Retry (approvalScope: operation)'
    : '';
}

/** A Terraform change: the commit, the plan's summary and hash, what it changed, and the staging apply it was promoted from. */
/**
 * A Terraform change's reviewed plan, kept in its operation's `data`: the record shows the plan of
 * whatever operation carries one, read leniently (a record is written for any operation).
 */
function terraformPlanOf(op: Operation): TerraformPlan | undefined {
  const parsed = TerraformPlan.safeParse(op.data?.['terraform']);
  return parsed.success ? parsed.data : undefined;
}

function terraformLines(op: Operation): string[] {
  const tf = terraformPlanOf(op);
  if (tf === undefined) return [];
  return [
    `- Terraform plan: ${tf.summary}; sha256 ${tf.planSha256 ?? 'none (not kept)'}${tf.dirty ? '; the working tree had uncommitted changes' : ''}`,
    ...(tf.changes.length > 0 ? [`- Terraform changes: ${tf.changes.map((c) => `${c.action} ${c.address}`).join('; ')}`] : []),
    ...(op.rehearsal?.stagingOp !== undefined
      ? [
          `- Applied to staging first: ${op.rehearsal.stagingOp} by ${op.rehearsal.appliedBy ?? '?'} at ${op.rehearsal.appliedAt ?? '?'}, gate passed`,
        ]
      : []),
  ];
}

/** A continued Talos upgrade: the nodes an earlier operation had already upgraded, which this one did not touch. */
function continuationLines(op: Operation): string[] {
  const continuation = continuationOf(op);
  if (continuation === undefined) return [];
  const done = continuation.done.map((d) => `${doneNodeText(d)} upgraded by ${d.op ?? 'an operation not in the records'}`);
  return [
    `- Continues an earlier upgrade to ${op.target.version ?? '?'}: already on it before this operation, so not upgraded by it: ${done.join('; ')}`,
  ];
}

/** What the gate before the operation found already unwell: tolerated, and named so nobody blames the operation for it. */
function baselineLines(op: Operation): string[] {
  if (op.baseline === undefined || op.baseline.items.length === 0) return [];
  return [
    `## Already failing before the operation (baseline of ${op.baseline.takenAt})`,
    '',
    ...op.baseline.items.map((item) => `- ${item.kind}: ${describeItem(item)}`),
    '',
  ];
}

/** An upgrade's Terraform follow-up, as the record and the record's summary say it. */
export function terraformFollowUpText(op: Operation): string | undefined {
  const f = op.terraformFollowUp;
  if (f === undefined) return undefined;
  const commit = f.commit === undefined ? 'no commit recorded' : `commit ${f.commit}`;
  return f.state === 'applied'
    ? `Terraform follow-up ${f.op} (${commit}) applied at ${f.at}`
    : `Terraform follow-up ${f.op} (${commit}) planned at ${f.at}, not applied yet`;
}

/** Which upgrade a Terraform change follows up, and which change followed up an upgrade. */
function followUpLines(op: Operation): string[] {
  const parsed = FollowUpOf.safeParse(op.data?.['followUpOf']);
  const of = parsed.success ? parsed.data : [];
  const followed = terraformFollowUpText(op);
  return [
    ...of.map((u) => `- Follow-up of ${u.op} (the ${KIND_WORDS[u.kind]} upgrade to ${u.version})`),
    ...(followed === undefined ? [] : [`- ${followed}`]),
  ];
}
