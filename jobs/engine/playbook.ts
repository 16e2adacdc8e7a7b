import type { ApprovalRequest } from '../../src/chat/approval-messages.ts';
import type { z } from 'zod';
import type { StepFailure } from './job-context.ts';
import type { ChatMessage } from '../../src/port/chat-port.ts';
import type { Presentation } from '../../src/chat/presentation.ts';
import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { ClusterConfig, Inventory } from '../../src/config/inventory.ts';
import type { Disagreement } from '../../src/cluster/estate.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { GateReport } from '../../src/health/health-gate.ts';
import type { Approval, Operation, Step } from '../../src/ops/operation.ts';
import type { Talosctl } from '../../src/talos/talosctl.ts';
import type { StoredVersionRules } from '../../src/rules/versions.ts';
import type { PreflightChecks } from './preflight-checks.ts';
import type { SetAside } from '../../src/health/gate-setting-aside.ts';
import type { OpsJobDeps } from './job-context.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import type { ClusterLock } from '../../src/ops/cluster-lock.ts';
import type { FollowUpLinker, Recorder } from './record.ts';

/** An operation whose root message is in Slack: the thread every step reports in exists. */
export type PostedOperation = Operation & { rootTs: string };

export function isPosted(op: Operation): op is PostedOperation {
  return op.rootTs !== undefined;
}

/**
 * What a playbook is given of the job's dependencies: everything but the ways to write an operation,
 * take or release a lock, or queue a job. It reads operations (its history, a rehearsal) and asks who
 * holds a cluster; its own operation it writes only through `WalkContext.record`.
 */
export type PlaybookDeps = Omit<OpsJobDeps, 'store' | 'lock' | 'opsQueue' | 'runLease'> & {
  store: Pick<OperationStore, 'get' | 'listForCluster'>;
  lock: Pick<ClusterLock, 'holder'>;
};

/** What a playbook's preflight is given: its dependencies, and the engine's link of a Terraform change to the upgrades it follows up. */
export type PreflightDeps = PlaybookDeps & {
  linkFollowUp: FollowUpLinker;
  /** The link to an operation's thread (the engine keeps it on that operation, so Slack is asked once). */
  link: (op: Operation) => Promise<string | undefined>;
};

/** What a playbook's step sees: the cluster, an open session to it, and the run's signal. */
export interface WalkContext {
  deps: PlaybookDeps;
  /** Writes the playbook's own fields of its operation while it walks (see `jobs/engine/record.ts`). */
  record: Recorder;
  /** Records this Terraform change on the upgrades it follows up: the one write of another operation, made by the engine. */
  linkFollowUp: FollowUpLinker;
  cluster: ClusterConfig;
  session: ClusterSession;
  talosctl: Talosctl;
  log: Logger;
  /** Aborts when the run is cancelled: the job's signal, or the run lease lost to another run. */
  signal?: AbortSignal;
  /**
   * What the step in progress waits on now, for the root's status board: `ctx.phase('rebooting, waiting for
   * talos-prd-cp-1', 'Kubernetes: not Ready')`. Recorded on the operation and shown with how long it has
   * lasted; the root is edited throttled. Returns at once and never fails the step. Set by the walk for each step.
   */
  phase?: (text: string, detail?: string) => void;
  /**
   * Tells the bot of a whole-cluster gate the step ran (the operation's final gate among them), so
   * `/talos status` shows it as the cluster's newest gate. Set by the walk for each step; never fails the step.
   */
  gateDone?: (report: GateReport) => void;
}

/** The walk's own context: the engine's full dependencies, which it never hands a playbook. */
export type EngineContext = Omit<WalkContext, 'deps'> & { deps: OpsJobDeps };

/** What starts a walk: the engine adds the operation's recorder. */
export type WalkStart = Omit<EngineContext, 'record' | 'linkFollowUp'>;

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
  /** What the plan leads with: the operation's consequence for the cluster while it runs. */
  consequences?: string[];
  /** How the bot goes about it: kept in the maintenance record, not shown in the plan. */
  mechanics?: string[];
  steps: Step[];
  target: Partial<Operation['target']>;
  /** Production upgrades: the staging operation that rehearsed the same target, if any. */
  rehearsal?: Operation['rehearsal'];
  /**
   * The operation whose cluster lock this one takes over when it starts (a rollback requested
   * from a stopped upgrade); otherwise the lock must be free.
   */
  takesLockFrom?: string;
  /** The playbook's own fields for the operation's `data` (a Terraform change's reviewed plan). */
  data?: Record<string, unknown>;
  /**
   * What the engine's common checks need from this preflight (see `Playbook.checks`): the talosctl
   * the reads used, the Talos version it must match, and the operation allowed to hand its lock over.
   */
  common?: CommonCheckInput;
}

