import type { ClusterConfig } from '../../../src/config/inventory.ts';
import type { ClusterSession } from '../../../src/cluster/cluster-session.ts';
import { runFinalVerification } from '../../../src/health/final-verification.ts';
import { unhealthyVolumes } from '../../../src/health/rules/longhorn.ts';
import type { Logger } from '../../../src/log/logger.ts';
import type { Step } from '../../../src/ops/operation.ts';
import {
  isFailureLine,
  parseDrainFailure,
  parseProgressLine,
  upgradeMilestone,
  type DrainFailure,
} from '../../../src/talos/parse-upgrade-progress.ts';
import { observeEtcdMembership } from '../../../src/talos/etcd-membership.ts';
import { quorumWhileRebooting } from '../../../src/rules/quorum.ts';
import { upgradesThroughLifecycleService } from '../../../src/talos/upgrade-flow.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { observeKubeNode, observeNodeImages, observeTalosVersions, pollTalosVersion } from '../../../src/talos/observe.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';
import type { ExecError } from '../../../src/exec/process-runner.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding, hasOtherEndpoint } from '../shared/node-endpoints.ts';
import { schematicOfImage } from './installer-images.ts';
import { StepFailure, type OpsJobDeps } from '../../engine/job-context.ts';

export interface NodeStepContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  step: Step;
  target: string;
  /**
   * The target is the version the node runs: a re-install with the step's image, so a node on
   * that version is skipped only when it also runs the image's schematic. Default false.
   */
  reinstall?: boolean;
  log: Logger;
  signal?: AbortSignal;
  /** Persists that the upgrade was requested, before talosctl is asked: a resumed job then observes instead of asking again. */
  markIssued: (fromVersion: string, bootId: string | undefined) => Promise<void>;
  progress: (detail: string) => Promise<void>;
}

function probeSignal(ctx: NodeStepContext): AbortSignal {
  const timeout = AbortSignal.timeout(ctx.deps.timeouts.probeMs);
  return ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
}

/**
 * Waits until the node has rebooted (its boot ID is no longer `bootIdBefore`, when known), answers
 * talosctl and Kubernetes calls it Ready, then returns the version it reports. Waiting for the reboot
 * keeps a node that is still staging its upgrade from being read as one that came back unchanged.
 */
async function waitForNodeBack(ctx: NodeStepContext, node: string, bootIdBefore: string | undefined): Promise<string> {
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  const back = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    // Bounded, and "not back yet" on a refused or timed-out call: through its only endpoint a rebooting node may not answer at all.
    const version = await pollTalosVersion(ctx.talosctl, node, { probeMs: ctx.deps.timeouts.probeMs, signal: ctx.signal, endpoints });
    const seen = `talosctl: ${version.reachable ? version.version : version.error}`;
    try {
      const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
      const rebooted = bootIdBefore === undefined || kube.bootId !== bootIdBefore;
      if (rebooted && version.reachable && kube.ready && kube.osVersion === version.version) return { done: true, value: version.version };
      return {
        done: false,
        pending: `${seen}; Kubernetes: ${kube.ready ? 'Ready' : 'not Ready'}${kube.osVersion ? `, ${kube.osVersion}` : ''}${rebooted ? '' : '; not rebooted since the upgrade was requested'}`,
      };
    } catch (error) {
      // The only control plane's reboot takes the Kubernetes API down with it.
      if (ctx.signal?.aborted === true) throw error;
      return { done: false, pending: `${seen}; Kubernetes: no answer (${(error as Error).message})` };
    }
  });
  if (!back.ok) {
    throw new StepFailure(`${node} was not back and Ready within ${Math.round(ctx.deps.timeouts.nodeReadyMs / 1000)} s`, [
      `last observation: ${back.pending}`,
    ]);
  }
  return back.value;
}

/**
 * Waits until every Longhorn volume is healthy, so draining a node never takes a second replica
 * of a volume away. A detached volume (robustness `unknown`) is not degraded. Skipped where the
 * cluster has no Longhorn (its CRDs do not answer) or the inventory turns the check off.
 */
