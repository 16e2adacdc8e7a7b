import type { SlashCommand } from '@slack/bolt';
import type { Block, ChatPort } from '../../src/port/chat-port.ts';
import { resolveCluster, type ClusterConfig, type Inventory } from '../../src/config/inventory.ts';
import type { Logger } from '../../src/log/logger.ts';
import type { ClusterLock } from '../../src/ops/cluster-lock.ts';
import type { DeliveryDedupe } from '../../src/ops/delivery-dedupe.ts';
import { newOperation as createOperation, type Operation } from '../../src/ops/operation.ts';
import type { OperationKind } from '../../jobs/playbooks/index.ts';
import type { OperationStore } from '../../src/ops/operation-store.ts';
import { HealthJobData, type ReadQueue } from '../../src/queue/job-schemas.ts';
import { operationRefById } from '../../src/chat/operation-link.ts';
import type { Lifecycle } from '../../jobs/engine/lifecycle/lifecycle.ts';
import type { Authorizer } from '../authorize.ts';
import type { ReadRateLimiter } from '../read-rate-limit.ts';
import type { Command } from '../parse-command.ts';
import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import type { ClusterSignals } from '../../src/ops/cluster-signals.ts';
import type { ObservedEstates } from '../../src/ops/observed-estate.ts';

export interface CommandDeps {
  inventory: Inventory;
  readQueue: ReadQueue;
  store: OperationStore;
  lock: ClusterLock;
  dedupe: DeliveryDedupe;
  authorizer: Authorizer;
  /** For links to operations' threads (`chat.getPermalink`), read after the ack. */
  chat: ChatPort;
  logger: Logger;
  now: () => Date;
  /** Stores a command's operation and queues its first job; cancels. */
  lifecycle: Pick<Lifecycle, 'request' | 'cancel'>;
  /** Read commands per user and cluster; none: unlimited. */
  readLimiter?: ReadRateLimiter;
  /** What Redis keeps of each cluster's last health gate, for `/talos status`; none: the line is left out. */
  signals?: Pick<ClusterSignals, 'read'>;
  /** `/talos doctor`'s checks, each bounded in time (jobs/doctor/doctor.ts). */
  doctor?: () => Promise<DoctorFinding[]>;
  /** What the last look at each cluster saw of its nodes: a command may name a node as Kubernetes shows it. */
  observedEstates?: Pick<ObservedEstates, 'read'>;
  /** Why nothing may change once Redis lost the bot's data (see `src/ops/redis-epoch.ts`); undefined while it is whole. */
  redisLost?: () => string | undefined;
}

/** What a subcommand answers the user (ephemeral), and the work it leaves for a job. */
export interface Outcome {
  reply: string;
  /** The reply as blocks (buttons), with `reply` as its text. */
  blocks?: Block[];
  enqueue?: () => Promise<unknown>;
}

/**
 * A subcommand whose answer comes from its text and the inventory alone, so the answer can be
 * the ack itself. Synchronous on purpose: a handler that needs Redis or Slack cannot be one.
 */
export type ImmediateHandler<K extends Command['kind']> = (
  command: Extract<Command, { kind: K }>,
  slack: SlashCommand,
  deps: CommandDeps,
) => Outcome;

/**
 * A subcommand that reads Redis or Slack (authorization, operations, locks) before it can
 * answer. It runs after an empty ack, and its reply goes out through the response_url.
 */
export type CommandHandler<K extends Command['kind']> = (
  command: Extract<Command, { kind: K }>,
  slack: SlashCommand,
  deps: CommandDeps,
) => Promise<Outcome>;

export type Resolved = { ok: true; cluster: ClusterConfig } | { ok: false; reason: string };

