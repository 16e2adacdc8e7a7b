import { runFinalVerification } from '../../../src/health/final-verification.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { quorumWhileRebooting } from '../../../src/rules/quorum.ts';
import { judgeEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { observeEtcdStatus, observeKubeNode, observeNodeImages, observeTalosVersions } from '../../../src/talos/observe.ts';
import { endpointsAvoiding, hasOtherEndpoint } from '../shared/node-endpoints.ts';
import { schematicOfImage } from './installer-images.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { NodeStepContext } from './node-context.ts';
import { probeSignal } from '../../engine/walk.ts';
import { waitForChecksAfter, waitForLonghorn, waitForNodeBack } from './node-wait.ts';
import { issueUpgrade } from './issue-upgrade.ts';
import { decideResume, describeSeen, type NodeSeen, type ResumeAction } from './resume.ts';
import { checkDrain } from '../shared/drain-check.ts';

export type { NodeStepContext } from './node-context.ts';

/**
 * Before a control plane reboots: etcd healthy, and the bot's own arithmetic that quorum holds
 * without it (on Talos ≥ 1.13 no server-side check refuses an upgrade that loses quorum). After
 * the reboot the checks are polled to their bound instead (`waitForChecksAfter`).
 */
async function requireQuorumBefore(ctx: NodeStepContext): Promise<void> {
  const node = ctx.step.node!;
  const { controlPlanes } = ctx.cluster;
  // One `etcd status`, through the other control planes, for both the gate's verdict and the membership: a fork less per node.
  const status = await observeEtcdStatus(ctx.talosctl, controlPlanes, probeSignal(ctx), endpointsAvoiding(ctx.cluster, node));
  const check = judgeEtcdQuorum(status, controlPlanes);
  if (check.status === 'failed') throw new StepFailure(`etcd quorum check before ${node} failed: ${check.summary}`, check.evidence);
  const membership = await observeEtcdMembership(ctx.talosctl, controlPlanes, node, probeSignal(ctx), status);
  const others = membership.healthy.filter((n) => n !== node).length;
  const quorum = quorumWhileRebooting(membership.memberCount, others, node, !hasOtherEndpoint(ctx.cluster, node));
  if (!quorum.ok) {
    throw new StepFailure(
      `etcd would lose quorum while ${node} reboots, so it was not touched: ${quorum.explanation}`,
      membership.evidence,
      {
        retry: 'nothing was changed by this step; Retry checks etcd again',
        nodeUnchanged: true,
      },
    );
  }
}

export type NodeOutcome = { kind: 'skipped'; detail: string } | { kind: 'done'; detail: string };

/** The schematic of the step's installer image: what a re-installed node must run. */
function expectedSchematic(ctx: NodeStepContext): string | undefined {
  return schematicOfImage(ctx.step.image);
}

/** The schematic the node runs, through the other control planes. */
async function runningSchematic(ctx: NodeStepContext, node: string): Promise<{ schematic: string | undefined }> {
  const seen = (await observeNodeImages(ctx.talosctl, [node], probeSignal(ctx), endpointsAvoiding(ctx.cluster, node))).get(node);
  if (seen?.reachable !== true)
    throw new StepFailure(`${node} does not answer talosctl get extensions, so its schematic cannot be read`, [seen?.error ?? 'no answer']);
  return { schematic: seen.schematic };
}

/** What the node shows now, each read bounded and best effort: a read that fails leaves its fact unknown. */
async function observeNode(ctx: NodeStepContext, node: string, withEtcd: boolean): Promise<NodeSeen> {
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  // Independent reads, at once: talosctl's fork runs while the API answers.
  const [versions, kube] = await Promise.all([
    observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints),
    observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx)).catch(() => undefined),
  ]);
  const version = versions.get(node);
  const seen: NodeSeen =
    version?.reachable === true ? { reachable: true, version: version.version } : { reachable: false, error: version?.error };
  if (kube?.name !== undefined) Object.assign(seen, { bootId: kube.bootId, ready: kube.ready, cordoned: kube.cordoned });
  if (ctx.reinstall === true && seen.reachable) {
    const images = await observeNodeImages(ctx.talosctl, [node], probeSignal(ctx), endpoints).catch(() => undefined);
    const image = images?.get(node);
    if (image?.reachable === true) seen.schematic = image.schematic;
  }
  if (withEtcd) {
    const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probeSignal(ctx)).catch(() => undefined);
    if (membership !== undefined) seen.etcdMember = membership.healthy.includes(node);
  }
  return seen;
}