async function waitForLonghorn(ctx: NodeStepContext, when: string): Promise<void> {
  if (ctx.cluster.longhorn === false) return;
  let waiting: string[] = [];
  const healthy = await pollUntil(
    ctx.deps.clock,
    { ...clusterWait(ctx.deps, ctx.signal), onPending: (pending) => ctx.progress(pending) },
    async () => {
      const volumes = await ctx.session.kube.listLonghornVolumes(probeSignal(ctx));
      waiting = volumes === undefined ? [] : unhealthyVolumes(volumes);
      return waiting.length === 0
        ? { done: true, value: undefined }
        : { done: false, pending: `waiting for ${waiting.length} Longhorn volume(s) to be healthy ${when}` };
    },
  );
  if (!healthy.ok)
    throw new StepFailure(`Longhorn volumes are still not healthy ${when}; draining a node now could take a second replica`, waiting);
}

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
 * Talos refuses a second upgrade while one runs on the node. Legacy: its sequence or the cluster's
 * upgrade mutex is taken (v1alpha1_server.go). ≥ 1.13: the LifecycleService's per-node lock, gRPC
 * FailedPrecondition (internal/app/lifecycle/lifecycle.go v1.13.9).
 */
const LEGACY_RUNNING = /failed to run sequence: locked|failed to acquire upgrade mutex/;
const INSTALLER_RUNNING = /another installation\/upgrade is already in progress/;

/** What the lines of one `talosctl upgrade` run showed. */
interface RunSeen {
  installed: boolean;
  cordoned: boolean;
  drain?: DrainFailure;
}

/** The stop after a drain that failed: the node's state and the safe next actions, for 3 a.m. */
function drainStop(ctx: NodeStepContext, fromVersion: string, seen: RunSeen, lines: string[]): StepFailure {
  const node = ctx.step.node!;
  const drain = seen.drain!;
  const name = drain.node || ctx.step.nodeName || node;
  const pods = drain.pods.map((p) => `${p.namespace}/${p.name}`);
  const blocking = pods.length > 0 ? `${pods.join(', ')} could not be evicted` : 'the drain failed';
  const within = drain.timeout !== undefined ? ` within ${drain.timeout}` : '';
  const state = `${node} (${name}) is cordoned, has ${ctx.target} installed but not booted (its next reboot, planned or not, boots it), and still runs ${fromVersion}`;
  const look =
    pods.length > 0
      ? `why ${pods.join(', ')} cannot be evicted (its PodDisruptionBudget, or nowhere else to run)`
      : 'the drain error below';
  return new StepFailure(
    `talosctl could not drain ${name}${within}: ${blocking}. ${state}. Safe next: fix ${look}, then Retry (it installs and drains again); or uncordon it (kubectl uncordon ${name}) and investigate before any reboot`,
    [drain.text, ...lines.slice(-10)],
    {
      retry: `Retry runs talosctl upgrade on ${node} again: the image is installed again, then the drain${ctx.step.kind === 'upgrade-control-plane' ? '; an approver approves it again first' : ''}`,
      nodeUnchanged: true,
    },
  );
}

/**
 * Asks talosctl to upgrade the node and waits for it (`--wait`). With `inFlight`, a refusal
 * because an upgrade already runs there is not a failure: on the legacy path that upgrade is
 * the one to observe; on the ≥ 1.13 path it is an installer whose client is gone (nothing would
 * drain or reboot after it), so the request is sent again once the installer has finished.
 * The only control plane is its own endpoint: a `--wait` through a rebooting node can hang
 * (talos#11830), so its upgrade is only asked for and the step polls it back. On ≥ 1.13,
 * `--drain` (on by default) forces `--wait`, so that node also gets `--drain=false`: the reboot
 * then stops its pods without a drain, as the API it would drain through reboots with it.
 */
