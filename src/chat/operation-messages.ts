import type { Approval, Operation, Step } from '../ops/operation.ts';
import type { UpgradeK8sReport } from '../talos/parse-upgrade-k8s.ts';
import { actions, context, escapeMrkdwn, fields, formatDuration, formatTime, mentionUser, preformatted, section } from './blocks.ts';
import type { ChatMessage } from './chat-port.ts';
import { ACTION, buttonValue } from './upgrade-messages.ts';

/** Dry-run output longer than this goes into a file: a thread full of manifest lines hides the warnings. */
export const INLINE_OUTPUT_LINES = 40;

/** The deprecated-API findings of an upgrade-k8s run, one line each, or an empty list. */
export function deprecationLines(report: UpgradeK8sReport): string[] {
  return [...report.deprecationWarnings, ...report.deprecatedResources.map((r) => `${r.resource}: ${r.count}`)];
}

/** One sentence summing up a dry run, also kept as the step's detail. */
export function dryRunSummary(report: UpgradeK8sReport, node: string): string {
  const components = report.components.map((c) => c.name).join(', ') || 'none';
  const kinds = report.deprecatedResources.length;
  const warnings =
    kinds > 0 ? `DEPRECATED APIs IN USE: ${kinds} resource kind(s)` : report.deprecationWarnings.length > 0 ? `${report.deprecationWarnings.length} deprecation warning(s)` : 'no deprecated-API warnings';
  return `on ${node}: ${report.fromVersion ?? '?'} → ${report.toVersion ?? '?'}, ${report.controlPlanes.length} control plane(s), ${report.workers.length} worker(s); would update ${components}; ${warnings}`;
}

/** The dry run in the thread: the summary, the deprecated APIs called out, and the output inline or as an attached file. */
export function dryRunMessage(op: Operation, report: UpgradeK8sReport, node: string, output: { lines: string[]; file?: string }): ChatMessage {
  const text = `📋 Dry run of \`talosctl upgrade-k8s --to ${op.target.version ?? '?'}\` ${dryRunSummary(report, node)}`;
  const blocks = [section(escapeMrkdwn(text))];
  const deprecated = deprecationLines(report);
  if (deprecated.length > 0) {
    blocks.push(section(`⚠️ *Deprecated or removed APIs found — migrate these before Apply:*\n${deprecated.map((d) => `• ${escapeMrkdwn(d)}`).join('\n')}`));
  }
  blocks.push(output.file ? context(`Full output (${output.lines.length} lines) attached as \`${output.file}\`.`) : preformatted(output.lines));
  return { text, blocks };
}

/** The question before the real upgrade-k8s run: an approver applies what the dry run showed. */
export function applyRequestMessage(op: Operation, approval: Approval, step: Step, dryRun: string | undefined): ChatMessage {
  const v = op.target.version ?? '?';
  const text = `🔐 Apply needed: \`talosctl upgrade-k8s --to ${v}\` through ${step.node ?? 'a healthy control plane'} upgrades the whole cluster ${op.target.fromVersion ?? '?'} → ${v} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      fields([
        ['From', op.target.fromVersion ?? '?'],
        ['To', `${v} (Terraform: \`v${v}\`)`],
        ['Snapshot', op.snapshot ? `\`${op.snapshot.id}\`` : 'none'],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      section(`*Dry run:* ${escapeMrkdwn(dryRun ?? 'see above')}`),
      actions(`apply-${op.id}-${approval.nonce}`, [
        {
          text: 'Apply',
          actionId: ACTION.apply,
          value: buttonValue(op.id, approval.nonce),
          style: 'primary',
          confirm: { title: 'Upgrade Kubernetes?', text: `talosctl upgrade-k8s --to ${v}: every control-plane component and kubelet of ${op.cluster}.`, confirm: 'Apply', deny: 'Not yet' },
        },
        { text: 'Cancel', actionId: ACTION.cancelApply, value: buttonValue(op.id, approval.nonce) },
      ]),
    ],
  };
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
  const milestones = p.milestones.map((m, i) => `${i === p.milestones.length - 1 && p.outcome === 'running' ? '⏳' : '✔️'} ${escapeMrkdwn(m)}`);
  return { text, blocks: [section(escapeMrkdwn(text)), ...(milestones.length > 0 ? [section(milestones.join('\n'))] : [])] };
}