const DOES: Record<ResumeAction, string> = {
  issue: 'its upgrade runs now, with the checks before it',
  skip: 'it is recorded and skipped',
  checks: 'only the checks after it run again',
  resend: 'the upgrade request is sent again',
  watch: 'the bot watches it until it is back or the bound passes, and sends nothing',
  'fell-back': 'the step stops: an approver decides whether to try the upgrade again',
};

/**
 * Talos booted the previous image on its own (A/B): the new one probably could not boot. Trying
 * again is a person's decision with the evidence in front of them, and there is nothing to roll back.
 */
function fellBack(ctx: NodeStepContext, seen: string, evidence: string[], fromVersion = ctx.step.fromVersion): StepFailure {
  const node = ctx.step.node!;
  return new StepFailure(
    `${node} came back on ${seen}, not ${ctx.target}${ctx.reinstall === true ? ' with the new schematic' : ''}: Talos booted the previous image on its own (an A/B fallback; the new image probably could not boot)`,
    [...evidence, `installer image: ${ctx.step.image ?? '?'}`, `version before the step: ${fromVersion ?? 'unknown'}`],
    {
      explicitRetry: 'Retry the upgrade of this node',
      resume: 'reissue',
      noRollback: true,
      retry: `only an approver's explicit "Retry the upgrade of this node" sends talosctl upgrade to ${node} again, after a look at why the image did not boot (talosctl dmesg, the console); the node runs its previous image, so there is nothing to roll back`,
    },
  );
}

/**
 * The node was not back within the bound: what it shows now decides what a Retry offers. A node
 * cordoned and not rebooted may still be mid-upgrade, so nothing is sent again until a person
 * uncordons it, which shows that the request is no longer in flight.
 */
async function notBack(ctx: NodeStepContext, failure: StepFailure): Promise<StepFailure> {
  const node = ctx.step.node!;
  const seen = await observeNode(ctx, node, false).catch(() => undefined);
  const line = seen === undefined ? `${node}: not observed` : describeSeen(node, ctx.step, seen);
  const stuck = seen?.reachable === true && seen.version === ctx.step.fromVersion && seen.bootId === ctx.step.issuedBootId && seen.cordoned;
  const retry = stuck
    ? `Retry watches ${node} again; it sends the upgrade again only once the node is not cordoned (kubectl uncordon ${ctx.step.nodeName ?? node}), which shows the earlier request is no longer in flight`
    : `Retry looks at ${node} first and watches it until it is back or ${Math.round(ctx.deps.timeouts.nodeReadyMs / 1000)} s pass; it never sends the upgrade again while the node's state is unknown`;
  return new StepFailure(failure.message, [line, ...failure.evidence], { ...failure.options, retry, resume: 'observe' });
}

/**
 * One node of the rolling upgrade, resumed by observation: before anything is sent, the node is
 * looked at (version, boot ID, cordoned, Ready, etcd), and only what is still needed is done. A
 * node already on the target is skipped or only checked; an upgrade whose state is unknown is
 * watched, never requested twice; one that provably never arrived is sent again.
 */
export async function upgradeNode(ctx: NodeStepContext): Promise<NodeOutcome> {
  try {
    return await resumeNode(ctx);
  } catch (error) {
    // Every stop of a node step says what its Retry does: the same observation first, never a blind repeat.
    if (!(error instanceof StepFailure) || error.options.retry !== undefined) throw error;
    const node = ctx.step.node!;
    const retry = `Retry looks at ${node} first and does only what is still needed: the checks if it runs ${ctx.target}, a watch while its state is unknown, and the upgrade request again only if it never reached the node`;
    throw new StepFailure(error.message, error.evidence, { ...error.options, retry });
  }
}

