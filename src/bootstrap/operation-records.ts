import type { Redis } from 'ioredis';
import type { Config } from '../config/env.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import { createClusterLock, type ClusterLock } from '../ops/cluster-lock.ts';
import { createClusterSignals, type ClusterSignals } from '../ops/cluster-signals.ts';
import { createDeliveryDedupe, type DeliveryDedupe } from '../ops/delivery-dedupe.ts';
import { createNodeClassRecord, type NodeClassRecord } from '../ops/node-class-record.ts';
import { createObservedEstates, type ObservedEstates } from '../ops/observed-estate.ts';
import { createGateSignOffStore, type GateSignOffStore } from '../ops/gate-signoffs.ts';
import { createOperationEvents, type OperationEvents } from '../ops/operation-events.ts';
import { createOperationStore, type OperationStore } from '../ops/operation-store.ts';
import { createRunLease, type RunLease } from '../ops/run-lease.ts';
import { createRunningGates, type RunningGates } from '../ops/running-gate.ts';
import { createScheduledGateState, type ScheduledGateState } from '../ops/scheduled-gate-state.ts';
import type { RedisEpoch } from '../ops/redis-epoch.ts';
import type { Clock } from '../time/clock.ts';
import type { Logger } from '../log/logger.ts';

/** What the bot keeps in Redis about operations, gates and deliveries, and the events of every operation write. */
export interface OperationRecords {
  events: OperationEvents;
  store: OperationStore;
  lock: ClusterLock;
  dedupe: DeliveryDedupe;
  /** One run of an operation at a time, across jobs and replicas. */
  runLease: RunLease;
  /** One process at a time posts an operation's audit replies. */
  auditPostLease: RunLease;
  nodeClasses: NodeClassRecord;
  /** What the last look at each cluster saw of its nodes. */
  observedEstates: ObservedEstates;
  runningGates: RunningGates;
  gateState: ScheduledGateState;
  /** The last gate verdict and Talos versions of each cluster, for the metrics. */
  signals: ClusterSignals;
  /** The approvers' sign-offs of the by-hand production gates, and each cluster's latest `/talos gates` report. */
  signOffs: GateSignOffStore;
}

export function buildOperationRecords(parts: {
  config: Config;
  redis: Redis;
  scrubber: SecretScrubber;
  clock: Clock;
  epoch: RedisEpoch;
  logger: Logger;
}): OperationRecords {
  const { config, redis, scrubber, clock, epoch, logger } = parts;
  const events = createOperationEvents();
  const lease = (prefix?: string): RunLease =>
    createRunLease(redis, { ttlMs: config.timeouts.jobLockMs, clock, ...(prefix ? { prefix } : {}) });
  return {
    events,
    store: createOperationStore(redis, {
      onChange: (before, after) => events.emit(before, after),
      retentionMs: config.retention.operationMs,
      scrub: (text) => scrubber.scrub(text),
    }),
    // No lock is taken or trusted once Redis lost the epoch this process adopted.
    lock: createClusterLock(redis, { epoch }),
    dedupe: createDeliveryDedupe(redis, config.retention.dedupeSeconds),
    runLease: lease(),
    auditPostLease: lease('talos:audit-post'),
    nodeClasses: createNodeClassRecord(redis),
    observedEstates: createObservedEstates(redis, logger),
    // A gate reads its credentials, picks its talosctl and runs its probes, each within the probe timeout.
    runningGates: createRunningGates(redis, { ttlMs: 3 * config.timeouts.probeMs + 60_000 }),
    gateState: createScheduledGateState(redis),
    signals: createClusterSignals(redis),
    signOffs: createGateSignOffStore(redis),
  };
}
