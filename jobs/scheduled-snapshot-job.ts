import type { Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { errorText } from '../src/chat/error-text.ts';
import { scheduledSnapshotFailedMessage, scheduledSnapshotMessage, snapshotThreadMessage } from '../src/chat/schedule-messages.ts';
import { matchingTalosctl } from '../src/cluster/matching-talosctl.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import { takeEtcdSnapshot } from '../src/ops/etcd-snapshot.ts';
import { refuseSnapshotOnCluster } from '../src/ops/snapshot-placement.ts';
import { pruneSnapshots } from '../src/ops/snapshot-pruning.ts';
import type { ScheduledJobData } from '../src/queue/job-schemas.ts';
import { probeSignals, snapshotHost, type OpsJobDeps } from './engine/job-context.ts';

export interface ScheduledSnapshotJobDeps extends Pick<
  OpsJobDeps,
  'inventory' | 'access' | 'chat' | 'logger' | 'timeouts' | 'clock' | 'placement'
> {
  /** Where the day's thread of each cluster is remembered, and the run that holds a cluster's scheduled snapshot. */
  redis: Redis;
}

export type ScheduledSnapshotResult =
  { skipped: 'not-in-inventory' | 'snapshot-running' } | { snapshot: string; pruned: string[] } | { failed: string };

const threadKey = (cluster: string, day: string): string => `talos:schedule:snapshot-thread:${cluster}:${day}`;
const runKey = (cluster: string): string => `talos:schedule:snapshot-run:${cluster}`;

/** The thread of the cluster's scheduled snapshots on `day` (UTC): posted by the day's first snapshot, then found in Redis. */
async function dayThread(deps: ScheduledSnapshotJobDeps, cluster: ClusterConfig, day: string): Promise<string> {
  const known = await deps.redis.get(threadKey(cluster.name, day));
  if (known !== null) return known;
  const { ts } = await deps.chat.post(cluster.channel, snapshotThreadMessage(cluster.name, day), {
    key: `snapshots-${cluster.name}-${day}`,
    maybeSent: true,
  });
  // Two days: the thread of a day outlives the day, and the key never outlives the need.
  await deps.redis.set(threadKey(cluster.name, day), ts, 'EX', 2 * 86_400);
  return ts;
}

/**
 * A cluster's scheduled etcd snapshot: taken exactly as `/talos snapshot` takes one (which holds no
 * cluster lock: a snapshot changes nothing in the cluster, and a cluster held by a stopped upgrade
 * needs its backups most), then the cluster's retention applied to its snapshotDir. Each run is
 * one reply in the day's thread, naming what was pruned and by which rule, and one log line; a
 * failure is also shown in the channel. One scheduled snapshot per cluster at a time.
 */
export function createScheduledSnapshotJob(deps: ScheduledSnapshotJobDeps) {
  return async (job: Job<ScheduledJobData>, signal?: AbortSignal): Promise<ScheduledSnapshotResult> => {
    const { cluster: name } = job.data;
    const log = deps.logger.child({ op: job.id, cluster: name });
    const cluster = deps.inventory.clusters.find((c) => c.name === name);
    const schedule = cluster?.schedules?.snapshot;
    if (cluster === undefined || schedule === undefined) return { skipped: 'not-in-inventory' };
    const holder = String(job.id);
    const claimed = await deps.redis.set(runKey(name), holder, 'PX', deps.timeouts.stepMs + deps.timeouts.probeMs * 3 + 60_000, 'NX');
    if (claimed !== 'OK' && (await deps.redis.get(runKey(name))) !== holder) {
      log.info('scheduled etcd snapshot skipped: the previous one still runs');
      return { skipped: 'snapshot-running' };
    }
    try {
      const now = deps.clock.now();
      const thread = await dayThread(deps, cluster, now.toISOString().slice(0, 10));
      const once = { key: `${holder}-snapshot`, maybeSent: job.attemptsStarted > 1 };
      let snapshot;
      try {
        snapshot = await deps.access.withSession(cluster, signal, async (session) => {
          // The session's cluster: its nodes are the ones the bot must not run on. Looked at before a
          // talosctl is picked (or fetched), so a bot on the cluster hears why and nothing else.
          const host = snapshotHost(deps, session);
          await refuseSnapshotOnCluster(session.cluster, host, probeSignals(deps.timeouts.probeMs, signal)());
          return takeEtcdSnapshot(await matchingTalosctl(session, deps.timeouts.probeMs, signal), session.cluster, {
            signal,
            timeoutMs: deps.timeouts.stepMs,
            now,
            host,
          });
        });
      } catch (error) {
        log.warn({ err: errorText(error) }, 'scheduled etcd snapshot failed');
        await deps.chat.reply(cluster.channel, thread, scheduledSnapshotFailedMessage(name, errorText(error)), {
          ...once,
          broadcast: true,
        });
        return { failed: errorText(error) };
      }
      // Pruned only after a verified snapshot: retention never leaves fewer good snapshots than it found.
      const pruning = await pruneSnapshots(name, cluster.snapshotDir, schedule, deps.clock.now());
      log.info(
        {
          snapshot: snapshot.id,
          bytes: snapshot.bytes,
          rule: pruning.rule,
          kept: pruning.kept.length,
          pruned: pruning.pruned.map((p) => ({ file: p.file, reason: p.reason })),
        },
        pruning.pruned.length === 0 ? 'scheduled etcd snapshot taken' : 'scheduled etcd snapshot taken and old snapshots pruned',
      );
      await deps.chat.reply(cluster.channel, thread, scheduledSnapshotMessage(snapshot, pruning), once);
      return { snapshot: snapshot.id, pruned: pruning.pruned.map((p) => p.file) };
    } finally {
      await deps.redis.eval(RELEASE, 1, runKey(name), holder).catch(() => undefined);
    }
  };
}

const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;
