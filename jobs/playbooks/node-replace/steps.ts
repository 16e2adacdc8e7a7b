import { rm } from 'node:fs/promises';
import { errorText } from '../../../src/chat/error-text.ts';
import { groupedChanges, planCounts } from '../../../src/chat/plan-report.ts';
import type { Operation, Step, TerraformPlan } from '../../../src/ops/operation.ts';
import { quorumForReplacement } from '../../../src/rules/quorum.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { assertPlanSpace, DEFAULT_PLAN_SPACE_BYTES } from '../../../src/tofu/plan-space.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { watchJoin } from '../shared/node-join.ts';
import { planDirOf } from '../shared/plan-dir.ts';
import { attachPlanText } from '../shared/plan-text.ts';
import { planTree } from '../shared/plan-tree.ts';
import { replaceData, type NodeReplaceData } from './data.ts';
import { lookUpMember, type MemberLookup } from './etcd-member.ts';
import { checkNewNodeImage } from '../shared/new-node-image.ts';
import { assertStillFailed } from './observe-node.ts';
import { planReplacement, replaceTargets } from './replace-targets.ts';
import { replaceIso } from './replace-iso.ts';

/** What a failed replace plan or apply tells the operator to do: a Retry of the plan step plans again. */
export const REPLAN =
  'Retry makes a new replace plan for review when nothing was applied; after a partial apply, look at the VM and the Terraform state first.';

/** Writes the replacement's own fields, only while the operation walks: a run that lost its operation writes nothing. */
export async function patchData(ctx: WalkContext, opId: string, patch: Partial<NodeReplaceData>): Promise<void> {
  await ctx.record((o) => ({ data: { ...o.data, ...patch } }));
}

/** The control planes other than the replaced node: every read and removal goes through them. */
function others(ctx: WalkContext, node: string): string[] {
  return ctx.cluster.controlPlanes.filter((cp) => cp !== node);
}

/** The quorum arithmetic now, asked through the other control planes. */
export async function quorumNow(
  ctx: WalkContext,
  node: string,
  hostname: string,
): Promise<{
  ok: boolean;
  summary: string;
  evidence: string[];
  member?: { id: string; hostname: string };
  /** Why the stored name does not fit the member found at the address; the removal is refused. */
  nameMismatch?: string;
  via?: string;
}> {
  const probe = (): AbortSignal => probeSignal(ctx);
  const lookup = await lookUpMember(ctx.talosctl, others(ctx, node), { address: node, hostname }, probe);
  const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probe());
  const evidence = [...lookup.evidence, ...membership.evidence];
  if (lookup.via === undefined) return { ok: false, summary: 'no other control plane answered `etcd members`', evidence };
  const count = Math.max(membership.memberCount, 1);
  const quorum = quorumForReplacement(count, Math.min(membership.healthy.length, count), {
    isMember: lookup.member !== undefined,
    replacedHealthy: membership.healthy.includes(node),
  });
  const started = lookup.member?.hostname ?? '';
  const nameMismatch =
    started !== '' && started !== hostname
      ? `the etcd member at ${node} is ${started} (\`${lookup.member!.id}\`), not ${hostname} as this operation recorded`
      : lookup.named !== undefined
        ? `the recorded name ${hostname} is the etcd member \`${lookup.named.id}\` at ${lookup.named.peerUrls.join(', ')}, not the member at ${node}`
        : undefined;
  return {
    ok: quorum.ok,
    summary: quorum.explanation,
    evidence,
    via: lookup.via,
    ...(lookup.member ? { member: { id: lookup.member.id, hostname: lookup.member.hostname || hostname } } : {}),
    ...(nameMismatch ? { nameMismatch } : {}),
  };
}

/** A stored name that disagrees with what is observed at the address is refused: the operation's record was changed or is stale. */
function refuseName(what: string, mismatch: string, evidence: string[]): StepFailure {
  return new StepFailure(
    `${mismatch}, so ${what} was not done and no member was touched. The operation's record does not match the cluster; cancel it, check \`talosctl etcd members\` and \`kubectl get nodes -o wide\`, then run /talos replace again`,
    evidence,
  );
}

/**
 * `talosctl etcd remove-member <id>` through a healthy control plane, after looking: a member already
 * gone is a fact, not an error. Quorum is checked again at the approver's click. A resumed run
 * observes whether the member is still listed and issues the removal only then.
 */
