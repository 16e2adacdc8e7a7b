import { errorText } from '../../../src/errors.ts';
import { approvalRequestMessage } from '../../../src/chat/approval-messages.ts';
import { REHEARSED_ITEM, talosUpgradeStepLabel as stepLabel, talosUpgradeTexts } from './texts.ts';
import { allNodes } from '../../../src/config/inventory.ts';
import { runFinalVerification } from '../../../src/health/final-verification.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import { measureWaits } from '../../../src/time/wait-clock.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import type { RecordedNodeClass } from '../../../src/ops/node-class-record.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import type { CheckResult } from '../../../src/health/check-result.ts';
import { observeNodeImages, observeTalosVersions } from '../../../src/talos/observe.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import { schematicOfImage } from './installer-images.ts';
import { storedImageProblems } from './image-check.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { upgradeNode } from './node-step.ts';
import type { Playbook, PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { nodeStepProgress } from './node-step-progress.ts';
import { snapshotStep } from '../shared/snapshot-step.ts';
import { talosUpgradeFollowUp } from './follow-up.ts';
import { talosUpgradeData, TalosUpgradeData } from './data.ts';
import { preflight } from './preflight.ts';
import { parseTalosVersionInput } from '../../../src/rules/versions.ts';
import { toleranceWhileRebooting } from '../../../src/rules/quorum.ts';
import { roughDuration } from '../../../src/time/rough-duration.ts';

/** A request for the version the cluster already runs: a rolling re-install with the images Terraform declares now. */
export function isReinstall(op: Operation): boolean {
  return op.target.version !== undefined && op.target.version === op.target.fromVersion;
}

/** One node, idempotent by observation; the bot's own time per node is logged for the benchmark. */
async function nodeStep(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const log = ctx.log.child({ node: step.node });
  // The node's one line in the thread: talosctl's progress (pull, install, drain, reboot) while it upgrades, then its result.
  const live = nodeStepProgress(deps, op, step, log);
  const run = (): ReturnType<typeof upgradeNode> =>
    upgradeNode({
      deps,
      cluster: ctx.cluster,
      session: ctx.session,
      talosctl: ctx.talosctl,
      step,
      target: op.target.version!,
      reinstall: isReinstall(op),
      ...(op.baseline === undefined ? {} : { baseline: op.baseline }),
      changedNodes: op.steps.flatMap((s) => (s.issuedAt !== undefined && s.nodeName !== undefined ? [s.nodeName] : [])),
      log,
      signal: ctx.signal,
      markIssued: async (fromVersion, bootId) => {
        await ctx.record({ step: { id: step.id, issuedAt: deps.now().toISOString(), fromVersion, issuedBootId: bootId } });
      },
      record: async (event, detail) => {
        await deps.audit.record(op.id, { actor: 'bot', event, detail });
      },
      retried: op.retry?.state === 'used' && op.retry.step === step.id,
      phase: ctx.phase,
      gateDone: ctx.gateDone,
      imageProblems: () => storedImageProblems(ctx, op, step),
      // Kept for /talos status, and shown in the step's progress reply as it happens.
      progress: async (detail) => {
        live.show(detail);
        // Only while the step runs: a late write of talosctl's progress must not replace a finished step's result.
        await ctx.record((o) =>
          o.steps.find((s) => s.id === step.id)?.status === 'running' ? { step: { id: step.id, detail } } : undefined,
        );
      },
    });
  let measured;
  try {
    measured = await measureWaits(run);
  } catch (error) {
    await live.close('stopped', errorText(error));
    throw error;
  }
  const outcome = measured.result;
  await live.close('done', outcome.detail);
  log.info(
    {
      step: step.id,
      wallMs: Math.round(measured.wallMs),
      waitMs: Math.round(measured.waitMs),
      overheadMs: Math.round(measured.wallMs - measured.waitMs),
      outcome: outcome.kind,
    },
    'node step finished',
  );
  const done = isReinstall(op) ? 're-installed' : 'upgraded';
  return {
    event: `${outcome.kind === 'skipped' ? 'skipped' : done}: ${stepLabel(step)}`,
    detail: outcome.detail,
    status: outcome.kind === 'skipped' ? 'skipped' : 'done',
  };
}

/** The runbook's final verification: every node on the target, then the gate with Cilium, Flux and pods ready. */
async function verify(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const target = op.target.version!;
  const versions = await observeTalosVersions(ctx.talosctl, allNodes(ctx.cluster), ctx.signal);
  const off = [...versions]
    .filter(([, v]) => !v.reachable || v.version !== target)
    .map(([n, v]) => `${n}: ${v.reachable ? v.version : v.error}`);
  if (off.length > 0) throw new StepFailure(`not every node runs ${target}`, off);
  if (isReinstall(op)) {
    // A re-install keeps the version, so only the schematic shows that it took effect.
    const nodeSteps = op.steps.filter((s) => s.node !== undefined && s.image !== undefined);
    const running = await observeNodeImages(
      ctx.talosctl,
      nodeSteps.map((s) => s.node!),
      ctx.signal,
    );
    const stale = nodeSteps.flatMap((s) => {
      const seen = running.get(s.node!);
      const expected = schematicOfImage(s.image);
      if (seen?.reachable === true && seen.schematic === expected) return [];
      return [
        `${s.node!}: ${seen?.reachable === true ? `schematic ${seen.schematic ?? 'none'}` : (seen?.error ?? 'no answer')}, expected ${expected ?? s.image!}`,
      ];
    });
    if (stale.length > 0) throw new StepFailure('not every re-installed node runs the schematic of its new installer image', stale);
  }
  const gate = await runFinalVerification(
    ctx.cluster,
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal },
    // At the end no node was just changed: only what got worse than before the operation stops.
    {
      settleMs: ctx.deps.timeouts.settleMs,
      pollMs: ctx.deps.timeouts.pollMs,
      clock: ctx.deps.clock,
      baseline: { baseline: op.baseline, nodes: [] },
    },
  );
  ctx.gateDone?.(gate);
  if (!gate.passed) throw new StepFailure('the final health gate failed', gate.stopReasons);
  return {
    event: 'verified',
    detail: `every node runs ${target}; Cilium healthy, Flux ready, pods ready; health gate passed (${gate.checks.length} checks)${alreadyFailingNote(gate)}`,
  };
}

