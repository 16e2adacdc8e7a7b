import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { applyResolves } from './resolves.ts';
import { APPLY_OFFERED, applyPagedOutcome, applyReviewRequest, terraformFollowUpMessage } from './messages.ts';
import type { Presentation } from '../../../src/chat/presentation.ts';
import { approversToPage } from '../../engine/approvals/four-eyes.ts';
import { groupedChanges, planCounts, planEffectLines } from '../../../src/chat/plan-report.ts';
import { planEffect } from '../../../src/rules/plan-effect.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { Step, TerraformPlan } from '../../../src/ops/operation.ts';
import { findStagingOperation } from '../../../src/ops/rehearsal.ts';
import { judgeTerraformChange, type ChangeFacts } from '../../../src/rules/terraform-change.ts';
import { declaredMoves, versionsOf } from '../../../src/rules/declared-versions.ts';
import { withV } from '../../../src/rules/versions.ts';
import { declaredInState } from '../../../src/tofu/declared-versions.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import { vmKeys, type PlanReview } from '../../../src/tofu/parse-plan.ts';
import { runPlan } from '../../../src/tofu/run-plan.ts';
import { assertPlanSpace, DEFAULT_PLAN_SPACE_BYTES, planSpaceUsage, PlanSpaceFull } from '../../../src/tofu/plan-space.ts';
import { probeSignals } from '../../engine/job-context.ts';
import type { Playbook } from '../../engine/playbook.ts';
import { applyAgainRequest } from '../shared/apply-again.ts';
import { gateAfterApply } from '../shared/apply-gate.ts';
import { isoRefusal, planIso } from '../shared/boot-iso.ts';
import { declaredAtApply, judgeDeclaredNow } from '../shared/declared-now.ts';
import { watchJoin } from '../shared/node-join.ts';
import { applyPlan } from '../shared/plan-apply.ts';
import { planDirOf } from '../shared/plan-dir.ts';
import { attachPlanText } from '../shared/plan-text.ts';
import { planTree } from '../shared/plan-tree.ts';
import { snapshotStep } from '../shared/snapshot-step.ts';
import { terraformApplyTexts } from './texts.ts';
import { terraformData, TerraformApplyData } from './data.ts';
import { followUpsOf } from './follow-up-link.ts';

/** A VM's hostname as the runbook's `talos_nodes` keys it: nothing else reaches the Kubernetes API or a message. */
const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** Whether etcd settled after the last join: no learner left, and every member reports the same leader. */
async function etcdSettled(
  talosctl: Talosctl,
  cluster: ClusterConfig,
  probe: () => AbortSignal,
): Promise<{ ok: boolean; evidence: string[] }> {
  const status = await checkEtcdQuorum(talosctl, cluster.controlPlanes, probe());
  const members = await talosctl.run(['etcd', 'members'], [cluster.controlPlanes[0]!], { signal: probe(), okExitCodes: [0, 1] });
  const learners = members.stdout.trim() === '' ? [] : parseEtcdMembers(members.stdout).filter((m) => m.learner === true);
  const evidence = [
    ...(status.status === 'passed' ? [] : [status.summary, ...status.evidence]),
    ...learners.map((m) => `${m.hostname} is still a learner, not a voting member`),
  ];
  return { ok: status.status === 'passed' && learners.length === 0, evidence };
}

