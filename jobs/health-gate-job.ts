import type { Job } from 'bullmq';
import type { ClusterAccess } from '../src/cluster/cluster-session.ts';
import { matchingTalosctl } from '../src/cluster/matching-talosctl.ts';
import type { ChatPort } from '../src/port/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { gateErrorMessage, gateEvidenceFile, gateReplies, gateRunningMessage, gateVerdictMessage } from '../src/chat/health-report.ts';
import { joinedGateMessage } from '../src/chat/report-pointer.ts';
import type { ClusterConfig, Inventory } from '../src/config/inventory.ts';
import { runHealthGate, type GateReport } from '../src/health/health-gate.ts';
import { declaredInState } from '../src/tofu/declared-versions.ts';
import type { Logger } from '../src/log/logger.ts';
import type { GateOrigin } from '../src/ops/cluster-signals.ts';
import { SCHEDULED_GATE, type RunningGate, type RunningGates } from '../src/ops/running-gate.ts';
import type { HealthJobData } from '../src/queue/job-schemas.ts';
import { pollUntil, type Clock } from '../src/time/clock.ts';
import { pointRequesterToReport, reportTarget } from './report-pointer.ts';

export interface HealthGateJobDeps {
  inventory: Inventory;
  access: ClusterAccess;
  chat: ChatPort;
  logger: Logger;
  probeTimeoutMs: number;
  /** Called with each finished gate and who asked for it, for metrics and `/talos status`. */
  onReport?: (report: GateReport, origin: GateOrigin) => void;
  /** Called when the gate could not run at all (credentials, talosctl client), for metrics. */
  onGateError?: (cluster: string) => void;
  /** The gate running on each cluster, which a second request joins. */
  runningGates: RunningGates;
  clock: Clock;
}

/** How often a request polls for a scheduled gate of its cluster to end, in ms. */
const SCHEDULED_POLL_MS = 200;

/** The standard health gate on `cluster`: credentials, the matching talosctl, every probe at once. */
export function standardGate(access: ClusterAccess, probeTimeoutMs: number) {
  return (cluster: ClusterConfig, signal?: AbortSignal): Promise<GateReport> =>
    access.withSession(cluster, signal, async (session) =>
      // The session's cluster: every node the job observed, which the drift check compares too.
      runHealthGate(session.cluster, {
        talosctl: await matchingTalosctl(session, probeTimeoutMs, signal),
        kube: session.kube,
        estate: session.estate,
        probeTimeoutMs,
        signal,
        declared: (probe) => declaredInState(session.outputs, probe),
      }),
    );
}

/** How long a request that joins a running gate waits for that gate's message, to link to it: it is posted as the gate starts. */
const JOIN_WAIT_MS = 3000;

/**
 * `/talos health`: one gate per cluster at a time. A request while the cluster's gate runs joins
 * it: no second gate, and the requester is told privately where the running one reports.
 */
export function createHealthGateJob(deps: HealthGateJobDeps) {
  const runGate = gateJob(deps);
  return async (job: Job<HealthJobData>, signal?: AbortSignal): Promise<{ passed: boolean } | { joined: string }> => {
    const data = job.data;
    const gate = { job: String(job.id), requestedBy: data.requestedBy };
    let claim = await deps.runningGates.claim(data.cluster, gate);
    // A scheduled gate reports only a changed verdict, so joining it would leave the requester without a report:
    // the request waits for it to end (a gate is bounded by its probes), then runs its own. Never two at once.
    await pollUntil(
      deps.clock,
      { timeoutMs: 3 * deps.probeTimeoutMs + 60_000, intervalMs: SCHEDULED_POLL_MS, ...(signal ? { signal } : {}) },
      async (attempt) => {
        if (attempt > 1) claim = await deps.runningGates.claim(data.cluster, gate);
        return !claim.ok && claim.running.requestedBy === SCHEDULED_GATE
          ? { done: false, pending: claim.running.job }
          : { done: true, value: undefined };
      },
    );
    if (!claim.ok) {
      await joinRunningGate(deps, data, claim.running);
      return { joined: claim.running.job };
    }
    try {
      return await runGate(job, signal);
    } finally {
      await deps.runningGates
        .release(data.cluster, gate.job)
        .catch((error: unknown) =>
          deps.logger.warn({ op: job.id, err: errorText(error) }, 'running gate not cleared; it expires by itself'),
        );
    }
  };
}

