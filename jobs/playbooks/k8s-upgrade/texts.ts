import type { Presentation } from '../../../src/chat/presentation.ts';
import { STAGING_REVIEW_ITEM, UPGRADE_REHEARSAL } from '../../../src/chat/rehearsal-message.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { SNAPSHOT_LABEL, snapshotNote } from '../shared/step-texts.ts';

/** The steps of a Kubernetes upgrade: a snapshot, the dry run, the approved apply, the final check. */
export type K8sUpgradeStepKind = 'snapshot' | 'k8s-dry-run' | 'k8s-apply' | 'k8s-verify';

/** The runbook's review items before a Kubernetes upgrade; the dry run shows deprecated APIs, the rest is for people. */
export const K8S_REVIEW_ITEMS = ['removed and deprecated APIs reviewed (the dry run also lists what it finds)', STAGING_REVIEW_ITEM];

/** A Kubernetes upgrade's step: `dry run: talosctl upgrade-k8s --dry-run on 10.0.30.11`. */
export function k8sUpgradeStepLabel(step: Step): string {
  const cp = step.node ?? 'a healthy control plane';
  if (step.kind === 'snapshot') return SNAPSHOT_LABEL;
  if (step.kind === 'k8s-dry-run') return `dry run: talosctl upgrade-k8s --dry-run on ${cp}`;
  if (step.kind === 'k8s-apply') return `upgrade: talosctl upgrade-k8s on ${cp}`;
  return 'verify every node reports the target kubelet version, final health gate';
}

/** How a Kubernetes upgrade reads in Slack. */
export const k8sUpgradeTexts: Presentation = {
  name: 'Kubernetes upgrade',
  title: (op) => `Kubernetes upgrade ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}: ${op.cluster}`,
  order: "snapshot, dry run, an approver's Apply, then the whole cluster at once",
  gates:
    'health gate before the snapshot and after the upgrade; the dry run on one healthy control plane is posted here before an approver applies; every node must then report the target kubelet version.',
  startTitle: 'Start the Kubernetes upgrade?',
  reviewItems: K8S_REVIEW_ITEMS,
  context: (op) => {
    const v = op.target.version ?? '?';
    const talos = op.target.talosVersion ? ` · Talos ${op.target.talosVersion}` : '';
    return `Version: the CLI takes \`${v}\` (\`talosctl upgrade-k8s --to ${v}\`, no leading v); Terraform's \`talos_kubernetes_version\` takes \`v${v}\` (leading v)${talos}${snapshotNote(op)}`;
  },
  stepLabel: k8sUpgradeStepLabel,
  plannedGates: (step) => (step.kind === 'k8s-apply' ? " · an approver's Apply" : undefined),
  approval: {
    verb: 'Apply',
    subject: (op) => `the Kubernetes upgrade of ${op.cluster} ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}`,
    headline: (op) => ({ what: 'Kubernetes upgrade', ask: `Kubernetes ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}` }),
  },
  rehearsal: UPGRADE_REHEARSAL,
};
