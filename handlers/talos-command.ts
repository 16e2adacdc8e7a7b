import type { App, SlashCommand } from '@slack/bolt';
import type { Queue } from 'bullmq';
import { statusText } from '../src/chat/status-message.ts';
import { resolveCluster, type ClusterConfig, type Inventory } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import type { ClusterLock } from '../src/ops/cluster-lock.ts';
import type { DeliveryDedupe } from '../src/ops/delivery-dedupe.ts';
import { newOperationId, type Operation, type OperationKind } from '../src/ops/operation.ts';
import type { OperationStore } from '../src/ops/operation-store.ts';
import { HealthJobData, jobIdFor } from '../src/queue/job-schemas.ts';
import { parseTalosVersionInput } from '../src/rules/versions.ts';
import type { Authorizer } from './authorize.ts';
import { cancelOperation } from './cancel-operation.ts';
import { HELP_TEXT, parseCommand, type Command } from './parse-command.ts';

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

/** What a subcommand answers at once (ephemeral), and the work it leaves for a job. */
interface Outcome {
  reply: string;
  enqueue?: () => Promise<unknown>;
}

type Resolved = { ok: true; cluster: ClusterConfig } | { ok: false; reason: string };

function clusterFor(deps: CommandDeps, slack: SlashCommand, name: string | undefined): Resolved {
  const owns = deps.inventory.clusters.some((c) => c.channel === slack.channel_id);
  if (!owns) {
    const names = deps.inventory.clusters.map((c) => `${c.name} (<#${c.channel}>)`).join(', ');
    return { ok: false, reason: `This channel belongs to no cluster, so \`/talos\` does nothing here. Use a maintenance channel: ${names}.` };
  }
  return resolveCluster(deps.inventory, slack.channel_id, name);
}

