import type { Operation } from '../../../src/ops/operation.ts';
import type { UpgradeK8sReport } from '../../../src/talos/parse-upgrade-k8s.ts';
import { context, escapeMrkdwn, formatDuration, preformatted, section } from '../../../src/chat/blocks.ts';
import type { ChatMessage } from '../../../src/port/chat-port.ts';

/** Dry-run output longer than this goes into a file: a thread full of manifest lines hides the warnings. */
export const INLINE_OUTPUT_LINES = 40;

/** The deprecated-API findings of an upgrade-k8s run, one line each, or an empty list. */
export function deprecationLines(report: UpgradeK8sReport): string[] {
  return [...report.deprecationWarnings, ...report.deprecatedResources.map((r) => `${r.resource}: ${r.count}`)];
}

/** What upgrade-k8s's pre-upgrade checks found that the target removes, one line each, or an empty list. */
export function removedLines(report: UpgradeK8sReport): string[] {
  return [
    ...report.removed.resources.map((r) => `${r.resource}: ${r.count} object(s) stored in this removed API version`),
    ...report.removed.items.map((i) => `${i.node}: ${i.component} runs with the removed ${i.kind} ${i.name}`),
  ];
}

/**
 * Why an upgrade-k8s run that found removed APIs or flags stopped, and what to do: it refuses
 * them even in a dry run, so nothing was changed.
 */
export function removedFindingsReason(what: string, version: string, report: UpgradeK8sReport): string | undefined {
  const parts: string[] = [];
  if (report.removed.resources.length > 0)
    parts.push(
      `the cluster still stores objects in API versions that Kubernetes ${version} removes (${report.removed.resources.map((r) => `${r.resource}: ${r.count}`).join(', ')})`,
    );
  if (report.removed.items.length > 0)
    parts.push(
      `components run with ${report.removed.items.length} flag(s) that Kubernetes ${version} removes (${report.removed.items.map((i) => `${i.name} on ${i.component} of ${i.node}`).join(', ')})`,
    );
  if (parts.length === 0) return undefined;
  return `${what} refused the upgrade: ${parts.join('; and ')}. Nothing was changed. Migrate those objects to a served API version and drop those flags from the machine configuration (Terraform), then Retry`;
}

/** One sentence summing up a dry run, also kept as the step's detail. */
export function dryRunSummary(report: UpgradeK8sReport, node: string): string {
  const components = report.components.map((c) => c.name).join(', ') || 'none';
  const kinds = report.deprecatedResources.length;
  const warnings =
    kinds > 0
      ? `DEPRECATED APIs IN USE: ${kinds} resource kind(s)`
      : report.deprecationWarnings.length > 0
        ? `${report.deprecationWarnings.length} deprecation warning(s)`
        : 'no deprecated-API warnings';
  return `on ${node}: ${report.fromVersion ?? '?'} → ${report.toVersion ?? '?'}, ${report.controlPlanes.length} control plane(s), ${report.workers.length} worker(s); would update ${components}; ${warnings}`;
}

/** The dry run in the thread: the summary, the deprecated APIs called out, and the output inline or as an attached file. */
export function dryRunMessage(
  op: Operation,
  report: UpgradeK8sReport,
  node: string,
  output: { lines: string[]; file?: string },
): ChatMessage {
  const text = `📋 Dry run of \`talosctl upgrade-k8s --to ${op.target.version ?? '?'}\` ${dryRunSummary(report, node)}`;
  const blocks = [section(escapeMrkdwn(text))];
  const deprecated = deprecationLines(report);
  if (deprecated.length > 0) {
    blocks.push(
      section(
        `⚠️ *Deprecated or removed APIs found — migrate these before Apply:*\n${deprecated.map((d) => `• ${escapeMrkdwn(d)}`).join('\n')}`,
      ),
    );
  }
  blocks.push(
    output.file ? context(`Full output (${output.lines.length} lines) attached as \`${output.file}\`.`) : preformatted(output.lines),
  );
  return { text, blocks };
}

/** What the live upgrade-k8s run has shown so far. */
export interface UpgradeProgress {
  version: string;
  node: string;
  /** Milestone lines in order, e.g. `updating "kube-apiserver" to version "1.34.2"`. */
  milestones: string[];
  /** `successfully updated` lines seen. */
  updated: number;
  lines: number;
  outcome: 'running' | 'done' | 'failed';
  elapsedMs: number;
}

/** The one progress message of an upgrade-k8s run, edited in place rather than posting every line. */
export function upgradeProgressMessage(p: UpgradeProgress): ChatMessage {
  const icon = p.outcome === 'running' ? '⏳' : p.outcome === 'done' ? '✅' : '❌';
  const state = p.outcome === 'running' ? 'running' : p.outcome === 'done' ? 'finished' : 'failed';
  const text = `${icon} talosctl upgrade-k8s --to ${p.version} on ${p.node} ${state} (${formatDuration(p.elapsedMs)}, ${p.updated} update(s) done, ${p.lines} lines of output)`;
  const milestones = p.milestones.map(
    (m, i) => `${i === p.milestones.length - 1 && p.outcome === 'running' ? '⏳' : '✔️'} ${escapeMrkdwn(m)}`,
  );
  return { text, blocks: [section(escapeMrkdwn(text)), ...(milestones.length > 0 ? [section(milestones.join('\n'))] : [])] };
}

/** The runbook's Terraform follow-up of a Kubernetes upgrade: the declaration with its leading v, then a plan checked for downgrades. */
export function k8sTerraformFollowUp(op: Operation, declaration?: string): ChatMessage {
  const v = op.target.version ?? '?';
  const lines = [
    `*Terraform follow-up* (runbook, now that every node reports ${v}):`,
    `1. ${declaration ?? `Set \`talos_kubernetes_version = "v${v}"\` in the ${op.cluster} inventory`} — with the leading v (the CLI took \`${v}\` without it).`,
    `2. Commit it and run \`/talos plan\`: the bot offers it only if it declares exactly v${v}, which every node runs, and refuses any plan that downgrades Kubernetes below it.`,
    '3. Apply it to remove the drift.',
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