/** The runbook's "Change machine configuration" before anything is applied: plan, keep it, and judge it. */
const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const probe = probeSignals(deps.timeouts.probeMs, signal);
  const dir = planDirOf(deps, op.id);
  const tofuDir = await planTree(deps, cluster, signal);
  const tree = await deps.git.read(tofuDir, probe());
  const limit = deps.planSpaceBytes ?? DEFAULT_PLAN_SPACE_BYTES;
  // A full plan space refuses this plan (the preflight's refusal names it); it never reaches the credentials' volume.
  await assertPlanSpace(deps.planDir, limit);
  const outcome = await runPlan(deps.tofu, tofuDir, { signal, planTimeoutMs: deps.timeouts.stepMs, saveTo: dir, declaredNames: cluster });
  if (outcome.saved !== undefined) {
    const used = await planSpaceUsage(deps.planDir);
    if (used.bytes > limit) {
      await rm(dir, { recursive: true, force: true });
      throw new PlanSpaceFull(used.bytes, limit, used.plans - 1);
    }
  }
  const review = outcome.plan.status === 'planned' ? outcome.plan.review : undefined;
  const talosctl = await session.talosctl();
  const history = await deps.store.listForCluster(cluster.name, 500);
  const removals = history.flatMap((o) =>
    o.kind === 'node-remove' && o.state === 'completed' && o.target.nodeName !== undefined
      ? [{ op: o.id, nodeName: o.target.nodeName }]
      : [],
  );
  // Every plan is judged by the versions it declares, against what every observed node runs now.
  const declared = review === undefined ? [] : await judgeDeclaredNow(session, review.declared, probe());
  const stateDeclared = await declaredInState(session.outputs, probe());
  const upgrades: ChangeFacts['upgrades'] = {};
  for (const j of declared) {
    if (j.state !== 'match') continue;
    const kind = j.kind === 'talos' ? 'talos-upgrade' : 'k8s-upgrade';
    const done = history.find((o) => o.kind === kind && o.state === 'completed' && withV(o.target.version ?? '') === j.declared);
    if (done !== undefined) upgrades[j.kind] = { op: done.id, version: j.declared };
  }
  const adds = review === undefined ? [] : vmKeys(review, 'create');
  const settled = adds.length > 0 ? await etcdSettled(talosctl, cluster, probe) : undefined;
  const stateVersions = versionsOf(stateDeclared);
  const moves = review === undefined ? {} : declaredMoves(versionsOf(review.declared), stateVersions);
  const judged = judgeTerraformChange({
    cluster: cluster.name,
    outcome,
    tree,
    removals,
    declared,
    stateDeclared: stateVersions,
    upgrades,
    etcdSettled: settled,
  });
  // The runbook's "Verify its checksum" before an apply that relies on the boot ISO: the approver compares this download's sha256.
  const talosDeclared = review === undefined ? undefined : versionsOf(review.declared).talos;
  const iso =
    review === undefined
      ? undefined
      : await planIso(
          {
            factory: deps.factory,
            outputs: session.outputs,
            cluster,
            review,
            ...(talosDeclared === undefined ? {} : { talosVersion: talosDeclared }),
            talosMoves: talosDeclared !== undefined && moves.talos !== false,
          },
          signal,
        );
  const isoRefused = isoRefusal(iso);
  if (isoRefused !== undefined) judged.refusals.push(isoRefused);
  for (const name of adds)
    if (!HOSTNAME.test(name))
      judged.refusals.push(`the plan creates a VM keyed ${JSON.stringify(name)}, which is not a hostname the bot can watch join`);

  const drainNodes = review === undefined ? undefined : nodesTakenAway(review, cluster);
  if (drainNodes?.length === 0)
    judged.notes.push('No drain judged here: the plan replaces or destroys no VM, so no disruption budget holds the apply.');

  const commit = tree.commit;
  // The runbook promotes "the same reviewed change": a staging apply of the same commit that passed staging's gate (it completed).
  const rehearsal =
    cluster.environment === 'production' && commit !== undefined
      ? await findStagingOperation(deps, 'terraform-apply', (o) => terraformData(o).terraform?.commit === commit)
      : undefined;
  const terraform: TerraformPlan = {
    commit: tree.commit,
    dirty: (tree.uncommitted?.length ?? 0) > 0,
    planSha256: outcome.saved?.sha256,
    summary: review ? planCounts(review) : outcome.plan.status === 'error' ? 'tofu plan failed' : 'not planned',
    changes: review?.changes.map((c) => ({ address: c.address, action: c.action })) ?? [],
    listing: review ? groupedChanges(review) : [],
    ...(review ? { effect: planEffectLines(planEffect(review, cluster)) } : {}),
    adds,
    ...(drainNodes === undefined ? {} : { drainNodes }),
    ...(review?.talosVersion ? { talosVersion: review.talosVersion } : {}),
    ...(review ? { declared: review.declared, declaredMoves: moves } : {}),
    ...(iso === undefined ? {} : { iso }),
  };
  const followUpOf = followUpsOf(upgrades, moves);
  // Only a plan that may be applied is the upgrade's follow-up; a refused one brings nothing in line.
  if (judged.refusals.length === 0)
    await deps.linkFollowUp(op, followUpOf, { state: 'planned', commit: tree.commit, at: deps.now().toISOString() });
  return {
    refusals: judged.refusals,
    notes: judged.notes,
    rehearsal,
    data: { terraform, ...(followUpOf.length === 0 ? {} : { followUpOf }) } satisfies TerraformApplyData,
    ...(drainNodes === undefined ? {} : { common: { drainNodes } }),
    target: {},
    steps: [
      { id: 'snapshot', kind: 'snapshot', status: 'pending' },
      { id: 'tofu-apply', kind: 'tofu-apply', status: 'pending' },
      ...adds.map((name): Step => ({ id: `join-${name}`, kind: 'node-join', nodeName: name, status: 'pending' })),
      { id: 'gate', kind: 'apply-gate', status: 'pending' },
    ],
  };
};
/** How a Terraform change reads, with the message that pages its approvers and is edited to the outcome. */
const presentation: Presentation = { ...terraformApplyTexts, paged: { event: APPLY_OFFERED, message: applyPagedOutcome } };