async function issueUpgrade(ctx: NodeStepContext, fromVersion: string, inFlight: boolean): Promise<void> {
  const node = ctx.step.node!;
  await ctx.progress(`talosctl upgrade running (${fromVersion} → ${ctx.target}${ctx.reinstall === true ? ', a re-install' : ''})`);
  const waits = hasOtherEndpoint(ctx.cluster, node);
  // The client matches the node, so the node's version decides the path.
  const newFlow = upgradesThroughLifecycleService(fromVersion);
  const wait = waits
    ? ['--wait', '--timeout', `${Math.round(ctx.deps.timeouts.stepMs / 1000)}s`]
    : ['--wait=false', ...(newFlow ? ['--drain=false'] : [])];
  let lastLines: string[] = [];
  // Our own earlier request's installer, whose talosctl died with the bot, is waited for within the step's bound, then asked again.
  const onPending = (): void =>
    ctx.log.info({ node }, 'an installer from the earlier request still runs on the node; asking again once it has finished');
  const sent = await pollUntil(ctx.deps.clock, { ...clusterWait(ctx.deps, ctx.signal, ctx.deps.timeouts.stepMs), onPending }, async () => {
    const lines: string[] = [];
    lastLines = lines;
    const seen: RunSeen = { installed: false, cordoned: false };
    let lastMilestone = '';
    try {
      await ctx.talosctl.run(['upgrade', '--image', ctx.step.image!, ...wait], [node], {
        signal: ctx.signal,
        endpoints: endpointsAvoiding(ctx.cluster, node),
        // Without --wait the ≥ 1.13 flow still pulls and installs before it returns.
        timeoutMs: waits || newFlow ? ctx.deps.timeouts.stepMs + 30_000 : ctx.deps.timeouts.probeMs,
        onStderrLine: (line) => {
          lines.push(line);
          if (lines.length > 40) lines.shift();
          const progress = parseProgressLine(line);
          ctx.log.debug({ line: progress?.message ?? line }, 'talosctl upgrade progress');
          if (progress?.message === 'upgrade completed') seen.installed = true;
          if (progress?.message === 'node cordoned') seen.cordoned = true;
          seen.drain = parseDrainFailure(line) ?? seen.drain;
          if (isFailureLine(line)) ctx.log.warn({ line }, 'talosctl upgrade reported a failure');
          const milestone = upgradeMilestone(line);
          if (milestone !== undefined && milestone !== lastMilestone) {
            lastMilestone = milestone;
            // Best effort: the step's progress for /talos status; a failed write never fails the upgrade.
            ctx
              .progress(`talosctl upgrade ${fromVersion} → ${ctx.target}: ${milestone}`)
              .catch((error: unknown) => ctx.log.warn({ err: (error as Error).message }, 'progress not saved'));
          }
        },
      });
      return { done: true, value: undefined };
    } catch (error) {
      const exec = error as ExecError;
      const said = [exec.message, ...lines];
      if (seen.drain !== undefined && seen.installed) throw drainStop(ctx, fromVersion, seen, lines);
      if (inFlight && said.some((l) => LEGACY_RUNNING.test(l))) {
        ctx.log.info({ node }, 'an upgrade already runs on the node; observing it');
        return { done: true, value: undefined };
      }
      if (said.some((l) => INSTALLER_RUNNING.test(l))) {
        if (inFlight) return { done: false, pending: 'an installer from the earlier request still runs' };
        throw anotherUpgradeRuns(ctx, lines);
      }
      throw new StepFailure(`talosctl upgrade of ${node} failed: ${exec.message}`, lines.slice(-15));
    }
  });
  if (!sent.ok) throw anotherUpgradeRuns(ctx, lastLines);
}

/** Talos refused the upgrade because an installer already runs on the node, one the bot cannot call its own. */
function anotherUpgradeRuns(ctx: NodeStepContext, lines: string[]): StepFailure {
  const node = ctx.step.node!;
  return new StepFailure(
    `another installation or upgrade is already in progress on ${node} (Talos refused a second one), so the bot did not touch it: someone else's talosctl upgrade runs there`,
    lines.slice(-10),
    {
      retry: `Retry looks at ${node} first: once that upgrade has finished, a node already on ${ctx.target} is recorded and skipped`,
      nodeUnchanged: true,
    },
  );
}

/**
 * After a restart mid-step: whether the recorded request provably never reached the node (the
 * bot died between recording it and talosctl sending it). The node then still answers on its
 * old version and has not rebooted since: its boot ID is the one recorded with the request.
 */
async function requestNeverArrived(ctx: NodeStepContext): Promise<boolean> {
  const { issuedBootId, fromVersion, node } = ctx.step;
  if (issuedBootId === undefined || fromVersion === undefined || node === undefined) return false;
  const version = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpointsAvoiding(ctx.cluster, node))).get(node);
  if (version?.reachable !== true || version.version !== fromVersion) return false;
  const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx)).catch(() => undefined);
  return kube?.bootId === issuedBootId;
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
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal, drainNodes: [node] },
    { settleMs: ctx.deps.timeouts.settleMs, pollMs: ctx.deps.timeouts.pollMs, clock: ctx.deps.clock },
  );
  if (!gate.passed) throw new StepFailure(`the health gate after ${node} failed`, gate.stopReasons);
  await waitForLonghorn(ctx, `after ${node}`);
  return {
    kind: 'done',
    detail: `${resumed}now ${version}${reinstalled} and Ready${quorum ? `; etcd: ${quorum}` : ''}; health gate passed with Cilium, Flux and pods ready`,
  };
}
