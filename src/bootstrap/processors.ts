import { createApprovalExpiryJob } from '../../jobs/engine/approval-expiry.ts';
import { createApprovalReminderJob } from '../../jobs/engine/approval-reminder.ts';
import { createCancelledJob } from '../../jobs/engine/cancelled.ts';
import { createEndedJob } from '../../jobs/engine/ended.ts';
import { createPlanExpiryJob } from '../../jobs/engine/plan-expiry.ts';
import { createPreflightJob } from '../../jobs/engine/preflight.ts';
import { createRetiredSnapshotJob } from '../../jobs/engine/retired-snapshot-job.ts';
import { createRunJob } from '../../jobs/engine/walk.ts';
import { createHealthGateJob, standardGate } from '../../jobs/health-gate-job.ts';
import type { OpsJobDeps } from '../../jobs/engine/job-context.ts';
import { PLAYBOOKS, playbookOf, presentationOf } from '../../jobs/playbooks/index.ts';
import { createReadinessGatesJob } from '../../jobs/readiness-gates-job.ts';
import { createReconcileJob } from '../../jobs/reconcile-job.ts';
import { createRecordJob } from '../../jobs/record-job.ts';
import { createRetentionSweepJob } from '../../jobs/retention-sweep-job.ts';
import { createGateSummaryJob, createScheduledGateJob } from '../../jobs/scheduled-gate-job.ts';
import { createScheduledSnapshotJob } from '../../jobs/scheduled-snapshot-job.ts';
import type { GateReport } from '../health/health-gate.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { gateVerdictName, type GateOrigin } from '../ops/cluster-signals.ts';
import { createWorkers, type OpsProcessors, type ReadProcessors, type Workers } from '../queue/workers.ts';
import { errorCode } from '../errors.ts';
import { createUserNames } from '../slack/slack-user-names.ts';
import type { Adapters } from './adapters.ts';
import type { Infrastructure } from './infrastructure.ts';
import type { OperationRecords } from './operation-records.ts';
import type { OperationsCore } from './operations-core.ts';

export interface Processors {
  read: ReadProcessors;
  ops: OpsProcessors;
}

export interface ProcessorParts {
  infra: Infrastructure;
  records: OperationRecords;
  adapters: Adapters;
  core: OperationsCore;
  metrics: Metrics;
}

/** What the operation engine and its playbooks are given; the other jobs take only what they use. */
function engineDeps({ infra, records, adapters, core }: ProcessorParts, gateFinished: OpsJobDeps['gateFinished']): OpsJobDeps {
  const { inventory, logger, clock, config, queues } = infra;
  const { store, lock, runLease, nodeClasses } = records;
  const { access, tofu, factory, chat, git, planDir, planSpaceBytes, repo } = adapters;
  const now = (): Date => clock.now();
  return {
    inventory,
    store,
    lock,
    runLease,
    audit: core.audit,
    nodeClasses,
    access,
    tofu,
    factory,
    chat,
    opsQueue: queues.ops,
    logger,
    timeouts: config.timeouts,
    clock,
    now,
    git,
    planDir,
    draining: () => core.drain.draining(),
    redisLost: () => infra.epoch.lostReason(),
    playbooks: playbookOf,
    presentations: presentationOf,
    planSpaceBytes,
    repo,
    placement: config.placement,
    userNames: createUserNames(adapters.slackClient),
    gateFinished,
  };
}