/** The cluster a read-only command means; refused from a channel that belongs to no cluster. */
export function clusterFor(deps: CommandDeps, slack: SlashCommand, name: string | undefined): Resolved {
  const owns = deps.inventory.clusters.some((c) => c.channel === slack.channel_id);
  if (!owns) {
    const names = deps.inventory.clusters.map((c) => `${c.name} (<#${c.channel}>)`).join(', ');
    return {
      ok: false,
      reason: `This channel belongs to no cluster, so \`/talos\` does nothing here. Use a maintenance channel: ${names}.`,
    };
  }
  return resolveCluster(deps.inventory, slack.channel_id, name);
}

/**
 * A read-only report's request: the report goes to its cluster's own channel whichever channel
 * asked (another cluster's channel sees nothing of it); the requester is told there, privately.
 */
export function reportRequest(deps: CommandDeps, slack: SlashCommand, cluster: ClusterConfig): HealthJobData {
  const askedIn = slack.channel_id === cluster.channel ? {} : { askedIn: slack.channel_id };
  return HealthJobData.parse({
    cluster: cluster.name,
    channel: cluster.channel,
    ...askedIn,
    requestedBy: slack.user_id,
    requestedAt: deps.now().toISOString(),
  });
}

/** Where the reply says a report appears: here, or in its cluster's channel with a link to follow. */
export function reportDestination(slack: SlashCommand, cluster: ClusterConfig, what: string): string {
  if (slack.channel_id === cluster.channel) return `${what} appears in this channel`;
  return `${what} goes to *${cluster.name}*'s own channel <#${cluster.channel}>, and a link to it follows here`;
}

/** A mutating command is taken only from its cluster's own channel, from one of its operators. */
export async function operatorCluster(deps: CommandDeps, slack: SlashCommand, name: string | undefined, what: string): Promise<Resolved> {
  const resolved = clusterFor(deps, slack, name);
  if (!resolved.ok) return resolved;
  const { cluster } = resolved;
  if (cluster.channel !== slack.channel_id) {
    return {
      ok: false,
      reason: `${what} on *${cluster.name}* is taken only in its maintenance channel <#${cluster.channel}>, so its audit thread lives there. Nothing was started.`,
    };
  }
  const refusal = await operatorRefusal(deps, slack, cluster, what);
  return refusal === undefined ? resolved : { ok: false, reason: refusal };
}

/** Undefined when the user is one of the cluster's operators, else the refusal. */
export async function operatorRefusal(
  deps: CommandDeps,
  slack: SlashCommand,
  cluster: ClusterConfig,
  what: string,
): Promise<string | undefined> {
  if (await deps.authorizer.isMember(slack.user_id, cluster.operators)) return undefined;
  return `Only operators of *${cluster.name}* may start ${what}. Ask one of them, or have yourself added to \`operators\` in the inventory. Nothing was started.`;
}

/** Refuses when another operation holds the cluster: one mutating operation at a time. */
export async function lockHeldReason(deps: CommandDeps, cluster: ClusterConfig): Promise<string | undefined> {
  const holder = await deps.lock.holder(cluster.name);
  if (holder === undefined) return undefined;
  return `*${cluster.name}* is held by ${await operationRefById(deps, holder)}; one mutating operation at a time. See \`/talos status\`, or \`/talos cancel ${holder}\`. Nothing was started.`;
}

/**
 * A mutating command's reply names its new operation before the operation has a message to link
 * to: the reply is sent while the preflight is only queued. So the reply says where the plan will
 * appear (this channel, the only one that takes the command) and the plan is the operation's own
 * message; from then on `/talos status` and every message naming the operation link to it. A
 * second private message with the link once the plan is posted would cost Slack two more calls
 * per operation for a message that appears right below the command.
 */
export function newOperation(
  deps: CommandDeps,
  kind: OperationKind,
  cluster: ClusterConfig,
  slack: SlashCommand,
  state: Operation['state'],
  version?: string,
): Operation {
  return createOperation({
    kind,
    cluster: cluster.name,
    channel: cluster.channel,
    requestedBy: slack.user_id,
    createdAt: deps.now().toISOString(),
    state,
    target: version ? { version } : {},
  });
}
