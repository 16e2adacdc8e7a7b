import type { OpsQueue } from '../../../src/queue/job-schemas.ts';
import type { ChatPort } from '../../../src/port/chat-port.ts';
import type { ClusterConfig, Inventory } from '../../../src/config/inventory.ts';
import { clusterForOperation } from '../../../src/config/inventory-holder.ts';
import type { Audit } from '../audit.ts';
import type { ClusterLock } from '../../../src/ops/cluster-lock.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import type { PresentationLookup } from '../../../src/chat/presentation.ts';
import type { GateSignOffStore } from '../../../src/ops/gate-signoffs.ts';
import type { OperationStore } from '../../../src/ops/operation-store.ts';
import type { Clock } from '../../../src/time/clock.ts';

/**
 * What an operation's kind decides about its moves. Every such question the lifecycle asks goes
 * through this one object, so the answers can come from each playbook's own declaration.
 */
export interface LifecyclePolicy {
  /** Approvers click the Start (a Terraform change's Apply); four eyes then hold. Otherwise operators. */
  startedByApprovers(kind: string): boolean;
  /** The steps an approver's Start (a Terraform change's Apply) is the approval of: a failure or a Retry spends it. */
  startApproves?(op: Operation): string[];
  /** How many distinct approvers the step needs (default 1); above one, four eyes always hold for it. */
  approvalsNeeded?(op: Operation, stepId: string): number;
  /** Production's maintenance windows hold its steps. */
  heldByWindows(kind: string): boolean;
  /** What the starter confirms with Start. */
  reviewItems(kind: string): string[];
  /** How an ended operation of the kind is asked for again: planned afresh (`replan`), or requested again once refused (`request`). */
  again(kind: string): 'replan' | 'request';
  /** The kind a Rollback of the kind's failed node requests; undefined when the kind offers none. */
  rollbackKind(kind: string): string | undefined;
  /** Why the kind refuses a cancel now (a node mid-reboot), before the rules common to every kind. */
  cancelRefusal(op: Operation): string | undefined;
  /** How the kind's messages read (the root message a move edits). */
  presentation: PresentationLookup;
}

export interface LifecycleDeps {
  inventory: Inventory;
  store: OperationStore;
  lock: ClusterLock;
  audit: Audit;
  /** The messages a move edits (the root, the clicked request) and the links in its answers. */
  chat: ChatPort;
  opsQueue: OpsQueue;
  now: () => Date;
  /** A plan older than this is stale and cannot be started, in ms. */
  planTtlMs: number;
  /** Called once a cancel ended a waiting operation, to show it in Slack (queued, so the caller answers first). */
  onCancelled: (op: Operation) => Promise<void>;
  /** The kinds' answers, from the playbook registry (see the composition root). */
  policy: LifecyclePolicy;
  /** For the short wait of a Start on a plan whose message is not stored yet. Default the system clock. */
  clock?: Clock;
  /**
   * What the cluster says against a Start now, asked of it at the click (a Terraform change's declared
   * versions against what every node runs); the reasons it refuses, none to go on. Default: nothing to ask.
   */
  startRecheck?: (op: Operation, cluster: ClusterConfig) => Promise<string[]>;
  /** The approvers' sign-offs of by-hand production gates. Default: none kept, so a sign-off is refused. */
  signOffs?: GateSignOffStore;
  /** How long a sign-off counts, in ms (default 90 days). */
  signOffMaxAgeMs?: number;
  /** Why nothing may change once Redis lost the bot's data (see `src/ops/redis-epoch.ts`); undefined while it is whole. Default: never. */
  redisLost?: () => string | undefined;
}

/** The deps with their defaults filled in, as the moves take them. */
export type MoveDeps = Required<LifecycleDeps>;

/** Why a move did not happen: the click or command came too late, from the wrong person or at the wrong time. */
export type RefusalCode =
  /** The button or the request no longer matches the operation's state. */
  | 'stale'
  /** The move was already made (by this click redelivered, or by someone else). */
  | 'already'
  | 'four-eyes'
  /** A move that takes two approvers, asked again by the first. */
  | 'second-approver'
  | 'window'
  /** Another operation holds the cluster. */
  | 'locked'
  /** A Start from a copy of the plan Slack showed, not the message the bot keeps. */
  | 'not-kept-copy'
  | 'plan-expired'
  /** A production change with no staging rehearsal and no override. */
  | 'no-rehearsal'
  | 'approval-expired'
  /** A cancel that would free the cluster while a node is down. */
  | 'not-cancellable'
  /** The cluster, asked again at the click, no longer allows what was planned. */
  | 'cluster-changed'
  /** A Start without every checkbox of the plan ticked (what only a person can check). */
  | 'unconfirmed'
  /** Redis lost the bot's data: nothing changes until an operator re-seeds it. */
  | 'redis-lost';

/**
 * What a move did: the operation after it, what to tell the person, and what the caller does once
 * it has told them (a message edit); or why nothing changed, with the text to tell them.
 */
export type MoveResult =
  { ok: true; op: Operation; reply?: string; followUp?: () => Promise<void> } | { ok: false; code: RefusalCode; message: string };

export function refused(code: RefusalCode, message: string): MoveResult {
  return { ok: false, code, message };
}

export function clusterOf(deps: Pick<LifecycleDeps, 'inventory'>, op: Operation) {
  const cluster = clusterForOperation(deps.inventory, op);
  if (!cluster) throw new Error(`cluster ${op.cluster} is no longer in the inventory`);
  return cluster;
}

/** Why a click that wrote nothing changed nothing: the request expired, or it was decided meanwhile. */
export function notDecided(nonce: string, after: Operation, now: Date): MoveResult {
  const current = after.approvals.find((a) => a.nonce === nonce);
  if (current?.state === 'pending' && Date.parse(current.expiresAt) <= now.getTime()) {
    return refused(
      'approval-expired',
      'This approval request has expired. The operation pauses; ask for approval again from the expired message. Nothing changed.',
    );
  }
  const who = current?.by ? ` by <@${current.by}>` : '';
  return refused(
    'already',
    `This step was already ${current?.state ?? 'decided'}${who}; \`${after.id}\` is ${after.state}. Nothing changed.`,
  );
}
