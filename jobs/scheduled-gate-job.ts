import type { Job } from 'bullmq';
import type { ChatPort } from '../src/port/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { checkMessage } from '../src/chat/health-report.ts';
import {
  scheduledDriftMessage,
  scheduledGateChangeMessage,
  scheduledGateHeldMessage,
  scheduledGateSummaryMessage,
} from '../src/chat/schedule-messages.ts';
import type { ClusterConfig, Inventory } from '../src/config/inventory.ts';
import type { GateReport } from '../src/health/health-gate.ts';
import type { Logger } from '../src/log/logger.ts';
import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { GateOrigin } from '../src/ops/cluster-signals.ts';
import { SCHEDULED_GATE, type RunningGates } from '../src/ops/running-gate.ts';
import type { ScheduledGateState } from '../src/ops/scheduled-gate-state.ts';
import type { ScheduledJobData } from '../src/queue/job-schemas.ts';
import type { Clock } from '../src/time/clock.ts';
import { driftChange, errorVerdict, verdictChange, verdictOf, type GateVerdict } from '../src/rules/gate-verdict-change.ts';

export interface ScheduledGateJobDeps {
  inventory: Inventory;
  chat: ChatPort;
  logger: Logger;
  clock: Pick<Clock, 'now'>;
  /** The standard health gate, as `/talos health` runs it. */
  runGate: (cluster: ClusterConfig, signal?: AbortSignal) => Promise<GateReport>;
  /** The running-gate join: one gate per cluster at a time, requested or scheduled. */
  runningGates: RunningGates;
  state: ScheduledGateState;
  /** The cluster lock: while an operation holds the cluster, the gate does not judge it. */
  lock: Pick<ClusterLock, 'holder'>;
  onReport?: (report: GateReport, origin: GateOrigin) => void;
  onGateError?: (cluster: string) => void;
}

export type ScheduledGateResult =
  | { skipped: 'not-in-inventory' | 'gate-running' }
  | { skipped: 'operation-running'; posted: boolean }
  | { passed: boolean; posted: boolean };

/**
 * A cluster's scheduled health gate: the standard gate, which speaks in the channel only when its
 * verdict changes (the first verdict, pass→fail, fail→pass, another set of failing checks). While
 * any gate of the cluster runs, the tick is skipped: the next one comes soon enough, and a request
 * never waits on two gates. While an operation holds the cluster, the tick does not judge it either:
 * a drained, rebooting node is the operation's to report, not a flip. It says so once per operation,
 * and the first tick after the lock is free compares with the verdict from before the operation.
 */
export function createScheduledGateJob(deps: ScheduledGateJobDeps) {
  return async (job: Job<ScheduledJobData>, signal?: AbortSignal): Promise<ScheduledGateResult> => {
    const { cluster: name } = job.data;
    const log = deps.logger.child({ op: job.id, cluster: name });
    const cluster = deps.inventory.clusters.find((c) => c.name === name);
    // A schedule of a cluster that left the inventory is removed at the next start; until then it does nothing.
    if (cluster?.schedules?.healthGate === undefined) return { skipped: 'not-in-inventory' };
    const gate = { job: String(job.id), requestedBy: SCHEDULED_GATE };
    const claim = await deps.runningGates.claim(name, gate);
    if (!claim.ok) {
      log.info({ running: claim.running.job }, 'scheduled health gate skipped: a gate runs on the cluster');
      return { skipped: 'gate-running' };
    }
    try {
      const holder = await deps.lock.holder(name);
      if (holder !== undefined) {
        if ((await deps.state.announcedHold(name)) === holder) return { skipped: 'operation-running', posted: false };
        const previous = await deps.state.last(name);
        await deps.chat.post(cluster.channel, scheduledGateHeldMessage(name, holder, previous), {
          key: `${job.id}-held`,
          maybeSent: job.attemptsStarted > 1,
        });
        await deps.state.announceHold(name, holder);
        log.info({ holder }, 'scheduled health gate paused: an operation holds the cluster');
        return { skipped: 'operation-running', posted: true };
      }
      let next: { verdict: GateVerdict; report?: GateReport; error?: string };
      try {
        const report = await deps.runGate(cluster, signal);
        deps.onReport?.(report, { by: 'schedule' });
        next = { verdict: verdictOf(report), report };
      } catch (error) {
        deps.onGateError?.(name);
        next = { verdict: errorVerdict(), error: errorText(error) };
      }
      const previous = await deps.state.last(name);
      const change = verdictChange(previous?.verdict, next.verdict);
      const at = deps.clock.now().toISOString();
      if (change !== undefined) {
        // Keyed by the tick's job: a run taken over after a crash adopts the post instead of repeating it.
        const once = { maybeSent: job.attemptsStarted > 1 };
        const { ts } = await deps.chat.post(cluster.channel, scheduledGateChangeMessage(name, change, next, previous), {
          key: `${job.id}-change`,
          ...once,
        });
        for (const check of next.report?.checks ?? []) {
          await deps.chat.reply(cluster.channel, ts, checkMessage(check), { key: `${job.id}-check-${check.id}`, ...once });
        }
      }
      const drift = driftChange(previous?.verdict, next.verdict);
      if (drift !== undefined) {
        await deps.chat.post(cluster.channel, scheduledDriftMessage(name, drift, next.report?.declared?.fixes ?? []), {
          key: `${job.id}-drift`,
          maybeSent: job.attemptsStarted > 1,
        });
      }
      // A gate that did not compare keeps the drift last seen, so its clearing is said only when it is seen.
      if (next.verdict.drift === undefined && previous?.verdict.drift !== undefined) next.verdict.drift = previous.verdict.drift;
      await deps.state.save(name, { verdict: next.verdict, changedAt: change === undefined ? previous!.changedAt : at, lastRunAt: at });
      await deps.state.countRun(name, next.verdict.passed);
      log.info({ passed: next.verdict.passed, failing: next.verdict.failing, change: change ?? 'none' }, 'scheduled health gate finished');
      return { passed: next.verdict.passed, posted: change !== undefined };
    } finally {
      await deps.runningGates
        .release(name, gate.job)
        .catch((error: unknown) => log.warn({ err: errorText(error) }, 'running gate not cleared; it expires by itself'));
    }
  };
}

/** The daily summary of a cluster's scheduled gates: the verdict, when it last changed, and the runs since the last summary. */
export function createGateSummaryJob(deps: Pick<ScheduledGateJobDeps, 'inventory' | 'chat' | 'logger' | 'state'>) {
  return async (job: Job<ScheduledJobData>): Promise<void> => {
    const { cluster: name } = job.data;
    const cluster = deps.inventory.clusters.find((c) => c.name === name);
    if (cluster?.schedules?.healthGate?.dailySummary === undefined) return;
    const last = await deps.state.last(name);
    const counts = await deps.state.takeCounts(name);
    await deps.chat.post(cluster.channel, scheduledGateSummaryMessage(name, last, counts), {
      key: `${job.id}-summary`,
      maybeSent: job.attemptsStarted > 1,
    });
    deps.logger.info({ cluster: name, ...counts }, 'daily health summary posted');
  };
}