/** What a playbook's preflight hands the engine for the common checks it declared. */
export interface CommonCheckInput {
  /** The talosctl the preflight chose; the health gate runs with it. */
  talosctl?: Talosctl;
  /** Why no talosctl of the nodes' version is at hand (the closest one served the reads): then the client is not checked. */
  clientRefusal?: string;
  /** The Talos version the client must match; undefined leaves the client unchecked. */
  running?: string;
  /** Who runs `running`, for the client refusal, e.g. a node's address; default the cluster. */
  where?: string;
  /** Nodes the operation drains, whose disruption budgets the health gate judges. */
  drainNodes?: string[];
  /** The operation that may hand its cluster lock over to this one (a stopped upgrade's rollback). */
  lockFrom?: string;
  /** A failed node the operation replaces: the health gate judges the cluster without it (see `runHealthGateSettingAside`). */
  setAside?: SetAside;
}

/**
 * A playbook's command: `/talos <words…> <argument> [cluster]`. The parser and the help text are
 * built from these, so a playbook's grammar is written once.
 */
export interface PlaybookCommand {
  /** The command's kind as the handlers dispatch it: its operation kind, one name for the procedure, e.g. `talos-upgrade`. */
  name: string;
  /** The subcommand words, e.g. `['upgrade', 'talos']`. */
  words: readonly string[];
  /** Other spellings of the last word, e.g. `kubernetes` for `k8s`. */
  aliases?: readonly string[];
  /** What follows the words before the optional cluster. */
  argument:
    | { kind: 'none' }
    | { kind: 'node' }
    | {
        kind: 'version';
        /** e.g. `Talos` */
        what: string;
        /** e.g. `v1.12.11` */
        example: string;
        /** The releases its version form offers: Image Factory's Talos releases, or a typed Kubernetes version with the changelogs. */
        releases: 'talos' | 'kubernetes';
      };
  /** The help line after the usage, e.g. `rolling Talos upgrade with approvals (operators)`. */
  help: string;
  /** Where `/talos help` lists it: `change` for what changes the cluster, `manage` for what only keeps it (a snapshot). */
  group: 'change' | 'manage';
  /** The command typed in full, e.g. `/talos upgrade talos v1.13.9`: offered when its form cannot open. */
  example: string;
  /**
   * The form that asks for the argument when it is left out: a node picker for a node, a version form
   * (with the playbook's review items) for a version. Undefined: the argument must be typed.
   */
  form?: {
    /** e.g. `Upgrade Talos` (at most 24 characters) */
    title: string;
    /** e.g. `Plan the upgrade` */
    submit: string;
    /** A version form's review item the bot's records answer (the target upgraded on staging): ticked when they do. */
    rehearsedItem?: string;
  };
  /** How the command becomes a request for the operation: what it checks before the preflight, and its answer. */
  request: CommandRequest;
}

/**
 * What `/talos <command>` checks at once, from the inventory and the lock alone, before it queues
 * the operation's preflight (which checks everything else against the cluster), and its answer.
 * Every refusal ends with "Nothing was started."
 */
export interface CommandRequest {
  /** The operation in refusals, e.g. `a Talos upgrade`. */
  what: string;
  /** A version argument as stored, or why it is refused (the parser checked its characters). */
  version?: (input: string) => { ok: true; version: string } | { ok: false; reason: string };
  /**
   * A refusal of the cluster itself, from its inventory entry alone (an etcd restore rehearsal on
   * anything but staging), or undefined. `inventory` lets the refusal name the clusters that would do.
   */
  refuseCluster?: (cluster: ClusterConfig, inventory?: Inventory) => string | undefined;
  /** A refusal of the named node of the inventory, decided without the cluster, or undefined. */
  refuseNode?: (cluster: ClusterConfig, node: string) => string | undefined;
  /** Refused at once outside the cluster's maintenance window, and while another operation holds the cluster. */
  refuseAtOnce: { window?: boolean; lock?: boolean };
  /** The answer once the request is queued: where its plan or refusal appears. */
  queued(op: Operation, cluster: ClusterConfig): string;
}

/**
 * One runbook procedure. The engine owns everything around its steps: state transitions,
 * approvals, windows, locks, cancel and drain checkpoints, the audit, the root message, the
 * stop at the first failure, Retry and Rollback offers, completion and the maintenance record.
 */