/**
 * At completion, each node the operation installed keeps its class in the bot's record: the
 * class of the image it installed, Terraform's default schematic or the Longhorn output's.
 */
async function recordNodeClasses(deps: PlaybookDeps, op: Operation): Promise<void> {
  const entries = new Map<string, RecordedNodeClass>();
  const at = deps.now().toISOString();
  for (const step of op.steps) {
    if (step.node === undefined || step.image === undefined || (step.status !== 'done' && step.status !== 'skipped')) continue;
    const schematic = schematicOfImage(step.image);
    if (schematic === undefined) continue;
    entries.set(step.node, { class: schematic === op.target.schematic ? 'default' : 'longhorn', schematic, op: op.id, at });
  }
  // A continuation's nodes already on the target were checked to run their class's schematic when it was planned.
  for (const done of talosUpgradeData(op).continuation?.done ?? []) {
    const schematic = schematicOfImage(done.image);
    if (schematic === undefined || entries.has(done.node)) continue;
    entries.set(done.node, { class: schematic === op.target.schematic ? 'default' : 'longhorn', schematic, op: op.id, at });
  }
  await deps.nodeClasses.write(op.cluster, entries);
}

/**
 * etcd as an approver reads it on a phone: `3 of 3 healthy, one leader: quorum holds while this node reboots`.
 * A check that did not pass says what it found; the full table is in its own reply.
 */
function etcdWords(etcd: CheckResult, members: number): string {
  if (etcd.status !== 'passed') return `${etcd.status === 'warning' ? '⚠️' : '⛔'} ${etcd.summary}`;
  return `${members} of ${members} healthy, one leader`;
}

/**
 * The fault tolerance while the node reboots, and for how long, as the previous node of the rollout took:
 * `etcd 2 of 3: no further failure tolerated, about 6 min`.
 */
function whileDown(op: Operation, step: Step, members: number): string | undefined {
  // An inventory that lists no control planes leaves the count to what is observed, which the card does not guess.
  if (members < 1) return undefined;
  const before = op.steps.slice(
    0,
    Math.max(
      0,
      op.steps.findIndex((s) => s.id === step.id),
    ),
  );
  const prev = before.findLast((s) => s.node !== undefined && s.status === 'done' && s.startedAt !== undefined && s.endedAt !== undefined);
  const took =
    prev === undefined
      ? ''
      : `, about ${roughDuration(Date.parse(prev.endedAt!) - Date.parse(prev.startedAt!))} (as ${prev.nodeName ?? prev.node} took)`;
  return `${toleranceWhileRebooting(members)}${took}`;
}

