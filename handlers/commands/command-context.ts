import type { SlashCommand } from '@slack/bolt';
import type { Queue } from 'bullmq';
import { resolveCluster, type ClusterConfig, type Inventory } from '../../src/config/inventory.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { ClusterLock } from '../../src/ops/cluster-lock.ts';
import type { DeliveryDedupe } from '../../src/ops/delivery-dedupe.ts';
import { newOperation as createOperation, type Operation, type OperationKind } from '../../src/ops/operation.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import type { Authorizer } from '../authorize.ts';
import type { Command } from '../parse-command.ts';

export interface CommandDeps {
  inventory: Inventory;
  readQueue: Queue;
  opsQueue: Queue;
  store: OperationStore;
  lock: ClusterLock;
  dedupe: DeliveryDedupe;
  authorizer: Authorizer;
  logger: Logger;
  now: () => Date;
  /** Called after a cancel released a lock or stopped a plan, to refresh the operation's messages. */
  onCancelled: (op: Operation) => Promise<void>;
}

/** What a subcommand answers the user (ephemeral), and the work it leaves for a job. */
export interface Outcome {
  reply: string;
  enqueue?: () => Promise<unknown>;
}

/**
 * A subcommand whose answer comes from its text and the inventory alone, so the answer can be
 * the ack itself. Synchronous on purpose: a handler that needs Redis or Slack cannot be one.
 */
export type ImmediateHandler<K extends Command['kind']> = (command: Extract<Command, { kind: K }>, slack: SlashCommand, deps: CommandDeps) => Outcome;

/**
 * A subcommand that reads Redis or Slack (authorization, operations, locks) before it can
 * answer. It runs after an empty ack, and its reply goes out through the response_url.
 */
export type CommandHandler<K extends Command['kind']> = (command: Extract<Command, { kind: K }>, slack: SlashCommand, deps: CommandDeps) => Promise<Outcome>;

export type Resolved = { ok: true; cluster: ClusterConfig } | { ok: false; reason: string };

export const JOB_OPTIONS = { removeOnComplete: 1000, removeOnFail: 1000 };

/** The cluster a read-only command means; refused from a channel that belongs to no cluster. */
export function clusterFor(deps: CommandDeps, slack: SlashCommand, name: string | undefined): Resolved {
  const owns = deps.inventory.clusters.some((c) => c.channel === slack.channel_id);
  if (!owns) {
    const names = deps.inventory.clusters.map((c) => `${c.name} (<#${c.channel}>)`).join(', ');
    return { ok: false, reason: `This channel belongs to no cluster, so \`/talos\` does nothing here. Use a maintenance channel: ${names}.` };
  }
  return resolveCluster(deps.inventory, slack.channel_id, name);
}

/** A mutating command is taken only from its cluster's own channel, from one of its operators. */
export async function operatorCluster(deps: CommandDeps, slack: SlashCommand, name: string | undefined, what: string): Promise<Resolved> {
  const resolved = clusterFor(deps, slack, name);
  if (!resolved.ok) return resolved;
  const { cluster } = resolved;
  if (cluster.channel !== slack.channel_id) {
    return { ok: false, reason: `${what} on *${cluster.name}* is taken only in its maintenance channel <#${cluster.channel}>, so its audit thread lives there. Nothing was started.` };
  }
  if (!(await deps.authorizer.isMember(slack.user_id, cluster.operators))) {
    return { ok: false, reason: `Only operators of *${cluster.name}* may start ${what}. Ask one of them, or have yourself added to \`operators\` in the inventory. Nothing was started.` };
  }
  return resolved;
}

/** Refuses when another operation holds the cluster: one mutating operation at a time. */
export async function lockHeldReason(deps: CommandDeps, cluster: ClusterConfig): Promise<string | undefined> {
  const holder = await deps.lock.holder(cluster.name);
  if (holder === undefined) return undefined;
  return `*${cluster.name}* is held by \`${holder}\`; one mutating operation at a time. See \`/talos status\`, or \`/talos cancel ${holder}\`. Nothing was started.`;
}

export function newOperation(deps: CommandDeps, kind: OperationKind, cluster: ClusterConfig, slack: SlashCommand, state: Operation['state'], version?: string): Operation {
  return createOperation({ kind, cluster: cluster.name, channel: cluster.channel, requestedBy: slack.user_id, createdAt: deps.now().toISOString(), state, target: version ? { version } : {} });
}