export async function removeMember(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const hostname = replaceData(op).hostname;
  const now = await assertStillFailed(ctx, node, 'its etcd member removal');
  if (now.nodeName !== undefined && now.nodeName !== hostname)
    throw refuseName('the etcd member removal', `the Node at ${node} is ${now.nodeName}, not ${hostname} as this operation recorded`, [
      now.summary,
    ]);
  const quorum = await quorumNow(ctx, node, hostname);
  if (quorum.via === undefined) throw new StepFailure(`etcd membership unknown: ${quorum.summary}; nothing was removed`, quorum.evidence);
  if (quorum.nameMismatch !== undefined) throw refuseName('the etcd member removal', quorum.nameMismatch, quorum.evidence);
  if (quorum.member === undefined) {
    // Gone after a removal this operation issued (the run stopped before it confirmed it): that removal is the record's.
    const data = replaceData(op);
    const removed = data.removedMember ?? (step.issuedAt !== undefined ? data.removing : undefined);
    if (removed !== undefined && data.removedMember === undefined) await patchData(ctx, op.id, { removedMember: removed });
    return {
      event: `${hostname} is no etcd member`,
      detail: `${hostname} (${node}) is not in the etcd membership (asked ${quorum.via})${removed ? `: member ${removed.id} was removed` : ''}; nothing to remove`,
      status: removed ? 'done' : 'skipped',
    };
  }
  if (!quorum.ok) throw new StepFailure(`etcd quorum: ${quorum.summary}; nothing was removed`, quorum.evidence);
  const member = quorum.member;
  const via = quorum.via;
  const endpoints = ctx.cluster.controlPlanes.filter((cp) => cp !== node);
  await patchData(ctx, op.id, { removing: member });
  await ctx.record({ step: { id: step.id, issuedAt: ctx.deps.now().toISOString() } });
  const result = await ctx.talosctl.run(['etcd', 'remove-member', member.id], [via], {
    signal: ctx.signal,
    endpoints,
    timeoutMs: ctx.deps.timeouts.stepMs,
    okExitCodes: [0, 1],
  });
  const after = await lookUpMember(ctx.talosctl, endpoints, { address: node, hostname }, () => probeSignal(ctx));
  if (after.via === undefined || after.member !== undefined) {
    throw new StepFailure(
      `talosctl etcd remove-member ${member.id} through ${via} ${result.exitCode === 0 ? 'returned' : 'failed'}, and ${after.via === undefined ? 'no control plane answered afterwards' : `${hostname} is still listed`}; Retry looks again and removes it only if it is still a member`,
      [
        ...result.stderr
          .trim()
          .split('\n')
          .filter((l) => l !== '')
          .slice(-5),
        ...after.evidence,
      ],
    );
  }
  await patchData(ctx, op.id, { removedMember: member });
  return {
    event: `etcd member ${member.id} removed`,
    detail: `checked when approved: etcd ${quorum.summary}; member ${member.id} (${member.hostname}) removed through ${via}`,
  };
}

/** Deletes the Kubernetes Node that carries the replaced address, if any: the new node registers afresh. */
export async function deleteNode(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  const name = (await assertStillFailed(ctx, node, 'the Node deletion')).nodeName;
  if (name === undefined)
    return { event: `no Kubernetes Node for ${node}`, detail: 'no Node carries this address; nothing to delete', status: 'skipped' };
  const stored = replaceData(op).hostname;
  if (name !== stored)
    throw new StepFailure(
      `the Node that carries ${node} is ${name}, not ${stored} as the bot planned, so no Node was deleted. Check which Node has ${node} (kubectl get nodes -o wide), then cancel and run /talos replace again`,
      [`Node ${name} has ${node}`],
    );
  await ctx.session.kube.deleteNode(name, probeSignal(ctx));
  return { event: 'Kubernetes Node deleted', detail: `Node ${name} (${node}) deleted from ${op.cluster}` };
}

/**
 * `tofu plan -replace=<the VM> -out` into the operation's plan space, judged: exactly that VM and
 * the configuration apply that configures the new one. The VM and the configuration apply are named
 * again from `tofu state list` here, never taken from the stored operation; a stored VM address that
 * disagrees is refused. The plan text goes to the thread, its summary and sha256 onto the operation
 * for the apply's approval. Run again on a Retry, it is a new plan.
 */
