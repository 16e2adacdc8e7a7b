import type { Presentation } from '../../../src/chat/presentation.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { SNAPSHOT_LABEL } from '../shared/step-texts.ts';

/** The steps of an etcd restore rehearsal, in order. */
export type EtcdRestoreStepKind = 'snapshot' | 'verify-snapshot' | 'reset' | 'wait-bootstrap' | 'bootstrap' | 'watch-back' | 'gate';

/** One step as the root message, the status and the audit name it. */
export function etcdRestoreStepLabel(step: Step): string {
  switch (step.kind) {
    case 'snapshot':
      return `fresh ${SNAPSHOT_LABEL}`;
    case 'verify-snapshot':
      return "the snapshot checked by the bot: size, sha256 and etcd's own trailing hash";
    case 'reset':
      return 'reset every control plane, EPHEMERAL wiped (talosctl reset --graceful=false --reboot --system-labels-to-wipe=EPHEMERAL)';
    case 'wait-bootstrap':
      return 'wait until etcd waits for bootstrap on every control plane (service etcd: Preparing)';
    case 'bootstrap':
      return `talosctl bootstrap --recover-from the snapshot, once, on ${step.node ?? 'the first control plane'}`;
    case 'watch-back':
      return 'watch the cluster come back: etcd members, Kubernetes Nodes, Flux, Longhorn volumes';
    default:
      return 'health gate against the baseline taken before the rehearsal';
  }
}

/** How an etcd restore rehearsal reads in Slack. */
export const etcdRestoreTexts: Presentation = {
  name: 'etcd restore rehearsal',
  title: (op) => `etcd restore rehearsal: ${op.cluster}`,
  order: 'one at a time; the resets after two approvers approve',
  gates: '',
  startTitle: 'Rehearse the etcd restore?',
  reviewItems: [],
  context: (op) =>
    op.snapshot
      ? `Restores \`${op.snapshot.id}\` (revision ${op.snapshot.revision}). Staging only: its etcd is destroyed on purpose.`
      : 'Staging only: its etcd is destroyed on purpose and restored from a fresh, verified snapshot.',
  stepLabel: etcdRestoreStepLabel,
  plannedGates: (step) => (step.kind === 'reset' ? ' · two approvers' : undefined),
  approval: {
    verb: 'Approve',
    subject: (op) => `the reset of every control plane of ${op.cluster}, wiping etcd, to restore ${op.snapshot?.id ?? 'the snapshot'}`,
    headline: (op) => ({ what: 'etcd restore rehearsal', ask: `wipe etcd on every control plane of ${op.cluster}` }),
    effect: () =>
      'talosctl reset --graceful=false --reboot --system-labels-to-wipe=EPHEMERAL on every control plane: etcd is gone until the bot restores the snapshot.',
  },
};
