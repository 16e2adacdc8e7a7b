import type { StepFailure } from '../job-context.ts';
import type { ChatMessage } from '../../src/chat/chat-port.ts';
import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { Approval, Operation, Step } from '../../src/ops/operation.ts';
import type { Talosctl } from '../../src/talos/talosctl.ts';
import type { OpsJobDeps } from '../job-context.ts';

/** An operation whose root message is in Slack: the thread every step reports in exists. */
export type PostedOperation = Operation & { rootTs: string };

export function isPosted(op: Operation): op is PostedOperation {
  return op.rootTs !== undefined;
}

/** What a playbook's step sees: the cluster, an open session to it, and the run's signal. */
export interface WalkContext {
  deps: OpsJobDeps;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  log: Logger;
  /** Aborts when the run is cancelled: the job's signal, or the run lease lost to another run. */
  signal?: AbortSignal;
}

/** What a finished step leaves in the thread. */
export interface StepResult {
  event: string;
  detail: string;
  /** A reply of its own (a dry run's report); without one, the entry goes out with the next reply. */
  message?: ChatMessage;
  /** `skipped`: the node already ran the target, so nothing was done. Default `done`. */
  status?: 'done' | 'skipped';
}

/** What a preflight found: refusals (collected, not stopped at the first), notes for the plan, and the steps. */
export interface PreflightOutcome {
  refusals: string[];
  notes: string[];
  steps: Step[];
  target: Partial<Operation['target']>;
  /** Production upgrades: the staging operation that rehearsed the same target, if any. */
  rehearsal?: Operation['rehearsal'];
  /**
   * The operation whose cluster lock this one takes over when it starts (a rollback requested
   * from a stopped upgrade); otherwise the lock must be free.
   */
  takesLockFrom?: string;
  /** A Terraform change: the reviewed plan it applies. */
  terraform?: Operation['terraform'];
}

/**
 * One runbook procedure. The engine owns everything around its steps: state transitions,
 * approvals, windows, locks, cancel and drain checkpoints, the audit, the root message, the
 * stop at the first failure, Retry and Rollback offers, completion and the maintenance record.
 */
export interface Playbook {
  /**
   * What a passed preflight becomes: a plan that waits for an operator's Start, or (where the
   * operator's request is the start, as for a rollback) a run that takes the lock at once.
   */
  start: 'plan' | 'run';
  /** Every check before anything is touched; refusals are collected, not stopped at the first. */
  preflight(deps: OpsJobDeps, cluster: ClusterConfig, op: Operation, session: ClusterSession, signal?: AbortSignal): Promise<PreflightOutcome>;
  /** Whether a person approves `step` before it runs. */
  needsApproval(step: Step): boolean;
  /** The approval request, with what the approver needs to see now (etcd state, the image). */
  approvalMessage(ctx: WalkContext, op: PostedOperation, approval: Approval, step: Step): Promise<ChatMessage>;
  /**
   * Checks, before `step` runs, that what was read back from Redis is what the rules derive now
   * (the node is in the inventory, the image is the one for that node): Redis is a store, not the
   * authority. Returns the reasons it is not.
   */
  recheck?(ctx: WalkContext, op: PostedOperation, step: Step): Promise<string[]>;
  /** Runs one step; throws `StepFailure` to stop the operation. */
  runStep(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult>;
  /** After the last step: the validation for the record and the follow-up for the thread. */
  complete(ctx: WalkContext, op: PostedOperation): Promise<{ validation: string; followUp: ChatMessage }>;
  /** The step a Retry re-runs from after `step` failed (with `failure`); undefined when running it again is not safe. */
  retryFrom(step: Step, failure?: StepFailure): string | undefined;
  /** Whether a failure of `step` offers a rollback of its node: it asked the node to change. */
  offersRollback?(step: Step): boolean;
  /** After the root message (plan or refusal) is posted: what goes under it in the thread (a reviewed plan's full text). */
  posted?(deps: OpsJobDeps, op: PostedOperation): Promise<void>;
  /** Once the operation has ended (completed, failed, cancelled, refused, expired): give back what it kept on disk. */
  ended?(deps: OpsJobDeps, op: Operation): Promise<void>;
  /** What the maintenance record adds for this kind (a Terraform apply's plan text). */
  recordAppendix?(deps: OpsJobDeps, op: Operation): Promise<string | undefined>;
  /** Steps whose start another message already tells (the final check ends in its result): their entry waits for the next reply. */
  quietStart?(step: Step): boolean;
}