export async function replacePlan(ctx: WalkContext, op: PostedOperation): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const data = replaceData(op);
  const dir = planDirOf(deps, op.id);
  const tofuDir = await planTree(deps, cluster, ctx.signal);
  const tree = await deps.git.read(tofuDir, probeSignal(ctx));
  await assertPlanSpace(deps.planDir, deps.planSpaceBytes ?? DEFAULT_PLAN_SPACE_BYTES);
  const found = await replaceTargets(deps, cluster, tofuDir, data.hostname, ctx.signal);
  if (!found.ok) throw new StepFailure(`the replace plan of ${data.hostname} was not made: ${found.reason}. Nothing was applied`);
  const targets = found.targets;
  if (targets.vm !== data.vmAddress)
    throw new StepFailure(
      `the Terraform state names ${targets.vm} as the VM of ${data.hostname}, but this operation recorded ${data.vmAddress}: the record does not match, so no plan was made and nothing was applied. Cancel, then run /talos replace again`,
    );
  ctx.phase?.(`tofu plan ${targets.replace.map((a) => `-replace=${a}`).join(' ')}`);
  const { outcome, judged, refusals } = await planReplacement(deps, tofuDir, tree, data.hostname, targets, {
    signal: ctx.signal,
    saveTo: dir,
  });
  const review = outcome.plan.status === 'planned' ? outcome.plan.review : undefined;
  if (refusals.length > 0 || outcome.saved === undefined || review === undefined) {
    // A plan that is not exactly the replacement is never kept: nothing can apply it later.
    await rm(dir, { recursive: true, force: true });
    const reasons = refusals.length > 0 ? refusals : ['tofu plan kept no plan file'];
    throw new StepFailure(
      `the replace plan of ${data.hostname} is refused: ${reasons.join('; ')}. Nothing was applied; fix it, then Retry (a new plan) or cancel`,
      reasons,
    );
  }
  // The new VM boots the uploaded ISO: its approver compares the bot's download with it, as a Terraform change's does.
  const boot = await replaceIso(ctx, review);
  if (!boot.ok) {
    await rm(dir, { recursive: true, force: true });
    throw new StepFailure(`the replace plan of ${data.hostname} is refused: ${boot.reason}. Nothing was applied; Retry makes a new plan`, [
      boot.reason,
    ]);
  }
  const terraform: TerraformPlan = {
    commit: tree.commit,
    dirty: false,
    planSha256: outcome.saved.sha256,
    summary: planCounts(review),
    changes: review.changes.map((c) => ({ address: c.address, action: c.action })),
    listing: groupedChanges(review),
    adds: [],
    ...(boot.iso === undefined ? {} : { iso: boot.iso }),
  };
  await patchData(ctx, op.id, { terraform, gracefulShutdown: judged?.gracefulShutdown ?? true });
  await attachPlanText(deps, op);
  const notes = judged?.notes.length ? `; ${judged.notes.join('; ')}` : '';
  return {
    event: 'replace plan reviewed',
    detail: `${terraform.summary}: replaces ${targets.vm} and configures the new VM (commit ${tree.commit?.slice(0, 12) ?? '?'}, plan sha256 ${terraform.planSha256!.slice(0, 12)}…)${notes}; the plan is attached`,
  };
}

/** The new node watched until it joined; for a control plane, its new member recorded. */
export async function joinNode(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const result = await watchJoin(ctx, op, step);
  const data = replaceData(op);
  const node = step.node!;
  // The declared Talos and the schematic of its class, or a stop naming what it runs and the ISO to fix.
  const image = await checkNewNodeImage(ctx, node, data.hostname);
  if (!ctx.cluster.controlPlanes.includes(node)) return { ...result, detail: `${result.detail}; ${image}` };
  // The new member has the old address: looked up by it, through every control plane now that it answers.
  const lookup = await lookUpMember(ctx.talosctl, ctx.cluster.controlPlanes, { address: node }, () => probeSignal(ctx)).catch(
    (error: unknown): MemberLookup => ({ evidence: [errorText(error)] }),
  );
  const member = lookup.member;
  if (member !== undefined) await patchData(ctx, op.id, { joinedMember: { id: member.id, hostname: member.hostname || data.hostname } });
  const was = data.removedMember ? ` (it replaces member ${data.removedMember.id})` : '';
  return { ...result, detail: `${result.detail}; ${image}${member ? `; etcd member ${member.id}${was}` : ''}` };
}