/** Tells a second requester where the running gate reports, with a link once its message exists. */
async function joinRunningGate(deps: HealthGateJobDeps, data: HealthJobData, running: RunningGate): Promise<void> {
  const cluster = deps.inventory.clusters.find((c) => c.name === data.cluster);
  if (!cluster) throw new Error(`cluster ${data.cluster} is no longer in the inventory`);
  let known = running;
  await pollUntil(deps.clock, { timeoutMs: JOIN_WAIT_MS, intervalMs: 100 }, async (attempt) => {
    // Ended meanwhile: what was last seen of it still says where it reported.
    if (attempt > 1) known = (await deps.runningGates.get(cluster.name)) ?? known;
    return known.rootTs === undefined ? { done: false, pending: 'the gate has no message yet' } : { done: true, value: undefined };
  });
  let link = known.link;
  if (link === undefined && known.rootTs !== undefined) {
    link = await deps.chat.permalink(cluster.channel, known.rootTs).catch(() => undefined);
    // Kept with the gate: the next request that joins it costs Slack nothing.
    if (link !== undefined) await deps.runningGates.note(cluster.name, known.job, { link });
  }
  try {
    await deps.chat.ephemeral(
      data.askedIn ?? cluster.channel,
      data.requestedBy,
      joinedGateMessage(cluster.name, cluster.channel, { requestedBy: known.requestedBy, link }),
    );
  } catch (error) {
    deps.logger.warn({ cluster: cluster.name, err: errorText(error) }, 'requester not told about the running gate');
  }
  deps.logger.info({ cluster: cluster.name, joined: known.job }, 'health gate request joined the running gate');
}

/** One gate: post a root message, run the gate, edit in the verdict, thread the passing checks in one reply and each other check in its own, attach the evidence. */
function gateJob(deps: HealthGateJobDeps) {
  return async (job: Job<HealthJobData>, signal?: AbortSignal): Promise<{ passed: boolean }> => {
    const { cluster, log, data } = reportTarget(deps, job.id, job.data);

    let rootTs = data.rootTs;
    if (rootTs === undefined) {
      rootTs = (await deps.chat.post(data.channel, gateRunningMessage(data), { key: `${job.id}-root`, maybeSent: job.attemptsStarted > 1 }))
        .ts;
      await job.updateData({ ...data, rootTs });
      await deps.runningGates.note(cluster.name, String(job.id), { rootTs });
      await pointRequesterToReport(deps.chat, log, data, 'health gate', rootTs);
    }
    log.info({ rootTs }, 'health gate started');
    let report: GateReport;
    try {
      report = await standardGate(deps.access, deps.probeTimeoutMs)(cluster, signal);
    } catch (error) {
      log.warn({ err: errorText(error) }, 'health gate could not run');
      deps.onGateError?.(data.cluster);
      await deps.chat.update(data.channel, rootTs, gateErrorMessage(data, errorText(error)));
      return { passed: false };
    }
    deps.onReport?.(report, { by: 'command', user: data.requestedBy });
    await deps.chat.update(data.channel, rootTs, gateVerdictMessage(report, data, { gateJob: String(job.id) }));
    // A job run again (its lock lapsed) finds the replies of the earlier run: it edits them in order, never a second set.
    const thread = data.rootTs === undefined ? [] : await deps.chat.replies(data.channel, rootTs);
    // The check replies begin with their icon; the evidence file's message is left as it is.
    const earlier = thread.filter((r) => /^(✅|❌|⚠️)/u.test(r.text));
    const replies = gateReplies(report);
    for (const [i, { key, message }] of replies.entries()) {
      const previous = earlier[i];
      if (previous !== undefined) await deps.chat.update(data.channel, previous.ts, message);
      else await deps.chat.reply(data.channel, rootTs, message, { key: `${job.id}-${key}` });
    }
    // The one-line replies leave the evidence of passing checks out; the file holds all of it. Attached once.
    if (thread.length === earlier.length) {
      await deps.chat
        .upload(data.channel, rootTs, gateEvidenceFile(report))
        .catch((error: unknown) => log.warn({ err: errorText(error) }, 'health gate evidence not attached'));
    }
    log.info(
      {
        passed: report.passed,
        durationMs: Math.round(report.durationMs),
        slowestProbeMs: Math.round(report.slowestProbeMs),
        sumProbeMs: Math.round(report.checks.reduce((sum, c) => sum + (c.durationMs ?? 0), 0)),
      },
      'health gate finished',
    );
    return { passed: report.passed };
  };
}