/** Every job's processor, by queue and name, each built with its own narrow dependencies. */
export function buildProcessors(parts: ProcessorParts): Processors {
  const { infra, records, adapters, core, metrics } = parts;
  const { inventory, logger, clock, config, queues } = infra;
  const { store, lock, runningGates } = records;
  const { access, chat } = adapters;
  const probeTimeoutMs = config.timeouts.probeMs;
  const keepSignal = (write: Promise<void>, cluster: string): void =>
    void write.catch((error: unknown) => logger.warn({ cluster, err: (error as Error).message }, 'gate verdict not kept for the metrics'));
  // Every gate, of any origin, is the cluster's newest for `/talos status` and the Home.
  const keepGate = (report: GateReport, origin: GateOrigin): void => {
    keepSignal(
      records.signals.gateFinished(report.cluster, gateVerdictName(report), clock.now(), report.versions?.talos, report.declared, origin),
      report.cluster,
    );
    core.home.gateFinished(report);
  };
  // The metrics count the standard gates (by hand or on schedule); an operation's gates are in its record.
  const onReport = (report: GateReport, origin: GateOrigin): void => {
    metrics.healthGates.inc({ talos_cluster: report.cluster, result: report.passed ? 'passed' : 'failed' });
    for (const check of report.checks) metrics.healthChecks.inc({ check: check.id, status: check.status });
    keepGate(report, origin);
  };
  const onGateError = (cluster: string): void => {
    metrics.healthGates.inc({ talos_cluster: cluster, result: 'error' });
    keepSignal(records.signals.gateFinished(cluster, 'failed', clock.now()), cluster);
  };
  const engine = engineDeps(parts, keepGate);
  return {
    read: {
      health: createHealthGateJob({ inventory, access, chat, logger, probeTimeoutMs, onReport, onGateError, runningGates, clock }),
      gates: createReadinessGatesJob({
        inventory,
        access,
        store,
        chat,
        logger,
        probeTimeoutMs,
        clock,
        signOffs: records.signOffs,
        signOffMaxAgeMs: config.retention.signOffMs,
      }),
      record: createRecordJob({ store, chat, presentations: presentationOf }),
      'scheduled-gate': createScheduledGateJob({
        inventory,
        chat,
        logger,
        clock,
        state: records.gateState,
        lock,
        runGate: standardGate(access, probeTimeoutMs),
        runningGates,
        onReport,
        onGateError,
      }),
      'scheduled-gate-summary': createGateSummaryJob({ inventory, chat, logger, state: records.gateState }),
    },
    ops: {
      'operation-preflight': createPreflightJob(engine, PLAYBOOKS),
      'operation-run': createRunJob(engine, PLAYBOOKS),
      'approval-expiry': createApprovalExpiryJob(engine),
      'approval-reminder': createApprovalReminderJob(engine),
      'operation-cancelled': createCancelledJob(engine),
      'operation-ended': createEndedJob(engine, PLAYBOOKS),
      'plan-expiry': createPlanExpiryJob(engine),
      // Retired: a snapshot queued by the previous version, ended with its reason.
      snapshot: createRetiredSnapshotJob(engine),
      'ops-reconcile': createReconcileJob({
        inventory,
        store,
        lock,
        audit: core.audit,
        runLease: records.runLease,
        opsQueue: queues.ops,
        logger,
        clock,
        playbooks: playbookOf,
      }),
      'scheduled-snapshot': createScheduledSnapshotJob({
        inventory,
        access,
        chat,
        logger,
        timeouts: config.timeouts,
        clock,
        redis: infra.redis,
        placement: config.placement,
      }),
      'retention-sweep': createRetentionSweepJob({
        store,
        lock,
        logger,
        clock,
        retentionMs: config.retention.operationMs,
        jobRetentionMs: config.retention.jobSeconds * 1000,
        queues: [queues.read, queues.ops],
        planDir: adapters.planDir,
      }),
    },
  };
}

/** The two workers over `processors`, not yet running: `run()` once Slack is connected. */
export function buildWorkers(infra: Pick<Infrastructure, 'config' | 'redis' | 'logger' | 'scrubber'>, processors: Processors): Workers {
  const { config, logger, scrubber } = infra;
  return createWorkers({
    connection: infra.redis,
    ...processors,
    keepJobs: { age: config.retention.jobSeconds, count: 1000 },
    jobLockMs: config.timeouts.jobLockMs,
    readConcurrency: config.readConcurrency,
    isCheckpoint: (error) => errorCode(error) === 'drain-checkpoint',
    logger,
    scrub: (text) => scrubber.scrub(text),
  });
}
