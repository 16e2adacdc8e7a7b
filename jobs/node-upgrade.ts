import type { ClusterConfig } from '../src/config/inventory.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import { runFinalVerification } from '../src/health/final-verification.ts';
import { unhealthyVolumes } from '../src/health/rules/longhorn.ts';
import type { Logger } from '../src/log/logger.ts';
import type { Step } from '../src/ops/operation.ts';
import { isFailureLine, parseProgressLine } from '../src/talos/parse-upgrade-progress.ts';
import { checkEtcdQuorum, observeKubeNode, observeTalosVersions } from '../src/talos/observe.ts';
import type { Talosctl } from '../src/talos/talosctl.ts';
import type { ExecError } from '../src/exec/process-runner.ts';
import { sleep, StepFailure, type OpsJobDeps } from './job-context.ts';

export interface NodeStepContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  step: Step;
  target: string;
  log: Logger;
  signal?: AbortSignal;
  /** Persists that the upgrade was requested, before talosctl is asked: a resumed job then observes instead of asking again. */
  markIssued: (fromVersion: string, bootId: string | undefined) => Promise<void>;
  progress: (detail: string) => Promise<void>;
}

/**
 * Endpoints for a call that concerns `node`: the other control planes, so the
 * request never travels through the node that is about to reboot (upgrades are known
 * to hang otherwise). A single-control-plane cluster has no other.
 */
export function endpointsAvoiding(cluster: ClusterConfig, node: string): string[] {
  const others = cluster.controlPlanes.filter((cp) => cp !== node);
  return others.length > 0 ? others : cluster.controlPlanes;
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
  const deadline = Date.now() + ctx.deps.timeouts.nodeReadyMs;
  const endpoints = endpointsAvoiding(ctx.cluster, node);
  let last = 'no observation yet';
  for (;;) {
    try {
      const version = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx), endpoints)).get(node);
      const kube = await observeKubeNode(ctx.session.kube, node, ctx.cluster.hostLabel, probeSignal(ctx));
      const rebooted = bootIdBefore === undefined || kube.bootId !== bootIdBefore;
      if (rebooted && version?.reachable === true && kube.ready && kube.osVersion === version.version) return version.version;
      last = `talosctl: ${version?.reachable === true ? version.version : (version?.error ?? 'no answer')}; Kubernetes: ${kube.ready ? 'Ready' : 'not Ready'}${kube.osVersion ? `, ${kube.osVersion}` : ''}${rebooted ? '' : '; not rebooted since the upgrade was requested'}`;
    } catch (error) {
      last = (error as Error).message;
    }
    if (Date.now() >= deadline) {
      throw new StepFailure(`${node} was not back and Ready within ${Math.round(ctx.deps.timeouts.nodeReadyMs / 1000)} s`, [`last observation: ${last}`]);
    }
    await sleep(ctx.deps.timeouts.pollMs, ctx.signal);
  }
}

/**
 * Waits until every Longhorn volume is healthy, so draining a node never takes a second replica
 * of a volume away. A detached volume (robustness `unknown`) is not degraded. Skipped where the
 * cluster has no Longhorn (its CRDs do not answer) or the inventory turns the check off.
 */
async function waitForLonghorn(ctx: NodeStepContext, when: string): Promise<void> {
  if (ctx.cluster.longhorn === false) return;
  const deadline = Date.now() + ctx.deps.timeouts.nodeReadyMs;
  for (;;) {
    const volumes = await ctx.session.kube.listLonghornVolumes(probeSignal(ctx));
    if (volumes === undefined) return;
    const waiting = unhealthyVolumes(volumes);
    if (waiting.length === 0) return;
    if (Date.now() >= deadline) throw new StepFailure(`Longhorn volumes are still not healthy ${when}; draining a node now could take a second replica`, waiting);
    await ctx.progress(`waiting for ${waiting.length} Longhorn volume(s) to be healthy ${when}`);
    await sleep(ctx.deps.timeouts.pollMs, ctx.signal);
  }
}

async function requireQuorum(ctx: NodeStepContext, when: string): Promise<string> {
  const node = ctx.step.node!;
  const check = await checkEtcdQuorum(ctx.talosctl, ctx.cluster.controlPlanes, probeSignal(ctx), endpointsAvoiding(ctx.cluster, node));
  if (check.status === 'failed') throw new StepFailure(`etcd quorum check ${when} ${node} failed: ${check.summary}`, check.evidence);
  return check.summary;
}

export type NodeOutcome = { kind: 'skipped'; detail: string } | { kind: 'done'; detail: string };

/** Talos refuses a second upgrade while one runs on the node (its sequence or the cluster's upgrade mutex is taken). */
const ALREADY_RUNNING = /failed to run sequence: locked|failed to acquire upgrade mutex/;

/**
 * Asks talosctl to upgrade the node and waits for it (`--wait`). With `inFlight`, a refusal
 * because an upgrade already runs there is not a failure: that upgrade is the one to observe.
 */
async function issueUpgrade(ctx: NodeStepContext, fromVersion: string, inFlight: boolean): Promise<void> {
  const node = ctx.step.node!;
  await ctx.progress(`talosctl upgrade running (${fromVersion} → ${ctx.target})`);
  const lines: string[] = [];
  try {
    await ctx.talosctl.run(['upgrade', '--image', ctx.step.image!, '--wait', '--timeout', `${Math.round(ctx.deps.timeouts.stepMs / 1000)}s`], [node], {
      signal: ctx.signal,
      endpoints: endpointsAvoiding(ctx.cluster, node),
      timeoutMs: ctx.deps.timeouts.stepMs + 30_000,
      onStderrLine: (line) => {
        lines.push(line);
        if (lines.length > 40) lines.shift();
        const progress = parseProgressLine(line);
        ctx.log.debug({ line: progress?.message ?? line }, 'talosctl upgrade progress');
        if (isFailureLine(line)) ctx.log.warn({ line }, 'talosctl upgrade reported a failure');
      },
    });
  } catch (error) {
    const exec = error as ExecError;
    if (inFlight && [exec.message, ...lines].some((l) => ALREADY_RUNNING.test(l))) {
      ctx.log.info({ node }, 'an upgrade already runs on the node; observing it');
      return;
    }
    throw new StepFailure(`talosctl upgrade of ${node} failed: ${exec.message}`, lines.slice(-15));
  }
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
      return { kind: 'skipped', detail: `already on ${ctx.target}; not upgraded again` };
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
  const quorum = isControlPlane ? await requireQuorum(ctx, 'after') : undefined;
  const gate = await runFinalVerification(
    ctx.cluster,
    { talosctl: ctx.talosctl, kube: ctx.session.kube, probeTimeoutMs: ctx.deps.timeouts.probeMs, signal: ctx.signal, drainNodes: [node] },
    { settleMs: ctx.deps.timeouts.settleMs, pollMs: ctx.deps.timeouts.pollMs },
  );
  if (!gate.passed) throw new StepFailure(`the health gate after ${node} failed`, gate.stopReasons);
  await waitForLonghorn(ctx, `after ${node}`);
  return { kind: 'done', detail: `${resumed}now ${version} and Ready${quorum ? `; etcd: ${quorum}` : ''}; health gate passed with Cilium, Flux and pods ready` };
}
