import { errorText } from '../../../src/chat/error-text.ts';
import { aboutOwnNode } from '../shared/resolves.ts';
import { operationRef } from '../../../src/chat/operation-link.ts';
import { nodeApprovalMessage } from '../../../src/chat/approval-messages.ts';
import { nodeRollbackTexts, rollbackCancelRefusal } from './texts.ts';
import { NodeRollbackData, rollbackData } from './data.ts';
import { rollbackFollowUp } from './messages.ts';
import { allNodes } from '../../../src/config/inventory.ts';
import { runHealthGate } from '../../../src/health/health-gate.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { observeEtcdMembership, quorumWhileRebooting } from '../../../src/talos/etcd-membership.ts';
import { findNodeByAddress, kubeNodeView, observeKubeNode, observeTalosVersions, pollTalosVersion } from '../../../src/talos/observe.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { PreflightDeps } from '../../engine/playbook.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding } from '../shared/node-endpoints.ts';
import { boundText, cordonAndDrain, drainTarget, type DrainTarget } from '../shared/node-drain.ts';
import { nodeSteps, nodePreflight, roleOf } from '../shared/node-target.ts';
import type { Playbook, StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal, walkGate } from '../../engine/walk.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';

async function etcdFacts(ctx: WalkContext, node: string): Promise<{ ok: boolean; summary: string; evidence: string[] }> {
  if (roleOf(ctx.cluster, node) === 'worker')
    return { ok: true, summary: 'a worker is not an etcd member; etcd is not affected', evidence: [] };
  if (ctx.cluster.controlPlanes.length === 1)
    return { ok: true, summary: 'the only control plane: the Kubernetes API is down while it reboots', evidence: [] };
  const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probeSignal(ctx));
  const quorum = quorumWhileRebooting(membership, node);
  return { ok: quorum.ok, summary: quorum.explanation, evidence: membership.evidence };
}

/** Issues the rollback once: a second one would flip the boot entry back to the image that failed. */
async function rollback(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const node = step.node!;
  if (step.issuedAt !== undefined)
    return {
      event: `rollback of ${node} already issued`,
      detail: 'issued before a restart; not issued again (a second rollback would switch back)',
    };
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  const before = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
  if (before?.reachable !== true)
    throw new StepFailure(`${node} does not answer talosctl; a rollback needs its API`, [before?.error ?? 'no answer']);
  const etcd = await etcdFacts(ctx, node);
  if (!etcd.ok) throw new StepFailure(`etcd would lose quorum while ${node} reboots: ${etcd.summary}`, etcd.evidence);
  // A Ready node is drained first, so its workloads move before the reboot; a node that is not Ready has nothing to hand over.
  const target = await drainTarget(ctx, node);
  let drained =
    target.unanswered === undefined
      ? `${node} is not Ready in Kubernetes: rolled back without a drain`
      : `the Kubernetes API did not answer (${target.unanswered}): rolled back without a drain`;
  if (target.ready && target.name !== undefined) {
    const name = target.name;
    ctx.phase?.(`draining ${name}`);
    await ctx.record((o) => ({ data: { ...rollbackData(o), cordoned: name } }));
    drained = await cordonAndDrain(ctx, node, name, ctx.deps.timeouts.stepMs);
  }
  await ctx.record({ step: { id: step.id, issuedAt: ctx.deps.now().toISOString(), fromVersion: before.version } });
  try {
    await ctx.talosctl.run(['rollback'], [node], { signal: ctx.signal, endpoints });
  } catch (error) {
    throw new StepFailure(`talosctl rollback of ${node} failed: ${errorText(error)}`);
  }
  return { event: `talosctl rollback issued on ${node}`, detail: `${drained}; ran ${before.version}; rebooting into its previous image` };
}

