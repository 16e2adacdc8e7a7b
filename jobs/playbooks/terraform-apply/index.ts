import { access, readFile, rm } from 'node:fs/promises';
import { applyResolves } from './resolves.ts';
import { join } from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { errorText } from '../../../src/chat/error-text.ts';
import { applyAgainRequest, applyProgressMessage, applyReviewRequest, terraformFollowUpMessage, type ApplyProgress } from './messages.ts';
import { approversToPage } from '../../engine/approvals/four-eyes.ts';
import { groupedChanges, planCounts } from '../../../src/chat/plan-report.ts';
import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { terraformWorkDir } from '../../../src/config/terraform-repo.ts';
import { ExecError } from '../../../src/exec/process-runner.ts';
import type { Operation, Step, TerraformPlan } from '../../../src/ops/operation.ts';
import { findStagingOperation } from '../../../src/ops/rehearsal.ts';
import { judgeTerraformChange, type ChangeFacts } from '../../../src/rules/terraform-change.ts';
import { declaredMoves, versionsOf } from '../../../src/rules/declared-versions.ts';
import { withV } from '../../../src/rules/versions.ts';
import { declaredInState } from '../../../src/tofu/declared-versions.ts';
import { declaredAtApply, judgeDeclaredNow } from './declared.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import { tofuErrorLines } from '../../../src/tofu/diagnostics.ts';
import { reviewPlan, vmKeys, type PlanReview } from '../../../src/tofu/parse-plan.ts';
import { showPlanJson } from '../../../src/tofu/show-plan.ts';
import { fileSha256, runPlan } from '../../../src/tofu/run-plan.ts';
import { assertPlanSpace, DEFAULT_PLAN_SPACE_BYTES, planSpaceUsage, PlanSpaceFull } from '../../../src/tofu/plan-space.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { probeSignals, StepFailure } from '../../engine/job-context.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { Playbook, PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { startProgressReply } from '../shared/progress-reply.ts';
import { snapshotStep } from '../snapshot/snapshot-step.ts';
import { terraformApplyTexts } from './texts.ts';
import { isoRefusal, planIso } from './iso.ts';
import { checkNewNodeImage } from '../node-replace/new-node-image.ts';
import { terraformData, TerraformApplyData } from './data.ts';
import { followUpsOf } from './follow-up-link.ts';

/** At most one edit of the apply's progress message per this many ms. */
const PROGRESS_EDIT_MS = 2000;
/** A VM's hostname as the runbook's `talos_nodes` keys it: nothing else reaches the Kubernetes API or a message. */
const HOSTNAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

/** The private directory that keeps an operation's reviewed plan until its Apply. */
export function planDirOf(deps: Pick<PlaybookDeps, 'planDir'>, opId: string): string {
  return join(deps.planDir, opId);
}

const DEFAULT_AGAIN = 'Run `/talos plan` again for a fresh plan.';

/** What an apply of a reviewed plan accepts beyond a routine change, and what its refusals tell the operator to do. */
export interface ReviewedApply {
  /** Addresses whose `stop` danger was reviewed as the point of the plan (a node replacement's VM); any other still stops. */
  allowedStops?: readonly string[];
  /** What to do for a fresh plan, ending every refusal; default: run `/talos plan` again. */
  again?: string;
  /** Upper bound of the apply in ms; default the step timeout. A VM destroy that waits for a guest shutdown needs longer. */
  timeoutMs?: number;
}

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

/** The bot's copy of a cluster's `terraformRepo`; a cluster without one has its checkout on a volume. */
function repoOf(deps: Pick<PlaybookDeps, 'repo'>, cluster: ClusterConfig): NonNullable<PlaybookDeps['repo']> {
  if (deps.repo === undefined)
    throw new StepFailure(`${cluster.name} names a terraformRepo, but this bot fetches none; nothing was applied.`);
  return deps.repo;
}

/**
 * Where this plan runs: the cluster's `terraformDir`, or, with a `terraformRepo`, the bot's copy just
 * fetched at the ref's newest commit and initialised (`tofu init` keeps the backend and providers in
 * the ignored `.terraform/`, so the copy stays clean). The commit the plan records is the fetched one.
 */
export async function planTree(deps: PlaybookDeps, cluster: ClusterConfig, signal?: AbortSignal): Promise<string> {
  if (cluster.terraformRepo === undefined) return cluster.terraformDir;
  const { dir } = await repoOf(deps, cluster).fetch(cluster, signal);
  await deps.tofu.run(dir, ['init', '-input=false', '-no-color'], { signal, timeoutMs: deps.timeouts.stepMs });
  return dir;
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

/**
 * What Redis says was reviewed is checked against what is on disk and in git before anything runs:
 * the plan file with the reviewed hash, the tree at the reviewed commit with nothing uncommitted,
 * and the plan, read again, still free of anything the runbook forbids.
 */
export async function checkReviewed(ctx: WalkContext, op: Operation, file: string, reviewed: ReviewedApply = {}): Promise<void> {
  const NEW_PLAN = reviewed.again ?? DEFAULT_AGAIN;
  const { deps, cluster } = ctx;
  const tf = terraformData(op).terraform;
  if (tf?.planSha256 === undefined || tf.commit === undefined)
    throw new StepFailure(`the operation holds no reviewed plan; nothing was applied. ${NEW_PLAN}`);
  const present = await access(file).then(
    () => true,
    () => false,
  );
  if (!present)
    throw new StepFailure(
      `the reviewed plan file is gone from the plan space (deleted when its operation ended, or PLAN_DIR is not a volume every replica mounts); nothing was applied. ${NEW_PLAN}`,
    );
  const sha = await fileSha256(file);
  if (sha !== tf.planSha256)
    throw new StepFailure(
      `the plan file on disk is not the reviewed one (sha256 ${sha.slice(0, 12)}…, reviewed ${tf.planSha256.slice(0, 12)}…); nothing was applied. ${NEW_PLAN}`,
    );
  // With a terraformRepo, the bot's copy goes back to the planned commit, never fetching: a ref moved since the plan is not applied.
  if (cluster.terraformRepo !== undefined)
    await repoOf(deps, cluster)
      .checkout(cluster, tf.commit, ctx.signal)
      .catch((error: unknown) => {
        throw new StepFailure(`${errorText(error)}; nothing was applied. ${NEW_PLAN}`);
      });
  const tree = await deps.git.read(terraformWorkDir(cluster), probeSignal(ctx));
  if (tree.commit !== tf.commit)
    throw new StepFailure(
      `the Terraform directory moved from the reviewed commit ${tf.commit.slice(0, 12)} to ${tree.commit?.slice(0, 12) ?? 'no commit'}; nothing was applied. ${NEW_PLAN}`,
    );
  if (tree.ignoredInputs !== undefined && tree.ignoredInputs.length > 0)
    throw new StepFailure(
      `the Terraform directory holds files git ignores that tofu reads (${tree.ignoredInputs.slice(0, 5).join(', ')}); nothing was applied. ${NEW_PLAN}`,
    );
  if (tree.uncommitted === undefined || tree.uncommitted.length > 0) {
    throw new StepFailure(
      `the Terraform working tree ${tree.uncommitted === undefined ? 'could not be checked' : `has uncommitted changes (${tree.uncommitted.slice(0, 5).join(', ')})`}; nothing was applied. ${NEW_PLAN}`,
    );
  }
  const allowed = reviewed.allowedStops ?? [];
  const stops = reviewPlan(await showPlanJson(deps.tofu, terraformWorkDir(cluster), file, probeSignal(ctx))).dangers.filter(
    (d) => d.level === 'stop' && !allowed.includes(d.address),
  );
  if (stops.length > 0)
    throw new StepFailure(`the plan file ${stops.map((d) => `${d.meaning} (${d.address})`).join('; ')}; nothing was applied. ${NEW_PLAN}`);
  // Asked at the click, and again here: a window or an approval may have held the step while nodes moved.
  const versions = await declaredAtApply(ctx.session, op, probeSignal(ctx));
  if (versions.length > 0) throw new StepFailure(`${versions.join('; ')}; nothing was applied. ${NEW_PLAN}`);
}

function failureOf(error: unknown, NEW_PLAN: string): StepFailure {
  const result = error instanceof ExecError ? error.result : undefined;
  const output = result ? `${result.stdout}\n${result.stderr}` : '';
  if (/Saved plan is stale/.test(output)) {
    return new StepFailure(
      `tofu refused the saved plan as stale: the Terraform state changed after it was planned, so nothing was applied. ${NEW_PLAN}`,
      tofuErrorLines(result!.stderr, result!.stdout),
    );
  }
  const lines = result ? tofuErrorLines(result.stderr, result.stdout) : [errorText(error)];
  return new StepFailure(
    `tofu apply failed: ${lines[0] ?? errorText(error)}. What it applied before the error stays applied; nothing is reverted automatically. ${NEW_PLAN} to see what is left`,
    lines.slice(0, 15),
  );
}

/** `tofu apply <the reviewed plan file>`: never a fresh plan, never `-auto-approve`; its output in one edited message, the full log attached. */
export async function applyPlan(ctx: WalkContext, op: PostedOperation, step: Step, reviewed: ReviewedApply = {}): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const NEW_PLAN = reviewed.again ?? DEFAULT_AGAIN;
  // A saved plan is applied once: a run resumed after a crash mid-apply cannot tell what tofu did, so it stops rather than guess.
  if (step.issuedAt !== undefined) {
    throw new StepFailure(
      `the bot stopped while \`tofu apply\` ran (started ${step.issuedAt}), so what it applied is unknown; a reviewed plan is never applied twice. ${NEW_PLAN} to see what is left`,
    );
  }
  const dir = planDirOf(deps, op.id);
  const file = join(dir, 'tfplan');
  // A plan that failed its check is never applied later either (the apply is never retried): it goes at once.
  await checkReviewed(ctx, op, file, reviewed).catch(async (error: unknown) => {
    await rm(file, { force: true });
    throw error;
  });
  const issuedAt = deps.now().toISOString();
  await ctx.record({ step: { id: step.id, issuedAt } });
  const started = deps.clock.now().getTime();
  const progress: ApplyProgress = { cluster: cluster.name, outcome: 'running', lines: [], elapsedMs: 0 };
  const view = (): ApplyProgress => ({ ...progress, lines: [...progress.lines], elapsedMs: deps.clock.now().getTime() - started });
  const reply = startProgressReply(deps, op, {
    key: `${op.id}-apply-${Date.parse(issuedAt)}`,
    render: applyProgressMessage,
    minIntervalMs: PROGRESS_EDIT_MS,
    onError: (error) => ctx.log.warn({ err: errorText(error) }, 'apply progress edit failed'),
  });
  await reply.open(view());
  ctx.phase?.(`tofu apply of the reviewed plan on ${cluster.name}`);
  const onLine = (line: string): void => {
    progress.lines.push(line);
    if (line.startsWith('Apply complete!')) progress.summary = line;
    reply.update(view());
  };
  const attachLog = (): Promise<void> =>
    deps.chat
      .upload(op.channel, op.rootTs, {
        filename: `${op.id}-tofu-apply.log`,
        title: `tofu apply of ${op.id} on ${cluster.name}`,
        content: progress.lines.join('\n'),
      })
      .catch((error: unknown) => ctx.log.warn({ err: errorText(error) }, 'apply log not attached'));
  try {
    await deps.tofu.run(terraformWorkDir(cluster), ['apply', '-input=false', '-no-color', file], {
      signal: ctx.signal,
      timeoutMs: reviewed.timeoutMs ?? deps.timeouts.stepMs,
      onStdoutLine: onLine,
      onStderrLine: onLine,
    });
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    progress.outcome = 'failed';
    await reply.finish(view());
    await attachLog();
    throw failureOf(error, NEW_PLAN);
  } finally {
    // Applied or refused, a saved plan is spent; its text stays for the record until the operation ends.
    await rm(file, { force: true });
  }
  progress.outcome = 'done';
  await reply.finish(view());
  await attachLog();
  return {
    event: 'tofu apply finished',
    detail: `${progress.summary ?? 'applied'} (commit ${terraformData(op).terraform?.commit?.slice(0, 12) ?? '?'}, plan sha256 ${terraformData(op).terraform?.planSha256?.slice(0, 12) ?? '?'}…)`,
  };
}

function internalIp(node: V1Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

/** Where a new node stands: Ready in Kubernetes, and for a control plane a voting etcd member under one leader. */
async function joinState(ctx: WalkContext, name: string): Promise<{ joined: boolean; evidence: string[]; role: string; address?: string }> {
  const { cluster } = ctx;
  const node = (await ctx.session.kube.listNodes(probeSignal(ctx))).find((n) => n.metadata?.name === name);
  if (node === undefined) return { joined: false, evidence: [`${name}: no Kubernetes Node yet`], role: 'node' };
  const controlPlane = node.metadata?.labels?.[CONTROL_PLANE_LABEL] !== undefined;
  const role = controlPlane ? 'control plane' : 'worker';
  const address = internalIp(node);
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const evidence = [`${name} (${address ?? 'no InternalIP'}): Kubernetes ${ready ? 'Ready' : 'not Ready'}`];
  if (!controlPlane) return { joined: ready, evidence, role, address };
  const members = await ctx.talosctl.run(['etcd', 'members'], [cluster.controlPlanes[0]!], {
    signal: probeSignal(ctx),
    okExitCodes: [0, 1],
  });
  const member = members.stdout.trim() === '' ? undefined : parseEtcdMembers(members.stdout).find((m) => m.hostname === name);
  evidence.push(
    member === undefined
      ? `${name}: not an etcd member yet`
      : member.learner === true
        ? `${name}: etcd learner, not yet a voting member`
        : `${name}: voting etcd member`,
  );
  const voting = member !== undefined && member.learner !== true;
  const leader =
    address === undefined
      ? undefined
      : await checkEtcdQuorum(ctx.talosctl, [...new Set([...cluster.controlPlanes, address])], probeSignal(ctx));
  if (leader !== undefined) evidence.push(`etcd status: ${leader.summary}`);
  return { joined: ready && voting && leader?.status === 'passed', evidence, role, address };
}

/** A node the apply added, watched until it joined; the bot never runs `talosctl bootstrap` for it (the runbook forbids it). */
export async function watchJoin(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const name = step.nodeName ?? '';
  let evidence: string[] = [];
  const joined = await pollUntil(deps.clock, clusterWait(deps, ctx.signal), async () => {
    const state = await joinState(ctx, name);
    evidence = state.evidence;
    return state.joined && state.address !== undefined
      ? { done: true, value: { ...state, address: state.address } }
      : { done: false, pending: state.evidence.join('; ') };
  });
  if (!joined.ok) {
    throw new StepFailure(
      `${name} did not join within ${Math.round(deps.timeouts.nodeReadyMs / 60_000)} min; nothing was reverted. Look at the node's console and \`talosctl dmesg\`; Retry watches again`,
      evidence,
    );
  }
  const state = joined.value;
  await ctx.record({
    step: { id: step.id, joined: { address: state.address, role: state.role === 'control plane' ? 'controlplane' : 'worker' } },
  });
  // The VM booted the ISO at the static file ID: the node must run the declared Talos version and its class's schematic.
  const image = await checkNewNodeImage(ctx, state.address, name);
  const detail = `${name}${state.address ? ` (${state.address})` : ''} joined as a ${state.role}: ${state.evidence.join('; ')}; ${image}`;
  return { event: `${name} joined`, detail };
}

/** The standard health gate after the apply; a failure stops with its evidence and reverts nothing. */
export async function gateAfterApply(ctx: WalkContext, op: Operation): Promise<StepResult> {
  // The cluster as it is now: the nodes the apply added count, though the inventory does not list them yet.
  const joined = op.steps.flatMap((s) => (s.joined === undefined ? [] : [s.joined]));
  const cluster: ClusterConfig = {
    ...ctx.cluster,
    // A replaced node comes back at its address: counted once.
    controlPlanes: [...new Set([...ctx.cluster.controlPlanes, ...joined.filter((j) => j.role === 'controlplane').map((j) => j.address)])],
    workers: [...new Set([...ctx.cluster.workers, ...joined.filter((j) => j.role === 'worker').map((j) => j.address)])],
  };
  // The nodes the apply added are new: anything unwell on them stops, as anything that got worse elsewhere.
  const drainNodes = terraformData(op).terraform?.drainNodes;
  const gate = await walkGate(ctx, cluster, {
    ...(drainNodes === undefined ? {} : { drainNodes }),
    baseline: {
      baseline: op.baseline,
      nodes: op.steps.flatMap((s) => (s.joined === undefined ? [] : [s.joined.address, ...(s.nodeName ? [s.nodeName] : [])])),
    },
  });
  if (!gate.passed) {
    throw new StepFailure(
      "the health gate after the apply failed; nothing was reverted automatically. Fix forward with a new reviewed change (plan, staging, then production), or follow the runbook's recovery; Retry runs the gate again",
      gate.stopReasons,
    );
  }
  const counted = joined.length > 0 ? `, counting ${joined.map((j) => j.address).join(', ')}` : '';
  return {
    event: 'health gate passed',
    detail: `health gate passed after the apply (${gate.checks.length} checks${counted})${alreadyFailingNote(gate)}`,
  };
}

/** The reviewed plan's text (`tofu show -no-color`, sensitive values hidden) attached in the operation's thread; a failed upload is logged. */
export async function attachPlanText(deps: PlaybookDeps, op: PostedOperation): Promise<void> {
  const content = await readFile(join(planDirOf(deps, op.id), 'tfplan.txt'), 'utf8').catch(() => undefined);
  if (content === undefined) return;
  await deps.chat
    .upload(op.channel, op.rootTs, {
      filename: `${op.id}-tofu-plan.txt`,
      title: `tofu show of the plan of ${op.id} (${op.cluster})`,
      content,
    })
    .catch((error: unknown) => deps.logger.warn({ op: op.id, err: errorText(error) }, 'plan text not attached'));
}

/** `/talos plan`: a reviewed Terraform change, applied exactly as planned after an approver's Apply, then watched and gated. */
export const terraformApplyPlaybook: Playbook = {
  command: {
    name: 'terraform-apply',
    words: ['plan'],
    argument: { kind: 'none' },
    help: '`tofu fmt`/`validate`/`plan`, kept for review; an approver applies it exactly as planned (staging first, then production)',
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
  texts: terraformApplyTexts,
  data: TerraformApplyData,
  checks: { snapshotOffCluster: true },
  start: 'plan',
  lock: 'cluster',
  // The disagreements its reviewed plan settles: the nodes it declares or configures again, the talosconfig it changes.
  resolves: applyResolves,
  preflight,
  startRecheck: declaredAtApply,
  // The Apply on the plan is the approval of the apply step (see `startApproves`): a failure or a Retry spends it, and the
  // step then asks an approver again, four eyes included.
  needsApproval: (step) => step.kind === 'tofu-apply',
  // The approver sees the saved plan: no operation-wide approval stands in for that.
  neverCovered: (step) => step.kind === 'tofu-apply',
  approvalMessage: (_ctx, op, approval, step) => Promise.resolve(applyAgainRequest(op, approval, terraformApplyTexts, step)),
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
      ...applyReviewRequest(op, approversToPage(cluster, op), expiresAt, cluster.requireDistinctApprover),
      broadcast: true,
    };
    await deps.audit.record(op.id, { actor: 'bot', event: 'apply offered to approvers', detail: `until ${expiresAt}` }, request);
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