/** The failure message once its Retry was clicked: the button goes, the record of who retried stays. */
export function retriedMessage(op: Operation, by: string, at: string): ChatMessage {
  const text = `🔁 Retry requested by ${mentionUser(by)} at ${formatTime(at)} (${op.id}); the failed step runs again.`;
  return { text, blocks: [section(text)] };
}

/** The question before a rollback or a removal: which node, where, and how etcd looks now. */
export function nodeApprovalMessage(op: Operation, approval: Approval, step: Step, facts: { summary: string; evidence: string[]; warning: string }): ChatMessage {
  const verb = op.kind === 'node-remove' ? 'reset and remove' : 'roll back';
  const text = `🔐 Approval needed: ${verb} ${step.nodeName ?? ''} (${step.node ?? '?'}) on ${op.cluster} (${op.id})`;
  return {
    text,
    blocks: [
      section(`*${escapeMrkdwn(text)}*`),
      fields([
        ['Node', `${step.nodeName ?? '?'} (${step.node ?? '?'})`],
        ['Host', step.host ?? 'unknown'],
        ['Runs', step.fromVersion ?? op.target.fromVersion ?? '?'],
        ['Expires', formatTime(approval.expiresAt)],
      ]),
      section(`*What happens:* ${escapeMrkdwn(facts.warning)}`),
      section(`*etcd now:* ${escapeMrkdwn(facts.summary)}`),
      ...(facts.evidence.length > 0 ? [preformatted(facts.evidence)] : []),
      actions(`approve-${op.id}-${approval.nonce}`, [
        { text: 'Approve', actionId: ACTION.approve, value: buttonValue(op.id, approval.nonce), style: 'primary' },
        { text: 'Stop', actionId: ACTION.stop, value: buttonValue(op.id, approval.nonce), style: 'danger' },
      ]),
    ],
  };
}

export function k8sTerraformFollowUp(op: Operation): ChatMessage {
  const v = op.target.version ?? '?';
  const lines = [
    `*Terraform follow-up* (runbook, now that every node reports ${v}):`,
    `1. Set \`talos_kubernetes_version = "v${v}"\` in the ${op.cluster} inventory — with the leading v (the CLI took \`${v}\` without it).`,
    '2. Run `tofu plan` and check it for accidental downgrades: no Kubernetes component may go back to an older version.',
    '3. Apply it to remove the drift.',
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}

export function rollbackFollowUp(op: Operation, node: string, version: string, others: string[]): ChatMessage {
  const lines = [
    `↩️ *${node} was rolled back:* it now runs ${version} (ran ${op.target.fromVersion ?? '?'}) and is Ready.`,
    ...(others.length > 0 ? [`Other nodes: ${others.join('; ')}.`] : []),
    '• Investigate the failure before trying the upgrade again.',
    '• Do not move the Terraform `talos_version` declaration until the incident is resolved. If you already changed it, revert that change before the next apply.',
  ];
  return { text: lines.join('\n'), blocks: [section(escapeMrkdwn(lines.join('\n')))] };
}

export function removalFollowUp(op: Operation, node: string, role: 'control plane' | 'worker'): ChatMessage {
  const lines = [
    `*Next (runbook):* ${node} is reset and out of the cluster; Terraform still declares it.`,
    `1. Remove the ${role} entry for ${node} from the ${op.cluster} \`talos_nodes\` inventory.`,
    '2. Run `tofu plan`: it must destroy only that VM. If it replaces `talos_machine_secrets` or any other VM, stop.',
    '3. Apply Terraform.',
    `4. Remove ${node} from \`${role === 'worker' ? 'workers' : 'controlPlanes'}\` in this bot's cluster inventory, or every health gate will look for it.`,
  ];
  return { text: lines.join('\n'), blocks: [section(lines.join('\n'))] };
}
