import type { Job } from 'bullmq';
import { section } from '../src/chat/blocks.ts';
import { errorText } from '../src/chat/error-text.ts';
import { matchingTalosctl } from '../src/cluster/matching-talosctl.ts';
import { takeEtcdSnapshot } from '../src/ops/etcd-snapshot.ts';
import { OperationJobData } from '../src/queue/job-schemas.ts';
import { clusterNamed, type OpsJobDeps } from './engine/job-context.ts';

/** `/talos snapshot`: an etcd snapshot copied off-cluster, verified, its identifier posted and recorded. */
export function createSnapshotJob(deps: OpsJobDeps) {
  return async (job: Job, signal?: AbortSignal): Promise<void> => {
    const { opId } = OperationJobData.parse(job.data);
    const op = await deps.store.get(opId);
    if (!op || op.state !== 'running') return;
    const cluster = clusterNamed(deps.inventory, op.cluster);
    const log = deps.logger.child({ op: opId, cluster: cluster.name });
    let rootTs = op.rootTs;
    if (rootTs === undefined) {
      const text = `⏳ etcd snapshot of ${cluster.name} requested by <@${op.requestedBy}> (${op.id})`;
      rootTs = (await deps.chat.post(op.channel, { text, blocks: [section(text)] }, { key: `${op.id}-root`, maybeSent: job.attemptsStarted > 1 })).ts;
      await deps.store.update(opId, (o) => ({ ...o, rootTs }));
    }
    try {
      const snapshot = await deps.access.withSession(cluster, signal, async (session) =>
        takeEtcdSnapshot(await matchingTalosctl(session, deps.timeouts.probeMs, signal), cluster, { signal, timeoutMs: deps.timeouts.stepMs, now: deps.now() }),
      );
      const endedAt = deps.now().toISOString();
      await deps.store.update(opId, (o) => ({ ...o, state: 'completed', snapshot, endedAt, validation: `sha256 ${snapshot.sha256}` }));
      log.info({ snapshot: snapshot.id, node: snapshot.node, bytes: snapshot.bytes }, 'etcd snapshot taken');
      const text = `✅ etcd snapshot of ${cluster.name}: \`${snapshot.id}\` (${op.id})`;
      // The snapshot is taken and recorded: a Slack failure here must not turn it into a failed one.
      await deps.chat.update(op.channel, rootTs, { text, blocks: [section(text)] }).catch((error: unknown) => log.warn({ err: errorText(error) }, 'snapshot message not updated'));
      await deps.audit.record(opId, {
        actor: 'bot',
        event: 'etcd snapshot verified',
        detail: `${snapshot.id}: ${snapshot.bytes} bytes, sha256 ${snapshot.sha256}, revision ${snapshot.revision}, from ${snapshot.node}, stored at ${snapshot.path}`,
      });
    } catch (error) {
      log.warn({ err: errorText(error) }, 'etcd snapshot failed');
      await deps.store.update(opId, (o) => ({ ...o, state: 'failed', reason: errorText(error), endedAt: deps.now().toISOString() }));
      const text = `❌ etcd snapshot of ${cluster.name} failed: ${errorText(error)} (${op.id})`;
      await deps.chat.update(op.channel, rootTs, { text, blocks: [section(text)] });
      await deps.audit.record(opId, { actor: 'bot', event: 'etcd snapshot failed', detail: errorText(error) });
    }
  };
}