/**
 * What draining the node does, as the gate before the start announced it in the plan's notes: a CloudNativePG
 * primary that moves off it, Longhorn replicas rebuilt elsewhere while its volumes run degraded.
 */
function drainEffects(op: Operation, step: Step): string[] {
  // The gate's announcements name the drained node so: `<node> (<address>): …` (Longhorn), `… when <node> drains` (CloudNativePG).
  const name = step.nodeName;
  if (name === undefined) return [];
  return op.notes.filter((note) => note.startsWith(`${name} (`) || note.includes(` when ${name} drains`));
}

/** Who asked for the operation and who started it, by name where Slack says it, else by id (never a mention). */
async function people(deps: PlaybookDeps, op: Operation): Promise<{ asked: string; started?: string }> {
  const name = async (id: string): Promise<string> => (await deps.userNames?.(id).catch(() => undefined)) ?? id;
  return { asked: await name(op.requestedBy), ...(op.startedBy === undefined ? {} : { started: await name(op.startedBy) }) };
}

/** `/talos upgrade talos` after Start: snapshot, workers, then control planes one at a time with an approval each, then the final check. */
export const talosUpgradePlaybook: Playbook = {
  command: {
    name: 'talos-upgrade',
    words: ['upgrade', 'talos'],
    argument: { kind: 'version', what: 'Talos', example: 'v1.12.11', releases: 'talos' },
    help: 'rolling Talos upgrade with approvals (operators)',
    group: 'change',
    example: '/talos upgrade talos v1.13.9',
    form: { title: 'Upgrade Talos', submit: 'Plan the upgrade', rehearsedItem: REHEARSED_ITEM },
    request: {
      what: 'a Talos upgrade',
      version: parseTalosVersionInput,
      refuseAtOnce: { window: true, lock: true },
      queued: (op, cluster) =>
        `Preflight for the Talos upgrade of *${cluster.name}* to ${op.target.version ?? '?'} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
    },
  },
  startedBy: 'operators',
  heldByWindows: true,
  texts: talosUpgradeTexts,
  data: TalosUpgradeData,
  checks: { snapshotOffCluster: true, talosctlClient: true, healthGate: { announce: true }, window: true, lockFree: {} },
  start: 'plan',
  lock: 'cluster',
  versionRules: 'talos',
  preflight,
  needsApproval: (step) => step.kind === 'upgrade-control-plane',
  async approvalMessage(ctx, op, approval, step) {
    const etcd = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, ctx.signal, endpointsAvoiding(ctx.cluster, step.node!));
    return approvalRequestMessage(
      op,
      approval,
      {
        step,
        version: op.target.version ?? '?',
        etcdWords: etcdWords(etcd, ctx.cluster.controlPlanes.length),
        etcdEvidence: etcd.evidence,
        whileDown: whileDown(op, step, ctx.cluster.controlPlanes.length),
        effects: drainEffects(op, step),
        people: await people(ctx.deps, op),
      },
      talosUpgradeTexts,
    );
  },
  // Every run of a node step, a resumed one too: a step whose request was issued may send it again (see `resume.ts`).
  recheck(ctx, op, step) {
    if (step.image === undefined || step.node === undefined) return Promise.resolve([]);
    return storedImageProblems(ctx, op, step, step.issuedAt === undefined ? 'refuse' : 'pass');
  },
  runStep(ctx, op, step) {
    if (step.kind === 'snapshot') return snapshotStep(ctx, op);
    if (step.kind === 'verify') return verify(ctx, op);
    return nodeStep(ctx, op, step);
  },
  complete: async (ctx, op) => {
    // The record is evidence for later plans, not part of this upgrade: a Redis error costs the evidence, not the completion.
    await recordNodeClasses(ctx.deps, op).catch((error: unknown) => ctx.log.warn({ err: error }, 'could not record the node classes'));
    return {
      validation: op.steps.find((s) => s.kind === 'verify')?.detail ?? 'verified',
      followUp: await talosUpgradeFollowUp(ctx, op),
    };
  },
  // Every step may be retried: the snapshot and the verification only read, and a node step looks at its node
  // first and does only what is still needed (see resume.ts); it never requests an upgrade that may be in flight.
  retryFrom: (step) => step.id,
  rollbackKind: 'node-rollback',
  offersRollback: (step) => step.kind === 'upgrade-control-plane' || step.kind === 'upgrade-worker',
  quietStart: (step) => step.kind === 'verify',
};