export interface Playbook<Data = unknown> {
  /** Its command grammar and help line. */
  command: PlaybookCommand;
  /** Who clicks its Start: operators, or (a Terraform change's Apply) approvers, with four eyes. */
  startedBy: 'operators' | 'approvers';
  /** Whether production's maintenance windows hold its steps (a rollback, being incident response, is never held). */
  heldByWindows: boolean;
  /** How its operations read in Slack: titles, step labels, approval questions, the review items the starter confirms. */
  texts: Presentation;
  /** Its private data on the operation (`op.data`), validated when the playbook reads it. */
  data: z.ZodType<Data>;
  /** The common refusals the engine's preflight adds after the playbook's own. */
  checks: PreflightChecks;
  /**
   * What a passed preflight becomes: a plan that waits for an operator's Start, or (where the
   * operator's request is the start, as for a rollback) a run that takes the lock at once.
   */
  start: 'plan' | 'run';
  /**
   * Whether it holds the cluster's lock from its start until it ends: `cluster` for whatever
   * changes the cluster; `none` for work that changes nothing in it (an etcd snapshot), which
   * then also runs while another operation holds the cluster (a stopped upgrade before its rollback).
   */
  lock: 'none' | 'cluster';
  /**
   * The root message's text (what notifications and the channel list show) where this kind's
   * differs from the common `<title> — <state> (<id>)`; undefined keeps the common one.
   */
  rootText?(op: Operation): string | undefined;
  /** Every check before anything is touched; refusals are collected, not stopped at the first. */
  preflight(
    deps: PreflightDeps,
    cluster: ClusterConfig,
    op: Operation,
    session: ClusterSession,
    signal?: AbortSignal,
  ): Promise<PreflightOutcome>;
  /**
   * Asked of the cluster at the click on Start (a Terraform change's Apply), before anything starts:
   * what moved since the plan that the plan's rules now refuse. The reasons; none to go on.
   */
  startRecheck?(session: ClusterSession, op: Operation, signal: AbortSignal): Promise<string[]>;
  /**
   * Whether this operation resolves `disagreement` between the estate's sources, so its preflight is
   * not refused for it: the removal or replacement of that very node, an apply that declares it.
   * Default: it resolves none, and any disagreement refuses it (when it holds the cluster's lock).
   */
  resolves?(op: Operation, disagreement: Disagreement): boolean;
  /**
   * Its own node leaves the estate on the way (a removal, a replacement): once one of its steps has
   * run, the check before each step accepts that node gone from the sources. Default: every step's
   * node must be one the sources show.
   */
  targetLeaves?: boolean;
  /** Whether a person approves `step` before it runs. */
  needsApproval(step: Step): boolean;
  /**
   * How many different approvers `step` needs (default 1). Above one, the engine holds the step until
   * that many distinct approvers of the cluster approved it, none of them its requester or starter,
   * whatever the cluster's `requireDistinctApprover` says (a step that destroys data on purpose).
   */
  approvalsNeeded?(step: Step): number;
  /**
   * Whether `step` is never covered by an operation-wide approval (`approvalScope: operation`): a person
   * approves it seeing what it does (a saved plan's `tofu apply`), whatever approved the steps before it.
   * Its approval covers no other step either. Default: false.
   */
  neverCovered?(step: Step): boolean;
  /** The approval request, with what the approver needs to see now (etcd state, the image). */
  approvalMessage(ctx: WalkContext, op: PostedOperation, approval: Approval, step: Step): Promise<ApprovalRequest>;
  /**
   * Checks, before `step` runs, that what was read back from Redis is what the rules derive now
   * (the node is in the inventory, the image is the one for that node): Redis is a store, not the
   * authority. Returns the reasons it is not.
   */
  recheck?(ctx: WalkContext, op: PostedOperation, step: Step): Promise<string[]>;
  /** The version rules its stored target follows, checked again before each step (see `storedVersionProblems`); none: grammar only. */
  versionRules?: StoredVersionRules;
  /** Runs one step; throws `StepFailure` to stop the operation. */
  runStep(ctx: WalkContext, op: PostedOperation, step: Step): Promise<StepResult>;
  /** After the last step: the validation for the record and the follow-up for the thread. */
  complete(ctx: WalkContext, op: PostedOperation): Promise<{ validation: string; followUp: ChatMessage }>;
  /** The step a Retry re-runs from after `step` failed (with `failure`); undefined when running it again is not safe. */
  retryFrom(step: Step, failure?: StepFailure): string | undefined;
  /** Whether a failure of `step` offers a rollback of its node: it asked the node to change. */
  offersRollback?(step: Step): boolean;
  /** The operation kind its Rollback button requests for the failed node (see `offersRollback`), e.g. `node-rollback`. */
  rollbackKind?: string;
  /**
   * How an ended operation of this kind is asked for again: `replan` (a Terraform change: a fresh plan once it was
   * refused, stopped or expired) or `request` (the same request once it was refused: a stopped one has its Retry
   * and Rollback, and never starts twice). Default `request`.
   */
  again?: 'replan' | 'request';
  /** After the root message (plan or refusal) is posted: what goes under it in the thread (a reviewed plan's full text). */
  posted?(deps: PlaybookDeps, op: PostedOperation): Promise<void>;
  /** Once the operation has ended (completed, failed, cancelled, refused, expired): give back what it kept on disk. */
  ended?(deps: PlaybookDeps, op: Operation): Promise<void>;
  /** What the maintenance record adds for this kind (a Terraform apply's plan text). */
  recordAppendix?(deps: PlaybookDeps, op: Operation): Promise<string | undefined>;
  /** Why a cancel is refused now (a node mid-reboot the cancel would leave unwatched); undefined when it may be cancelled. */
  cancelRefusal?(op: Operation): string | undefined;
  /** Steps whose start another message already tells (the final check ends in its result): their entry waits for the next reply. */
  quietStart?(step: Step): boolean;
}
