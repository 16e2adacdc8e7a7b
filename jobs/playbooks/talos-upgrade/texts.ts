import type { Presentation } from '../../../src/chat/presentation.ts';
import { positionOf } from '../../../src/chat/approval-messages.ts';
import { STAGING_REVIEW_ITEM, UPGRADE_REHEARSAL } from '../../../src/chat/rehearsal-message.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { continuationOf } from '../../../src/ops/upgrade-continuation.ts';
import { nodeRef, nodeWithHost, SNAPSHOT_LABEL, snapshotNote } from '../shared/step-texts.ts';
import { shortHashes } from '../../../src/chat/short-hashes.ts';

/** The steps of a Talos upgrade: a snapshot, each node (workers first), the final check. */
export type TalosUpgradeStepKind = 'snapshot' | 'upgrade-worker' | 'upgrade-control-plane' | 'verify';

/** The review item the bot's records can answer: its guided form ticks it when the only target offered was upgraded on staging. */
export const REHEARSED_ITEM = STAGING_REVIEW_ITEM;

/** The runbook's review items the starter confirms (Upgrade Talos 1–2); the bot cannot check them itself. */
export const REVIEW_ITEMS = [
  'Talos release notes reviewed',
  'support matrix checked (Talos ⇄ Kubernetes)',
  'Cilium compatibility checked',
  'system-extension compatibility checked',
  STAGING_REVIEW_ITEM,
];

const role = (step: Step): string => (step.kind === 'upgrade-control-plane' ? 'control plane' : 'worker');

/** A Talos upgrade's step: `etcd snapshot, …`, `control plane talos-cp-1 (10.0.30.11, host pve-1)`. */
export function talosUpgradeStepLabel(step: Step): string {
  if (step.kind === 'snapshot') return SNAPSHOT_LABEL;
  if (step.kind === 'verify') return 'verify every node runs the target, final health gate';
  return `${role(step)} ${nodeWithHost(step)}`;
}

const PLANNED_GATES: Partial<Record<TalosUpgradeStepKind, string>> = {
  'upgrade-control-plane': ' · approval · etcd quorum before and after · health gate',
  'upgrade-worker': ' · health gate',
};

/**
 * A finished node step in a few words, from its detail (`now v1.13.9 and Ready; etcd: leader … 3/3 members agree …;
 * health gate passed …`): `v1.13.9, Ready, etcd 3/3, gate passed`. A detail of another shape is shown as it is.
 */
export function nodeResultWords(step: Step): string {
  const detail = step.detail ?? '';
  const version = /\bnow (v\S+?)(?:\s|$)/.exec(detail)?.[1];
  if (version === undefined) return detail;
  const etcd = /(\d+)\/(\d+) members agree/.exec(detail);
  return [
    version,
    ...(/\band Ready\b/.test(detail) ? ['Ready'] : []),
    ...(etcd ? [`etcd ${etcd[1]}/${etcd[2]}`] : []),
    ...(/health gate passed/.test(detail) ? ['gate passed'] : []),
  ].join(', ');
}

/** How a Talos upgrade reads in Slack. */
export const talosUpgradeTexts: Presentation = {
  name: 'Talos upgrade',
  title: (op) =>
    `Talos upgrade ${op.target.fromVersion ?? '?'} → ${op.target.version ?? '?'}${continuationOf(op) === undefined ? '' : ' (continued)'}: ${op.cluster}`,
  order: 'workers first, then control planes, one node at a time',
  gates:
    'health gate before starting and after every node; etcd quorum and a single leader before and after each control plane; Longhorn volumes healthy before the next node.',
  startTitle: 'Start the upgrade?',
  reviewItems: REVIEW_ITEMS,
  context: (op) => {
    const image = op.steps.find((s) => s.image)?.image;
    return image ? `Installer image: \`${shortHashes(image)}\`${snapshotNote(op)}` : undefined;
  },
  stepLabel: talosUpgradeStepLabel,
  plannedGates: (step) => PLANNED_GATES[step.kind as TalosUpgradeStepKind],
  approval: {
    verb: 'Approve',
    subject: (op, step) => `the upgrade of ${role(step)} ${nodeRef(step)} to ${op.target.version ?? '?'}`,
    headline: (op, step) => ({
      what: `${role(step)} ${positionOf(op, step)}`,
      ask: `${step.nodeName ?? step.node ?? '?'} → Talos ${op.target.version ?? '?'}`,
    }),
    result: nodeResultWords,
    covers: (count) => (count === 1 ? 'this control plane' : `all ${count} control planes`),
  },
  rehearsal: UPGRADE_REHEARSAL,
};
