import type { Job } from 'bullmq';
import type { ClusterAccess } from '../src/cluster/cluster-session.ts';
import { matchingTalosctl } from '../src/cluster/matching-talosctl.ts';
import type { ChatPort } from '../src/chat/chat-port.ts';
import { errorText } from '../src/chat/error-text.ts';
import { checkMessage, gateErrorMessage, gateRunningMessage, gateVerdictMessage } from '../src/chat/health-report.ts';
import type { Inventory } from '../src/config/inventory.ts';
import { runHealthGate, type GateReport } from '../src/health/health-gate.ts';
import type { Logger } from '../src/log/logger.ts';
import { HealthJobData } from '../src/queue/job-schemas.ts';

export interface HealthGateJobDeps {
  inventory: Inventory;
  access: ClusterAccess;
  chat: ChatPort;
  logger: Logger;
  probeTimeoutMs: number;
  /** Called with each finished gate, for metrics. */
  onReport?: (report: GateReport) => void;
  /** Called when the gate could not run at all (credentials, talosctl client), for metrics. */
  onGateError?: (cluster: string) => void;
}

/** `/talos health`: post a root message, run the gate, edit in the verdict, thread one reply per check. */
export function createHealthGateJob(deps: HealthGateJobDeps) {
  return async (job: Job, signal?: AbortSignal): Promise<{ passed: boolean }> => {
    const data = HealthJobData.parse(job.data);
    const log = deps.logger.child({ op: job.id, cluster: data.cluster });
    const cluster = deps.inventory.clusters.find((c) => c.name === data.cluster);
    if (!cluster) throw new Error(`cluster ${data.cluster} is no longer in the inventory`);

    let rootTs = data.rootTs;
    if (rootTs === undefined) {
      rootTs = (await deps.chat.post(data.channel, gateRunningMessage(data), { key: `${job.id}-root`, maybeSent: job.attemptsStarted > 1 })).ts;
      await job.updateData({ ...data, rootTs });
    }
    log.info({ rootTs }, 'health gate started');
    let report: GateReport;
    try {
      report = await deps.access.withSession(cluster, signal, async (session) =>
        runHealthGate(cluster, { talosctl: await matchingTalosctl(session, deps.probeTimeoutMs, signal), kube: session.kube, probeTimeoutMs: deps.probeTimeoutMs, signal }),
      );
    } catch (error) {
      log.warn({ err: errorText(error) }, 'health gate could not run');
      deps.onGateError?.(data.cluster);
      await deps.chat.update(data.channel, rootTs, gateErrorMessage(data, errorText(error)));
      return { passed: false };
    }
    deps.onReport?.(report);
    await deps.chat.update(data.channel, rootTs, gateVerdictMessage(report, data));
    // A job run again (its lock lapsed) finds the replies of the earlier run: it edits them, one per check, never a second set.
    const earlier = data.rootTs === undefined ? [] : await deps.chat.replies(data.channel, rootTs);
    for (const [i, check] of report.checks.entries()) {
      const previous = earlier[i];
      if (previous !== undefined) await deps.chat.update(data.channel, previous.ts, checkMessage(check));
      else await deps.chat.reply(data.channel, rootTs, checkMessage(check), { key: `${job.id}-check-${check.id}` });
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