/** rollback has no --wait: watch the node until it answers on another version and Kubernetes calls it Ready. */
async function waitForNode(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const node = step.node!;
  const from = op.steps.find((s) => s.kind === 'rollback-node')?.fromVersion ?? op.target.fromVersion;
  const endpoints = endpointsAvoiding(cluster, node);
  // The reboot is asynchronous: give the node a moment to go down before watching it come back.
  await deps.clock.sleep(Math.min(deps.timeouts.pollMs * 2, 10_000), ctx.signal);
  let sameVersion = false;
  // The node the rollback cordoned for its drain: schedulable again once it runs its previous image.
  let cordoned = rollbackData((await deps.store.get(op.id)) ?? op).cordoned;
  const rebooting = `rebooting, waiting for ${step.nodeName ?? op.target.nodeName ?? node} to come back on its previous image`;
  ctx.phase?.(rebooting);
  const onPending = (pending: string): void => ctx.phase?.(rebooting, pending);
  const back = await pollUntil(deps.clock, { ...clusterWait(deps, ctx.signal), onPending }, async () => {
    // Bounded, and "not back yet" on a refused or timed-out call: the only control plane is its own endpoint while it reboots.
    const v = await pollTalosVersion(ctx.talosctl, node, { probeMs: deps.timeouts.probeMs, signal: ctx.signal, endpoints });
    if (cordoned !== undefined && v.reachable && v.version !== from) {
      // The API may not answer yet while the node comes back: asked again on the next look.
      const name = cordoned;
      cordoned = await ctx.session.kube.setUnschedulable(name, false, probeSignal(ctx)).then(
        () => undefined,
        () => name,
      );
    }
    const kube = await observeKubeNode(ctx.session.kube, node, cluster.hostLabel, probeSignal(ctx)).catch(() => undefined);
    if (v.reachable && kube?.ready === true && v.version !== from) return { done: true, value: v.version };
    sameVersion = v.reachable && v.version === from;
    return {
      done: false,
      pending: `talosctl: ${v.reachable ? v.version : v.error}; Kubernetes: ${kube === undefined ? 'no answer' : kube.ready ? 'Ready' : 'not Ready'}`,
    };
  });
  if (back.ok) {
    const version = back.value;
    await ctx.record((o) => ({ target: { ...o.target, version } }));
    const nodeName = step.nodeName ?? op.target.nodeName;
    const gate = await walkGate(ctx, cluster, { baseline: { baseline: op.baseline, nodes: [node, ...(nodeName ? [nodeName] : [])] } });
    if (!gate.passed)
      throw new StepFailure(`${node} is back on ${version} and Ready, but the health gate after the rollback failed`, gate.stopReasons);
    return {
      event: 'rollback verified',
      detail: `${node} is back on ${version} and Ready (ran ${from ?? '?'}); health gate passed (${gate.checks.length} checks)${alreadyFailingNote(gate)}`,
    };
  }
  const last = back.pending;
  const seconds = Math.round(deps.timeouts.nodeReadyMs / 1000);
  if (sameVersion) {
    throw new StepFailure(`${node} still runs ${from} ${seconds} s after the rollback: it did not boot its previous image`, [
      `last observation: ${last}`,
    ]);
  }
  throw new StepFailure(`${node} did not come back within ${seconds} s after the rollback`, [
    `last observation: ${last}`,
    `ran ${from ?? '?'} before the rollback`,
    `check its console${step.host ? ` on host ${step.host}` : ''}; the cluster stays locked until an operator cancels`,
  ]);
}

/** What the approval says the rollback will do: drain first when the node is Ready, or reboot it as it is. */
function rollbackWarning(node: string, target: DrainTarget, drainMs: number): string {
  const rollback = `talosctl rollback --nodes ${node} switches the node to its previous Talos image and reboots it`;
  if (target.ready && target.name !== undefined) {
    return (
      `The bot first cordons ${target.name} and evicts its pods through the eviction API, as kubectl drain does (DaemonSet and static pods stay; ` +
      `disruption budgets are respected, for at most ${boundText(drainMs)}); then ${rollback}. Once it is back, the bot uncordons it.`
    );
  }
  const why =
    target.unanswered === undefined ? `${node} is not Ready in Kubernetes` : `the Kubernetes API does not answer (${target.unanswered})`;
  return `${why}, so the node cannot be drained: ${rollback} at once, and whatever still runs there stops without an eviction.`;
}

/** The upgrade that last asked this node to change: what it ran before, and the boot it was asked on. */
async function lastUpgradeOf(
  deps: PreflightDeps,
  op: Operation,
  address: string,
): Promise<{ opId: string; ref: string; step: Step } | undefined> {
  const { parent } = rollbackData(op);
  const candidates = parent !== undefined ? [await deps.store.get(parent.op)] : await deps.store.listForCluster(op.cluster, 20);
  for (const upgrade of candidates) {
    if (upgrade?.kind !== 'talos-upgrade') continue;
    const step = upgrade.steps.find((s) => s.node === address && s.issuedAt !== undefined && s.fromVersion !== undefined);
    if (step !== undefined) return { opId: upgrade.id, ref: operationRef(upgrade.id, await deps.link(upgrade)), step };
  }
  return undefined;
}

/**
 * A rollback boots the node's other image. That is the way back only while the node runs the
 * upgrade's image: a node that already runs what it ran before the upgrade (Talos fell back by
 * itself, or the upgrade never took effect) would boot the failed image instead.
 */
function alreadyBack(
  address: string,
  running: string | undefined,
  bootId: string | undefined,
  upgrade: { opId: string; ref: string; step: Step },
): string | undefined {
  const before = upgrade.step.fromVersion;
  if (running === undefined || running !== before) return undefined;
  if (bootId !== undefined && bootId === upgrade.step.issuedBootId) {
    return `the upgrade of ${address} in ${upgrade.ref} never took effect: the node never rebooted and still runs ${before}, so there is nothing to roll back (a rollback would boot its other image). Cancel ${upgrade.opId} once the cause is understood`;
  }
  return `${address} already runs ${before}, the version it ran before ${upgrade.ref}: Talos fell back to its previous image by itself. A rollback now would boot the image that failed; nothing to roll back`;
}

