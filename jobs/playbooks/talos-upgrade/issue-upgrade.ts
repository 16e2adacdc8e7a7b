import {
  isFailureLine,
  parseDrainFailure,
  parseProgressLine,
  upgradeMilestone,
  type DrainFailure,
} from '../../../src/talos/parse-upgrade-progress.ts';
import { upgradesThroughLifecycleService } from '../../../src/talos/upgrade-flow.ts';
import type { ExecError } from '../../../src/exec/process-runner.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { endpointsAvoiding, hasOtherEndpoint } from '../shared/node-endpoints.ts';
import { StepFailure } from '../../engine/job-context.ts';

import { type NodeStepContext } from './node-context.ts';

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
      resume: 'reissue',
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
export async function issueUpgrade(ctx: NodeStepContext, fromVersion: string, inFlight: boolean): Promise<void> {
  const node = ctx.step.node!;
  await ctx.progress(`talosctl upgrade running (${fromVersion} → ${ctx.target}${ctx.reinstall === true ? ', a re-install' : ''})`);
  const name = ctx.step.nodeName ?? node;
  ctx.phase?.(`installing ${ctx.target} on ${name}`);
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
    // Derived again right before each request: the image in the store is what was planned, not what the rules say now.
    await requireDerivedImage(ctx);
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
            ctx.phase?.(upgradePhase(milestone, name, ctx.target), milestone);
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

/**
 * Refuses to send when the step's stored image is not the one the rules derive now: nothing is
 * sent, so the node is as it was, and a Retry starts the node afresh (and checks again).
 */
async function requireDerivedImage(ctx: NodeStepContext): Promise<void> {
  const problems = await ctx.imageProblems();
  if (problems.length === 0) return;
  const node = ctx.step.node!;
  throw new StepFailure(
    `the installer image for ${node} was derived again before talosctl upgrade was sent, and it is not the one the bot stored; nothing was sent to ${node}`,
    problems,
    {
      retry: `Retry derives the image again before anything is sent to ${node}; if the stored image was changed, cancel and ask for the upgrade again, so that it is planned afresh`,
      nodeUnchanged: true,
      resume: 'reissue',
    },
  );
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

/** What talosctl's newest milestone means for the board: installing, draining, or rebooting the node. */
function upgradePhase(milestone: string, name: string, target: string): string {
  if (/cordon|drain|evict|deleting pod/.test(milestone)) return `draining ${name}`;
  if (/rebooting|rebooted|waiting for node to become Ready/.test(milestone)) return `rebooting ${name}`;
  return `installing ${target} on ${name}`;
}
