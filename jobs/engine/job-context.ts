import type { ChatPort } from '../../src/port/chat-port.ts';
import type { PresentationLookup } from '../../src/chat/presentation.ts';
import type { ClusterAccess, ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../src/cluster/tofu.ts';
import type { BotPlacement } from '../../src/config/bot-placement.ts';
import type { Config } from '../../src/config/env.ts';
import type { ClusterConfig, Inventory } from '../../src/config/inventory.ts';
import { clusterForOperation } from '../../src/config/inventory-holder.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { Audit } from './audit.ts';
import type { ClusterLock } from '../../src/ops/cluster-lock.ts';
import type { GateOrigin } from '../../src/ops/cluster-signals.ts';
import type { GateReport } from '../../src/health/health-gate.ts';
import type { NodeClassRecord } from '../../src/ops/node-class-record.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import type { RunLease } from '../../src/ops/run-lease.ts';
import type { OpsQueue } from '../../src/queue/job-schemas.ts';
import type { SnapshotHost } from '../../src/ops/snapshot-placement.ts';
import type { ImageFactory } from '../../src/talos/image-factory.ts';
import type { RepoCheckout } from '../../src/tofu/repo-checkout.ts';
import type { WorkingTreeReader } from '../../src/tofu/working-tree.ts';
import type { Clock } from '../../src/time/clock.ts';
import { BotError } from '../../src/errors.ts';
import type { Playbook } from './playbook.ts';

/** What every operation job is given by the composition root. */
export interface OpsJobDeps {
  inventory: Inventory;
  store: OperationStore;
  lock: ClusterLock;
  /** One run of an operation at a time, across jobs and replicas. */
  runLease: RunLease;
  audit: Audit;
  /** Each node's installer class as the last completed operation left it (evidence for a node on an old schematic). */
  nodeClasses: NodeClassRecord;
  access: ClusterAccess;
  tofu: Tofu;
  factory: ImageFactory;
  chat: ChatPort;
  opsQueue: OpsQueue;
  logger: Logger;
  timeouts: Config['timeouts'];
  /** Every deadline, wait and timestamp of a job. */
  clock: Clock;
  /** `clock.now`, for the steps that only read the time. */
  now: () => Date;
  /** Whether a Terraform directory is at a commit with nothing uncommitted. */
  git: WorkingTreeReader;
  /** Where reviewed plans wait for their Apply, one private directory per operation. */
  planDir: string;
  /** The playbook that runs a stored operation's kind; undefined for a kind no playbook runs. */
  playbooks: (kind: string) => Playbook | undefined;
  /** How every operation kind's messages read (its root message, step labels, approval questions). */
  presentations: PresentationLookup;
  /** True once the process is shutting down: operations stop between steps and resume elsewhere. */
  draining?: () => boolean;
  /** Why nothing may change once Redis lost the bot's data (see `src/ops/redis-epoch.ts`); undefined while it is whole. */
  redisLost?: () => string | undefined;
  /** What the kept plans in `planDir` may hold together, in bytes; a default bound when unset. */
  planSpaceBytes?: number;
  /** The bot's own copies of the Terraform repositories clusters name (`terraformRepo`). */
  repo?: RepoCheckout;
  /** A person's display name (Slack's `users.info`), or undefined when Slack does not say: cards name people without paging them. */
  userNames?: (userId: string) => Promise<string | undefined>;
  /** Where the bot itself runs: no etcd snapshot is taken of a cluster it runs on. */
  placement: BotPlacement;
  /** Told of each whole-cluster gate an operation runs, so `/talos status` and the Home show the newest gate of any origin. */
  gateFinished?: (report: GateReport, origin: GateOrigin) => void;
}

/** What an etcd snapshot of the session's cluster checks first: the bot must not run on it. */
export function snapshotHost(deps: Pick<OpsJobDeps, 'placement'>, session: Pick<ClusterSession, 'kube'>): SnapshotHost {
  return { placement: deps.placement, kube: session.kube };
}

/**
 * Thrown between steps while the process drains. The worker puts the job back in the
 * queue, so this or another replica continues it from the stored state; no node is
 * left mid-step.
 */
export class DrainCheckpoint extends BotError {
  constructor() {
    super('drain-checkpoint', 'the bot is shutting down; the operation continues from its next step on a running replica');
    this.name = 'DrainCheckpoint';
  }
}

/** Call between steps: throws `DrainCheckpoint` while draining. */
export function checkpoint(deps: OpsJobDeps): void {
  if (deps.draining?.() === true) throw new DrainCheckpoint();
}

/** The cluster definition an operation runs with: the one it started with, although the inventory was reloaded since. */
export function operationCluster(inventory: Inventory, op: { id: string; cluster: string }): ClusterConfig {
  const cluster = clusterForOperation(inventory, op);
  if (!cluster) throw new Error(`cluster ${op.cluster} is no longer in the inventory`);
  return cluster;
}

/** What a stop knows beyond its reason. */
export interface StepFailureOptions {
  /**
   * A Retry of this step is safe, and what it does, shown beside the Retry button (e.g. "runs the
   * upgrade again: …"). Default: undefined, and the playbook's `retryFrom` decides alone.
   */
  retry?: string;
  /** The node still runs what it ran before the step, so a rollback has nothing to undo. Default false. */
  nodeUnchanged?: boolean;
  /**
   * How a Retry of this step resumes. `observe` (the default for a step that reached the node): the
   * step keeps what it recorded as issued and looks at the node before it does anything. `reissue`:
   * the request is sent again, because the node shows it is not in flight (a drain that timed out).
   */
  resume?: 'observe' | 'reissue';
  /** No Rollback is offered: the node is healthy and only slow, or Talos already went back on its own. Default false. */
  noRollback?: boolean;
  /**
   * The Retry needs an approver's explicit word, the button saying this (e.g. "Retry the upgrade of
   * this node"): Talos fell back to the previous image on its own, and only a person decides to try again.
   */
  explicitRetry?: string;
}

/** A node step's stop: the reason an operator reads and the evidence behind it. */
export class StepFailure extends BotError {
  readonly evidence: string[];
  readonly options: StepFailureOptions;
  constructor(reason: string, evidence: string[] = [], options: StepFailureOptions = {}) {
    super('step-failed', reason);
    this.name = 'StepFailure';
    this.evidence = evidence;
    this.options = options;
  }
}

/** Signals for one read of the cluster each: bounded by the probe timeout, and by the job's signal. */
export function probeSignals(probeMs: number, signal?: AbortSignal): () => AbortSignal {
  return () => (signal ? AbortSignal.any([signal, AbortSignal.timeout(probeMs)]) : AbortSignal.timeout(probeMs));
}