/** `/talos plan`: a reviewed Terraform change, applied exactly as planned after an approver's Apply, then watched and gated. */
export const terraformApplyPlaybook: Playbook = {
  command: {
    name: 'terraform-apply',
    words: ['plan'],
    argument: { kind: 'none' },
    help: '`tofu fmt`/`validate`/`plan`, kept for review; an approver applies it exactly as planned (staging first, then production)',
    group: 'change',
    example: '/talos plan staging',
    // The plan is kept, reviewed in the cluster's channel, and applied exactly as saved only after an approver's Apply.
    request: {
      what: 'a Terraform plan',
      refuseAtOnce: {},
      queued: (op, cluster) =>
        `Running \`tofu fmt\`, \`validate\` and \`plan\` for *${cluster.name}* (\`${op.id}\`); the plan appears in this channel. Nothing is applied before an approver clicks Apply on it.`,
    },
  },
  // Its Start is its Apply: the approver's decision on a plan an operator asked for, so four eyes hold.
  startedBy: 'approvers',
  heldByWindows: true,
  texts: presentation,
  data: TerraformApplyData,
  checks: { snapshotOffCluster: true },
  start: 'plan',
  lock: 'cluster',
  // A refused, stopped or expired change is planned afresh: what moved since is in the new plan.
  again: 'replan',
  // The disagreements its reviewed plan settles: the nodes it declares or configures again, the talosconfig it changes.
  resolves: applyResolves,
  preflight,
  startRecheck: declaredAtApply,
  // The Apply on the plan is the approval of the apply step (see `startApproves`): a failure or a Retry spends it, and the
  // step then asks an approver again, four eyes included.
  needsApproval: (step) => step.kind === 'tofu-apply',
  // The approver sees the saved plan: no operation-wide approval stands in for that.
  neverCovered: (step) => step.kind === 'tofu-apply',
  approvalMessage: (_ctx, op, approval, step) => Promise.resolve(applyAgainRequest(op, approval, presentation, step)),
  recheck: (_ctx, _op, step) =>
    Promise.resolve(
      step.kind === 'node-join' && !HOSTNAME.test(step.nodeName ?? '') ? [`${JSON.stringify(step.nodeName)} is not a hostname`] : [],
    ),
  runStep(ctx, op, step) {
    if (step.kind === 'snapshot') {
      const drainNodes = terraformData(op).terraform?.drainNodes;
      return snapshotStep(ctx, op, drainNodes === undefined ? {} : { drainNodes });
    }
    if (step.kind === 'tofu-apply') return applyPlan(ctx, op, step);
    if (step.kind === 'node-join') return watchJoin(ctx, op, step);
    return gateAfterApply(ctx, op);
  },
  async complete(ctx, op) {
    const data = terraformData(op);
    await ctx.linkFollowUp(op, data.followUpOf ?? [], {
      state: 'applied',
      commit: data.terraform?.commit,
      at: ctx.deps.now().toISOString(),
    });
    const production = ctx.deps.inventory.clusters.filter((c) => c.environment === 'production');
    const joined = op.steps.filter((s) => s.kind === 'node-join').map((s) => s.detail ?? s.nodeName ?? '');
    const gate = op.steps.find((s) => s.kind === 'apply-gate')?.detail ?? 'health gate passed';
    const nodes = op.steps.flatMap((s) => (s.joined === undefined ? [] : [{ ...s.joined, name: s.nodeName }]));
    return { validation: gate, followUp: terraformFollowUpMessage(op, ctx.cluster, production, joined, nodes) };
  },
  // Never the apply: a saved plan is spent once applied or refused. Watching and gating are safe to repeat.
  retryFrom: (step) => (step.kind === 'tofu-apply' ? undefined : step.id),
  async posted(deps, op) {
    await attachPlanText(deps, op);
    if (op.state !== 'planned') return;
    const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
    if (cluster === undefined) return;
    const expiresAt = new Date(Date.parse(op.createdAt) + deps.timeouts.planTtlMs).toISOString();
    const request = {
      ...applyReviewRequest(op, approversToPage(cluster, op), expiresAt, cluster.requireDistinctApprover, presentation),
      broadcast: true,
    };
    await deps.audit.record(op.id, { actor: 'bot', event: APPLY_OFFERED, detail: `until ${expiresAt}` }, request);
  },
  async ended(deps, op) {
    await rm(planDirOf(deps, op.id), { recursive: true, force: true });
  },
  recordAppendix: (deps, op) => readFile(join(planDirOf(deps, op.id), 'tfplan.txt'), 'utf8').catch(() => undefined),
};

/**
 * The nodes a plan takes away: those whose VM it replaces or destroys. The runbook judges disruption
 * budgets for the nodes an operation drains; an apply drains none, and only a node whose VM goes has
 * its budgets judged. Undefined when such a VM's hostname has no observed address: then every budget is.
 */
function nodesTakenAway(review: PlanReview, cluster: ClusterConfig): string[] | undefined {
  const names = [...vmKeys(review, 'replace'), ...vmKeys(review, 'forget-replace'), ...vmKeys(review, 'delete')];
  const byName = new Map(Object.entries(cluster.nodeNames ?? {}).map(([address, name]) => [name, address]));
  const addresses = names.map((name) => byName.get(name));
  return addresses.every((a) => a !== undefined) ? [...new Set(addresses)] : undefined;
}
