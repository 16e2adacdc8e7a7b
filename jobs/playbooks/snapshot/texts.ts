import type { Presentation } from '../../../src/chat/presentation.ts';
import { SNAPSHOT_LABEL } from '../shared/step-texts.ts';
import { snapshotRootText } from './root-text.ts';

/** How an etcd snapshot reads in Slack. */
export const snapshotTexts: Presentation = {
  name: 'etcd snapshot',
  title: (op) => `etcd snapshot: ${op.cluster}`,
  order: 'one step',
  gates: '',
  startTitle: 'Start?',
  reviewItems: [],
  context: (op) => (op.snapshot ? `Snapshot \`${op.snapshot.id}\`` : undefined),
  stepLabel: () => SNAPSHOT_LABEL,
  rootText: snapshotRootText,
};
