import { z } from 'zod';
import { errorText } from '../../../src/chat/error-text.ts';
import { matchingTalosctl } from '../../../src/cluster/matching-talosctl.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { Playbook } from '../../engine/playbook.ts';
import { snapshotCommand } from './command.ts';
import { snapshotTexts } from './texts.ts';
import { operationSnapshot } from '../shared/snapshot-step.ts';

/** Its one step: the snapshot taken, copied off-cluster and verified. */
const STEPS: readonly Step[] = [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }];

/**
 * `/talos snapshot`: an etcd snapshot copied off-cluster, verified, its identifier posted and
 * recorded. The request is its start. It changes nothing in the cluster, so it holds no lock and
 * runs while another operation holds the cluster (a stopped upgrade needs its backup most).
 */
export const snapshotPlaybook: Playbook = {
  command: snapshotCommand,
  startedBy: 'operators',
  heldByWindows: false,
  texts: snapshotTexts,
  data: z.undefined(),
  checks: { snapshotOffCluster: true },
  start: 'run',
  lock: 'none',
  preflight: () => Promise.resolve({ refusals: [], notes: [], steps: [...STEPS], target: {} }),
  needsApproval: () => false,
  approvalMessage: () => Promise.reject(new Error('an etcd snapshot asks no approval')),
  async runStep(ctx, op) {
    try {
      // The talosctl of the Talos the nodes run, or the closest one: as the scheduled snapshots take theirs.
      const talosctl = await matchingTalosctl(ctx.session, ctx.deps.timeouts.probeMs, ctx.signal);
      const snapshot = await operationSnapshot(ctx, op, talosctl);
      ctx.log.info({ snapshot: snapshot.id, node: snapshot.node, bytes: snapshot.bytes }, 'etcd snapshot taken');
      return {
        event: 'etcd snapshot verified',
        // The full sha256 and where it is stored are in the maintenance record, not the channel.
        detail: `${snapshot.id}: ${snapshot.bytes} bytes, sha256 ${snapshot.sha256.slice(0, 12)}…, revision ${snapshot.revision}, from ${snapshot.node}`,
      };
    } catch (error) {
      // A cancelled run is no failure: the run that holds the operation goes on.
      if (ctx.signal?.aborted) throw error;
      ctx.log.warn({ err: errorText(error) }, 'etcd snapshot failed');
      // Goes out with the stop's reply.
      await ctx.deps.audit.note(op.id, { actor: 'bot', event: 'etcd snapshot failed', detail: errorText(error) });
      throw error instanceof StepFailure ? error : new StepFailure(errorText(error));
    }
  },
  complete(_ctx, op) {
    const snapshot = op.snapshot;
    if (snapshot === undefined) return Promise.reject(new StepFailure('the snapshot step ended without a recorded snapshot'));
    const text = `✅ etcd snapshot \`${snapshot.id}\` verified: ${snapshot.bytes} bytes, sha256 \`${snapshot.sha256.slice(0, 12)}…\`, copied off-cluster; \`/talos record ${op.id}\` says where it is kept.`;
    return Promise.resolve({ validation: `sha256 ${snapshot.sha256}`, followUp: { text } });
  },
  // Taking it again is a new `/talos snapshot`: nothing of this one is left to resume.
  retryFrom: () => undefined,
};
