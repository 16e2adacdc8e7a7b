import type { GateReport } from '../health/health-gate.ts';
import type { SnapshotPruning } from '../rules/snapshot-retention.ts';
import type { GateVerdict, verdictChange } from '../rules/gate-verdict-change.ts';
import type { Snapshot } from '../ops/operation.ts';
import type { ChatMessage } from '../port/chat-port.ts';
import { context, escapeMrkdwn, formatTime, section } from './blocks.ts';

type Change = NonNullable<ReturnType<typeof verdictChange>>;

const checkList = (ids: readonly string[]): string => (ids.length === 0 ? 'none' : ids.join(', '));

/**
 * A scheduled gate's verdict changed (or is the first one): the new verdict leads, then what it
 * was and since when; the checks follow in the thread, as for `/talos health`.
 */
export function scheduledGateChangeMessage(
  cluster: string,
  change: Change,
  next: { verdict: GateVerdict; report?: GateReport; error?: string },
  previous: { verdict: GateVerdict; changedAt: string } | undefined,
): ChatMessage {
  const icon = next.verdict.passed ? '✅' : '❌';
  const was =
    previous === undefined
      ? ''
      : ` (${previous.verdict.passed ? 'passing' : `failing on ${checkList(previous.verdict.failing)}`} since ${formatTime(previous.changedAt)})`;
  const headline =
    next.error !== undefined
      ? `${icon} Scheduled health gate could not run on ${cluster}: ${next.error}`
      : change === 'first'
        ? `${icon} Scheduled health gate of ${cluster} ${next.verdict.passed ? 'passes' : 'fails'}`
        : change === 'recovered'
          ? `${icon} Scheduled health gate of ${cluster} passes again`
          : change === 'failing'
            ? `${icon} Scheduled health gate of ${cluster} now fails`
            : `${icon} Scheduled health gate of ${cluster} still fails, on other checks now`;
  const stops = next.report !== undefined && !next.report.passed ? ` Blocking: ${next.report.stopReasons.join('; ')}` : '';
  const text = `${headline}${was}.${stops}`;
  const blocks = [section(escapeMrkdwn(headline) + was)];
  if (stops !== '') blocks.push(section(`*Blocking:*\n${next.report!.stopReasons.map((r) => `• ${escapeMrkdwn(r)}`).join('\n')}`));
  blocks.push(
    context(
      change === 'first'
        ? 'Scheduled gates post here only when the verdict changes.' + (next.report ? ' One reply per check in the thread.' : '')
        : `Failing checks: ${checkList(next.verdict.failing)}.` + (next.report ? ' One reply per check in the thread.' : ''),
    ),
  );
  return { text, blocks };
}

/**
 * An operation holds the cluster: the scheduled gate stops judging it until the operation ends, and
 * says so once. The verdict from before the operation is the one the next judgement compares with.
 */
/**
 * The scheduled gate's word on drift from what Terraform declares, when it appears, changes or clears:
 * it is a warning (nothing fails), but every plan is refused until Terraform declares what runs.
 */
export function scheduledDriftMessage(
  cluster: string,
  change: { appeared: string[] } | { cleared: string[] },
  fixes: readonly string[],
): ChatMessage {
  const text =
    'appeared' in change
      ? `⚠️ ${cluster} drifts from what Terraform declares: ${change.appeared.join('; ')}. Nothing fails, but every plan is refused until Terraform declares what runs. To clear it, ${fixes.join('; and ')}.`
      : `✅ ${cluster} runs what Terraform declares again (it drifted: ${change.cleared.join('; ')}).`;
  return {
    text,
    blocks: [
      section(escapeMrkdwn(text)),
      context('From the scheduled health gate, check `declared-versions`. `/talos status` shows it too.'),
    ],
  };
}

export function scheduledGateHeldMessage(
  cluster: string,
  opId: string,
  previous: { verdict: GateVerdict; changedAt: string } | undefined,
): ChatMessage {
  const before =
    previous === undefined
      ? 'no verdict before it'
      : `${previous.verdict.passed ? 'passing' : `failing on ${checkList(previous.verdict.failing)}`} since ${formatTime(previous.changedAt)}`;
  const text = `⏸ Operation ${opId} holds ${cluster}: the scheduled health gate does not judge it until the operation ends, then compares with the verdict before it (${before}).`;
  return {
    text,
    blocks: [section(escapeMrkdwn(text)), context('The operation reports its own checks in its thread. `/talos health` runs a gate now.')],
  };
}

/** The daily summary: the verdict, its last change, and how many scheduled gates ran since the last summary. */
export function scheduledGateSummaryMessage(
  cluster: string,
  last: { verdict: GateVerdict; changedAt: string; lastRunAt: string } | undefined,
  counts: { runs: number; failed: number },
): ChatMessage {
  const verdict =
    last === undefined
      ? 'no scheduled gate has run yet'
      : `${last.verdict.passed ? '✅ passing' : `❌ failing on ${checkList(last.verdict.failing)}`} since ${formatTime(last.changedAt)}, last run ${formatTime(last.lastRunAt)}`;
  const text = `📋 Daily health summary of ${cluster}: ${verdict}; ${counts.runs} scheduled gate${counts.runs === 1 ? '' : 's'} since the last summary, ${counts.failed} failed.`;
  return { text, blocks: [section(text)] };
}

/** The root of a day's thread of scheduled snapshots: one per cluster and day keeps the channel quiet. */
export function snapshotThreadMessage(cluster: string, day: string): ChatMessage {
  const text = `🗄️ Scheduled etcd snapshots of ${cluster} on ${day} (UTC): each snapshot and each pruning is recorded in this thread.`;
  return { text, blocks: [section(text)] };
}

/** A scheduled snapshot taken, with what retention pruned and why. */
export function scheduledSnapshotMessage(snapshot: Snapshot, pruning: SnapshotPruning): ChatMessage {
  const taken = `✅ etcd snapshot \`${snapshot.id}\` (${snapshot.bytes} bytes, sha256 ${snapshot.sha256.slice(0, 12)}…, revision ${snapshot.revision}, from ${snapshot.node})`;
  const pruned =
    pruning.pruned.length === 0
      ? `nothing pruned (${pruning.rule}; ${pruning.kept.length} kept)`
      : `pruned ${pruning.pruned.length} (${pruning.rule}; ${pruning.kept.length} kept): ${pruning.pruned.map((p) => `\`${p.file}\``).join(', ')}`;
  const text = `${taken}; ${pruned}.`;
  return { text, blocks: [section(text)] };
}

export function scheduledSnapshotFailedMessage(cluster: string, reason: string): ChatMessage {
  // A reason that ends its own sentence (an error with its hint) keeps one period.
  const text = `❌ Scheduled etcd snapshot of ${cluster} failed: ${reason.replace(/\.$/, '')}. Nothing was pruned.`;
  return { text, blocks: [section(escapeMrkdwn(text))] };
}
