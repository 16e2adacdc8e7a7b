import type { ClusterConfig } from '../config/inventory.ts';
import type { GateReport } from '../health/health-gate.ts';
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
    `*What it reads instead:* nothing it kept is trusted. It runs the health gate on ${cluster.name} now and replies here with what it reads (etcd, nodes, Talos and Kubernetes versions); before it changes anything again, a new operation's preflight reads the cluster as it is.`,
    '*Refused until then:* every command and button that changes something (upgrade, rollback, remove, replace, plan, snapshot, Start, Approve, Retry, cancel).',
    `*How to go on:* check ${cluster.name} by hand against the runbook, fix Redis (AOF on, no eviction), then restart every replica once with \`REDIS_EPOCH_RESEED=true\` and remove it again (${RECOVERY}).`,
  ];
  return { text: lines[0]!, blocks: lines.map((l) => section(l)) };
}

/**
 * What the bot read of the cluster right after the loss, in the announcement's thread: the gate's verdict,
 * the versions the nodes report, and each check in one line, so the channel sees the cluster's state
 * without the bot's lost records.
 */
export function redisLostReadingMessage(report: GateReport): ChatMessage {
  const verdict = report.passed ? '✅ health gate passed' : `❌ health gate failed: ${report.stopReasons.map(escapeMrkdwn).join('; ')}`;
  const versions = report.versions;
  const lines = [
    `*Read now on ${report.cluster}:* ${verdict}.`,
    ...(versions === undefined
      ? []
      : [
          `Talos ${versions.talos.length === 0 ? 'not read' : versions.talos.join(', ')}; Kubernetes ${versions.kubernetes.length === 0 ? 'not read' : versions.kubernetes.join(', ')}.`,
        ]),
    ...report.checks.map((c) => `• ${escapeMrkdwn(c.title)}: ${c.status}, ${escapeMrkdwn(c.summary)}`),
  ];
  return { text: lines[0]!, blocks: [section(lines.join('\n'))] };
}

/** The reply when the cluster could not be read after the loss: nothing is known of it, and how to look. */
export function redisLostUnreadMessage(cluster: ClusterConfig, error: string): ChatMessage {
  const text = `*Read now on ${cluster.name}:* the health gate could not run (${escapeMrkdwn(error)}). Nothing is known of the cluster's state: run \`/talos health\` and look by hand before anything else.`;
  return { text, blocks: [section(text)] };
}