/** Why the node must answer, in the refusal when it does not. */
const UNREACHABLE =
  'talosctl rollback needs its API. A node whose new image cannot boot falls back to the previous one by itself; a node that stays down needs the node replacement runbook';

const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const { probe, address, node, refusals, notes } = await nodePreflight(deps, { cluster, op, session, signal }, UNREACHABLE);
  const upgrade = await lastUpgradeOf(deps, op, address);
  const back = upgrade === undefined ? undefined : alreadyBack(address, node.running, node.view.bootId, upgrade);
  if (back !== undefined) refusals.push(back);
  // A single control plane has no peers to keep quorum: its rollback, like its upgrade, takes the API down for the reboot.
  if (node.role === 'control plane' && cluster.controlPlanes.length === 1) {
    const seconds = (ms: number): number => Math.round(ms / 1000);
    notes.push(
      `${address} is the only control plane: while it reboots, talosctl has no other endpoint and the Kubernetes API is down. ` +
        `The bot polls the node, each poll bounded by ${seconds(deps.timeouts.probeMs)} s, and counts a refused or timed-out call as not back yet until ${seconds(deps.timeouts.nodeReadyMs)} s have passed.`,
    );
  }
  if (node.role === 'control plane' && cluster.controlPlanes.length > 1) {
    const quorum = quorumWhileRebooting(await observeEtcdMembership(node.talosctl, cluster.controlPlanes, address, probe()), address);
    if (quorum.ok) notes.push(`etcd quorum: ${quorum.explanation}.`);
    else refusals.push(`etcd quorum: ${quorum.explanation}; bring the other control planes back first`);
  }
  // Informational: a rollback is incident response, so a failing gate is shown, never a refusal.
  const gate = await runHealthGate(cluster, { talosctl: node.talosctl, kube: session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal });
  notes.push(
    gate.passed
      ? `Health gate before the rollback: passed (${gate.checks.length} checks).`
      : `Health gate before the rollback failed (shown, not blocking an incident rollback): ${gate.stopReasons.join('; ')}`,
  );
  return {
    refusals,
    notes,
    common: { ...node.common, lockFrom: rollbackData(op).parent?.op },
    target: { nodeName: node.view.name, fromVersion: node.running, talosVersion: node.running },
    steps: nodeSteps(node, [
      ['rollback', 'rollback-node'],
      ['verify', 'rollback-verify'],
    ]),
  };
};

/** `/talos rollback` and a stopped upgrade's Rollback button: an approver's word, talosctl rollback on that one node, then its return and the gate verified. */
export const rollbackPlaybook: Playbook = {
  command: {
    name: 'node-rollback',
    words: ['rollback'],
    argument: { kind: 'node' },
    help: 'roll one node back (operators, approval)',
    group: 'change',
    example: '/talos rollback talos-prd-cp-2',
    form: { title: 'Roll back a node', submit: 'Plan the rollback' },
    request: {
      what: 'a node rollback',
      refuseAtOnce: { lock: true },
      queued: (op, cluster) =>
        `Preflight for a node rollback of ${op.target.node ?? '?'} on *${cluster.name}* is running (\`${op.id}\`); the plan and the approval request, or the refusal, appear in this channel.`,
    },
  },
  startedBy: 'operators',
  // Incident response never waits for a maintenance window.
  heldByWindows: false,
  texts: nodeRollbackTexts,
  cancelRefusal: rollbackCancelRefusal,
  data: NodeRollbackData,
  // Its health gate is informational (in its own preflight): a rollback is incident response.
  checks: { talosctlClient: true, lockFree: { wait: 'one operation (and so one rollback) at a time: wait for it' } },
  start: 'run',
  lock: 'cluster',
  // The disagreements about this very node are what the operation settles.
  resolves: aboutOwnNode,
  versionRules: 'node',
  preflight,
  needsApproval: (step) => step.kind === 'rollback-node',
  async approvalMessage(ctx, op, approval, step) {
    const etcd = await etcdFacts(ctx, step.node!);
    const warning = rollbackWarning(step.node ?? '?', await drainTarget(ctx, step.node!), ctx.deps.timeouts.stepMs);
    return nodeApprovalMessage(op, approval, step, { summary: etcd.summary, evidence: etcd.evidence, warning }, nodeRollbackTexts);
  },
  runStep: (ctx, op, step) => (step.kind === 'rollback-node' ? rollback(ctx, op, step) : waitForNode(ctx, op, step)),
  async complete(ctx, op) {
    const node = op.target.node!;
    const kubeNodes = await ctx.session.kube.listNodes(probeSignal(ctx));
    const others = allNodes(ctx.cluster)
      .filter((a) => a !== node)
      .map((a) => `${a} ${kubeNodeView(findNodeByAddress(kubeNodes, a), ctx.cluster.hostLabel).osVersion ?? 'unknown'}`);
    const version = op.target.version ?? '?';
    return {
      validation: `${node} back on ${version} and Ready (ran ${op.target.fromVersion ?? '?'})`,
      followUp: rollbackFollowUp(op, node, version, others),
    };
  },
  retryFrom: () => undefined,
};