/** A mutating command is taken only from its cluster's own channel, from one of its operators. */
async function operatorCluster(deps: CommandDeps, slack: SlashCommand, name: string | undefined, what: string): Promise<Resolved> {
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

function newOperation(deps: CommandDeps, kind: OperationKind, cluster: ClusterConfig, slack: SlashCommand, state: Operation['state'], version?: string): Operation {
  return {
    id: newOperationId(),
    kind,
    cluster: cluster.name,
    channel: cluster.channel,
    requestedBy: slack.user_id,
    createdAt: deps.now().toISOString(),
    state,
    revision: 0,
    target: version ? { version } : {},
    steps: [],
    approvals: [],
    refusals: [],
    audit: [],
    confirmedReview: [],
  };
}

const JOB_OPTIONS = { removeOnComplete: 1000, removeOnFail: 1000 };

async function dispatch(command: Command, slack: SlashCommand, deps: CommandDeps): Promise<Outcome> {
  switch (command.kind) {
    case 'help':
      return { reply: HELP_TEXT };
    case 'health': {
      const resolved = clusterFor(deps, slack, command.cluster);
      if (!resolved.ok) return { reply: resolved.reason };
      const data = HealthJobData.parse({ cluster: resolved.cluster.name, channel: slack.channel_id, requestedBy: slack.user_id, requestedAt: deps.now().toISOString() });
      return {
        reply: `Running the health gate on *${resolved.cluster.name}*; the verdict appears in this channel in a few seconds.`,
        // The trigger id is unique per invocation, so a redelivered command maps to the same job.
        enqueue: () => deps.readQueue.add('health', data, { ...JOB_OPTIONS, jobId: jobIdFor('health', slack.trigger_id) }),
      };
    }
    case 'snapshot': {
      const resolved = await operatorCluster(deps, slack, command.cluster, 'an etcd snapshot');
      if (!resolved.ok) return { reply: resolved.reason };
      const op = newOperation(deps, 'snapshot', resolved.cluster, slack, 'running');
      return {
        reply: `Taking an etcd snapshot of *${resolved.cluster.name}* (\`${op.id}\`).`,
        enqueue: async () => {
          await deps.store.create(op);
          await deps.opsQueue.add('snapshot', { opId: op.id }, { ...JOB_OPTIONS, jobId: `${op.id}-snapshot` });
        },
      };
    }
    case 'upgrade-talos': {
      const version = parseTalosVersionInput(command.version);
      if (!version.ok) return { reply: `${version.reason}. Nothing was started.` };
      const resolved = await operatorCluster(deps, slack, command.cluster, 'a Talos upgrade');
      if (!resolved.ok) return { reply: resolved.reason };
      const holder = await deps.lock.holder(resolved.cluster.name);
      if (holder !== undefined) {
        return { reply: `*${resolved.cluster.name}* is held by \`${holder}\`; one mutating operation at a time. See \`/talos status\`, or \`/talos cancel ${holder}\`. Nothing was started.` };
      }
      const op = newOperation(deps, 'talos-upgrade', resolved.cluster, slack, 'preflight', version.version);
      return {
        reply: `Preflight for the Talos upgrade of *${resolved.cluster.name}* to ${version.version} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
        enqueue: async () => {
          await deps.store.create(op);
          await deps.opsQueue.add('talos-upgrade-preflight', { opId: op.id }, { ...JOB_OPTIONS, jobId: `${op.id}-preflight` });
        },
      };
    }
    case 'status': {
      const clusters = deps.inventory.clusters.filter((c) => c.channel === slack.channel_id);
      const shown = clusters.length > 0 ? clusters : deps.inventory.clusters;
      const byCluster = await Promise.all(
        shown.map(async (c) => ({ cluster: c.name, holder: await deps.lock.holder(c.name), ops: await deps.store.listForCluster(c.name, 10) })),
      );
      return { reply: statusText(byCluster) };
    }
    case 'cancel': {
      const op = await deps.store.get(command.op);
      if (!op) return { reply: `There is no operation \`${command.op}\`. See \`/talos status\`.` };
      const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
      if (!cluster || cluster.channel !== slack.channel_id) return { reply: `\`${op.id}\` belongs to *${op.cluster}*; cancel it in <#${op.channel}>.` };
      if (!(await deps.authorizer.isMember(slack.user_id, [...cluster.operators, ...cluster.approvers]))) {
        return { reply: `Only operators and approvers of *${cluster.name}* may cancel its operations.` };
      }
      const result = await cancelOperation(deps, op.id, slack.user_id);
      return { reply: result.reply };
    }
    default:
      return { reply: `\`/talos ${command.kind.replace('-', ' ')}\` is not available in this version of the bot. See \`/talos help\`.` };
  }
}

/**
 * `/talos`: parse, authorize, ack at once with an ephemeral answer, then enqueue.
 * Nothing slow runs here; the jobs do the work and post to the channel.
 */
export function registerTalosCommand(app: App, deps: CommandDeps): void {
  app.command('/talos', async ({ command, ack, respond }) => {
    const log = deps.logger.child({ user: command.user_id, channel: command.channel_id });
    const parsed = parseCommand(command.text ?? '');
    if (!parsed.ok) {
      await ack({ text: parsed.reason });
      log.info({ reason: 'refused' }, 'command refused');
      return;
    }
    const outcome = await dispatch(parsed.command, command, deps);
    await ack({ text: outcome.reply });
    if (outcome.enqueue === undefined) return;
    try {
      // A redelivered command (Slack retry, second replica) is answered but never run twice.
      if (!(await deps.dedupe.claim(`cmd-${command.trigger_id}`))) return;
      await outcome.enqueue();
      log.info({ kind: parsed.command.kind }, 'command enqueued');
    } catch (error) {
      log.error({ err: (error as Error).message }, 'enqueue failed');
      await respond({ response_type: 'ephemeral', text: 'The bot could not queue that command (its Redis is unreachable). Nothing was started; try again in a minute.' });
    }
  });
}
