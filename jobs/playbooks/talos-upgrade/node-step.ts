import { runFinalVerification } from '../../../src/health/final-verification.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { quorumWhileRebooting } from '../../../src/rules/quorum.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { observeKubeNode, observeNodeImages, observeTalosVersions } from '../../../src/talos/observe.ts';
import { endpointsAvoiding, hasOtherEndpoint } from '../shared/node-endpoints.ts';
import { schematicOfImage } from './installer-images.ts';
import { StepFailure } from '../../engine/job-context.ts';
import { probeSignal, type NodeStepContext } from './node-context.ts';
import { waitForLonghorn, waitForNodeBack } from './node-wait.ts';
import { issueUpgrade, requestNeverArrived } from './issue-upgrade.ts';
import { checkDrain } from '../shared/drain-check.ts';

export type { NodeStepContext } from './node-context.ts';

async function requireQuorum(ctx: NodeStepContext, when: string): Promise<string> {
  const node = ctx.step.node!;
  const check = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, probeSignal(ctx), endpointsAvoiding(ctx.cluster, node));
  if (check.status === 'failed') throw new StepFailure(`etcd quorum check ${when} ${node} failed: ${check.summary}`, check.evidence);
  if (when === 'before') {
    // The bot's own arithmetic: on Talos ≥ 1.13 no server-side check refuses an upgrade that loses quorum.
    const membership = await observeEtcdMembership(ctx.talosctl, ctx.cluster.controlPlanes, node, probeSignal(ctx));
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
    return `${check.summary}; ${quorum.explanation}`;
  }
  return check.summary;
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

/**
 * One node of the rolling upgrade, idempotent by observation: a node already on the
 * target is recorded and skipped; a node whose upgrade was already requested (the bot
 * crashed mid-step) is observed until it is back, never asked twice.
 */
export async function upgradeNode(ctx: NodeStepContext): Promise<NodeOutcome> {
  const node = ctx.step.node!;
  const isControlPlane = ctx.step.kind === 'upgrade-control-plane';
  const endpoints = endpointsAvoiding(ctx.cluster, node);

  let resumed = '';
  let bootIdBefore = ctx.step.issuedBootId;
  if (ctx.step.issuedAt === undefined) {
    const before = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
    if (before?.reachable === true && before.version === ctx.target) {
      if (ctx.reinstall !== true) return { kind: 'skipped', detail: `already on ${ctx.target}; not upgraded again` };
      const image = await runningSchematic(ctx, node);
      if (image.schematic === expectedSchematic(ctx))
        return { kind: 'skipped', detail: `already runs ${ctx.target} with schematic ${image.schematic}; not re-installed` };
    }
    if (before?.reachable !== true) throw new StepFailure(`${node} does not answer before its upgrade`, [before?.error ?? 'no answer']);
    if (isControlPlane) await requireQuorum(ctx, 'before');
    await waitForLonghorn(ctx, `before ${node}`);
    const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
    bootIdBefore = kube.bootId;
    await ctx.progress(await checkDrain(ctx, node));
    await ctx.markIssued(before.version, bootIdBefore);
    await issueUpgrade(ctx, before.version, false);
  } else if (await requestNeverArrived(ctx)) {
    // Sending it again cannot upgrade the node twice: Talos refuses a second upgrade while one runs, and then that one is observed.
    resumed = 'the request had not reached the node before a restart (it had not rebooted since), so it was sent again; ';
    await issueUpgrade(ctx, ctx.step.fromVersion!, true);
  } else {
    resumed = 'upgrade was already requested before a restart, so it was observed, not issued again; ';
    await ctx.progress('upgrade was already requested before a restart; observing the node');
  }

  const version = await waitForNodeBack(ctx, node, bootIdBefore);
  if (version !== ctx.target) {
    throw new StepFailure(
      `${node} came back on ${version}, not ${ctx.target}: Talos booted the previous image (a silent A/B revert; the new image probably could not boot)`,
      [`expected ${ctx.target}, node reports ${version}`, `from version before the step: ${ctx.step.fromVersion ?? 'unknown'}`],
    );
  }
  let reinstalled = '';
  if (ctx.reinstall === true) {
    // Same version either way: only the schematic tells the new image from the previous one.
    const image = await runningSchematic(ctx, node);
    const expected = expectedSchematic(ctx);
    if (image.schematic !== expected) {
      throw new StepFailure(
        `${node} came back on ${version} without the new image's schematic: Talos booted the previous image (a silent A/B revert)`,
        [`expected schematic ${expected ?? '?'} (${ctx.step.image ?? '?'}), node runs ${image.schematic ?? 'none'}`],
      );
    }
    reinstalled = ` with schematic ${expected}`;
  }
  const quorum = isControlPlane ? await requireQuorum(ctx, 'after') : undefined;
  const gate = await runFinalVerification(
    ctx.cluster,
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal },
    { settleMs: ctx.deps.timeouts.settleMs, pollMs: ctx.deps.timeouts.pollMs, clock: ctx.deps.clock },
  );
  if (!gate.passed) throw new StepFailure(`the health gate after ${node} failed`, gate.stopReasons);
  await waitForLonghorn(ctx, `after ${node}`);
  return {
    kind: 'done',
    detail: `${resumed}now ${version}${reinstalled} and Ready${quorum ? `; etcd: ${quorum}` : ''}; health gate passed with Cilium, Flux and pods ready`,
  };
}