async function resumeNode(ctx: NodeStepContext): Promise<NodeOutcome> {
  const node = ctx.step.node!;
  const isControlPlane = ctx.step.kind === 'upgrade-control-plane';
  const resuming = ctx.step.issuedAt !== undefined;
  const seen = await observeNode(ctx, node, resuming && isControlPlane);
  const decision = decideResume(ctx.step, seen, ctx.target, ctx.reinstall === true ? expectedSchematic(ctx) : undefined);
  if (resuming || ctx.retried === true) {
    await ctx.record(
      `observed ${node} before going on`,
      `${describeSeen(node, ctx.step, seen)}: ${decision.because}, so ${DOES[decision.action]}`,
    );
  }

  let resumed = '';
  let bootIdBefore = ctx.step.issuedBootId;
  switch (decision.action) {
    case 'skip':
      return {
        kind: 'skipped',
        detail:
          ctx.reinstall === true
            ? `already runs ${ctx.target} with schematic ${seen.schematic ?? '?'}; not re-installed`
            : `already on ${ctx.target}; not upgraded again`,
      };
    case 'fell-back':
      throw fellBack(ctx, seen.version ?? '?', [
        describeSeen(node, ctx.step, seen),
        `boot ID at the request: ${ctx.step.issuedBootId ?? '?'}, now: ${seen.bootId ?? '?'}`,
      ]);
    case 'issue': {
      if (!seen.reachable) throw new StepFailure(`${node} does not answer before its upgrade`, [seen.error ?? 'no answer']);
      if (isControlPlane) {
        ctx.phase?.('checking etcd quorum before the reboot');
        await requireQuorumBefore(ctx);
      }
      await waitForLonghorn(ctx, 'before');
      const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
      bootIdBefore = kube.bootId;
      await ctx.progress(await checkDrain(ctx, node));
      await ctx.markIssued(seen.version!, bootIdBefore);
      await issueUpgrade(ctx, seen.version!, false);
      break;
    }
    case 'resend':
      // Sending it again cannot upgrade the node twice: Talos refuses a second upgrade while one runs, and then that one is observed.
      resumed = 'nothing of the request showed on the node (not rebooted, not cordoned), so it was sent again; ';
      await issueUpgrade(ctx, ctx.step.fromVersion!, true);
      break;
    case 'checks':
      resumed = `it had already rebooted into ${ctx.target}, so only the checks after it ran again; `;
      break;
    case 'watch':
      resumed = 'its upgrade was already requested, so it was observed, not requested again; ';
      await ctx.progress(`upgrade was already requested; observing the node (${decision.because})`);
      break;
  }

  const version = await waitForNodeBack(ctx, node, bootIdBefore).catch(async (error: unknown) => {
    throw error instanceof StepFailure ? await notBack(ctx, error) : error;
  });
  if (version !== ctx.target) {
    throw fellBack(ctx, version, [`expected ${ctx.target}, node reports ${version}`], ctx.step.fromVersion ?? seen.version);
  }
  let reinstalled = '';
  if (ctx.reinstall === true) {
    // Same version either way: only the schematic tells the new image from the previous one.
    const image = await runningSchematic(ctx, node);
    const expected = expectedSchematic(ctx);
    if (image.schematic !== expected) {
      throw fellBack(ctx, `${version} with schematic ${image.schematic ?? 'none'}`, [
        `expected schematic ${expected ?? '?'} (${ctx.step.image ?? '?'}), node runs ${image.schematic ?? 'none'}`,
      ]);
    }
    reinstalled = ` with schematic ${expected}`;
  }
  const quorum = await waitForChecksAfter(ctx, node, isControlPlane);
  ctx.phase?.(`health gate after ${nodeLabel(ctx)}`);
  const gate = await runFinalVerification(
    ctx.cluster,
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal },
    {
      settleMs: ctx.deps.timeouts.settleMs,
      pollMs: ctx.deps.timeouts.pollMs,
      clock: ctx.deps.clock,
      ...(ctx.baseline === undefined
        ? {}
        : { baseline: { baseline: ctx.baseline, nodes: [node, ...(ctx.step.nodeName ? [ctx.step.nodeName] : [])] } }),
    },
  );
  ctx.gateDone?.(gate);
  if (!gate.passed) throw new StepFailure(`the health gate after ${node} failed`, gate.stopReasons);
  const degradedBefore = await waitForLonghorn(ctx, 'after');
  const longhorn =
    degradedBefore.length === 0
      ? ''
      : `; Longhorn volumes degraded before the operation and not made worse by it (not waited for): ${degradedBefore.join('; ')}`;
  return {
    kind: 'done',
    detail: `${resumed}now ${version}${reinstalled} and Ready${quorum ? `; etcd: ${quorum}` : ''}; health gate passed with Cilium, Flux and pods ready${alreadyFailingNote(gate)}${longhorn}`,
  };
}

/** The node as the board names it: its Kubernetes name where known. */
function nodeLabel(ctx: Pick<NodeStepContext, 'step'>): string {
  return ctx.step.nodeName ?? ctx.step.node ?? ctx.step.id;
}
