import type { ClusterConfig } from '../config/inventory.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { escapeMrkdwn, section } from './blocks.ts';

/** Where the recovery is written, as every message about the loss points to it. */
const RECOVERY = 'docs/operating.md, "Redis lost its data"';

/**
 * The answer to a command or a click that would change something once Redis lost the bot's data:
 * what happened, that nothing changed, and what to do.
 */
export function redisLostRefusal(reason: string): string {
  return `${escapeMrkdwn(reason)}. Nothing was changed. Check the cluster by hand, then an operator restarts the bot once with \`REDIS_EPOCH_RESEED=true\` (${RECOVERY}). \`/talos health\`, \`gates\` and \`status\` still answer.`;
}

/**
 * Told once in each cluster's channel when a replica notices the loss: what happened, what the bot no
 * longer knows, what it reads instead, what it refuses, and how to go on.
 */
export function redisLostMessage(cluster: ClusterConfig, reason: string): ChatMessage {
  const lines = [
    `:warning: *${cluster.name}*: the bot lost what it kept in Redis, so it changes nothing until an operator recovers it.`,
    `*What happened:* ${escapeMrkdwn(reason)}.`,
    `*What it no longer knows:* which operations were running or waiting on ${cluster.name}, who holds its cluster lock, and which approvals were given. A step that was running may have been half done; the threads in this channel still say what each operation did last.`,
    `*What it reads instead:* nothing it kept is trusted. Before it changes anything again, a new operation's preflight reads ${cluster.name} as it is now (etcd members and health, each node's Talos and Kubernetes version, the health gate). \`/talos health\` shows the cluster's state now.`,
    '*Refused until then:* every command and button that changes something (upgrade, rollback, remove, replace, plan, snapshot, Start, Approve, Retry, cancel).',
    `*How to go on:* check ${cluster.name} by hand against the runbook, fix Redis (AOF on, no eviction), then restart every replica once with \`REDIS_EPOCH_RESEED=true\` and remove it again (${RECOVERY}).`,
  ];
  return { text: lines[0]!, blocks: lines.map((l) => section(l)) };
}
