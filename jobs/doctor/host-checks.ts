import { randomBytes } from 'node:crypto';
import { rm, stat, statfs, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import { probeRedisAccess } from '../../src/queue/redis-access-probe.ts';
import { probeRedisDurability } from '../../src/queue/redis-durability-probe.ts';
import type { DoctorDeps } from './doctor.ts';

/** Below this a snapshot may not fit: an etcd database of a few hundred MiB, kept several times over. */
export const SNAPSHOT_SPACE_WARN_BYTES = 1024 ** 3;

function gib(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** Redis asks a password of anonymous clients, keeps its data across a restart (AOF) and never evicts (BullMQ needs `noeviction`). */
export async function redisCheck(deps: Pick<DoctorDeps, 'redis' | 'checkTimeoutMs'>): Promise<DoctorFinding[]> {
  const host = new URL(deps.redis.url).host;
  const [accessAnswer, durability] = await Promise.all([
    probeRedisAccess(deps.redis.url, Math.max(1000, deps.checkTimeoutMs / 2)).catch((error: unknown) => ({
      error: (error as Error).message,
    })),
    probeRedisDurability(deps.redis.client),
  ]);
  const findings: DoctorFinding[] = [];
  if (typeof accessAnswer === 'object')
    findings.push({ status: 'fail', check: 'Redis authentication', found: accessAnswer.error, fix: 'start Redis, or fix REDIS_URL' });
  else if (accessAnswer === 'open')
    findings.push({
      status: 'fail',
      check: 'Redis authentication',
      found: `the Redis at ${host} answers clients without a password: anyone who reaches it can forge approvals`,
      fix: 'set requirepass (or an ACL user) on the server and put the password in REDIS_URL',
    });
  else findings.push({ status: 'ok', check: 'Redis authentication', found: `the Redis at ${host} requires a password` });
  if ('refused' in durability) {
    findings.push({
      status: 'warn',
      check: 'Redis persistence and eviction',
      found: `the Redis at ${host} does not let the bot read its settings (${durability.refused})`,
      fix: 'check by hand that it runs with appendonly yes and maxmemory-policy noeviction',
    });
    return findings;
  }
  findings.push(
    durability.appendonly === 'yes'
      ? { status: 'ok', check: 'Redis persistence', found: 'AOF is on (appendonly yes)' }
      : {
          status: 'fail',
          check: 'Redis persistence',
          found: `AOF is off (appendonly ${durability.appendonly}): a restart loses the locks written since the last save`,
          fix: 'run Redis with appendonly yes',
        },
    durability.maxmemoryPolicy === 'noeviction'
      ? { status: 'ok', check: 'Redis eviction', found: 'maxmemory-policy is noeviction, as BullMQ needs' }
      : {
          status: 'fail',
          check: 'Redis eviction',
          found: `maxmemory-policy is ${durability.maxmemoryPolicy}: under memory pressure Redis drops keys, a cluster lock or a queued job among them`,
          fix: 'run Redis with maxmemory-policy noeviction',
        },
  );
  return findings;
}

/** The snapshot directory exists, takes a file, and has room for a snapshot. */
export async function snapshotDirCheck(cluster: ClusterConfig): Promise<DoctorFinding[]> {
  const base = { check: 'Snapshot directory', cluster: cluster.name };
  const dir = cluster.snapshotDir;
  const info = await stat(dir).catch(() => undefined);
  if (info === undefined) {
    return [
      {
        ...base,
        status: 'warn',
        found: `${dir} does not exist: the bot could not create it at start (its log says why), and a snapshot will try again`,
        fix: `mount a volume at ${dir} so snapshots outlive the pod`,
      },
    ];
  }
  if (!info.isDirectory())
    return [{ ...base, status: 'fail', found: `${dir} is not a directory`, fix: `point snapshotDir at a directory on a volume` }];
  // access() trusts the mode bits; a read-only mount says no only to a real write.
  const probe = join(dir, `.doctor-${randomBytes(4).toString('hex')}`);
  const refused = await writeFile(probe, '', { mode: 0o600 }).then(
    () => rm(probe, { force: true }).then(() => undefined),
    (error: unknown) => (error as NodeJS.ErrnoException).code ?? 'error',
  );
  if (refused !== undefined) {
    return [
      {
        ...base,
        status: 'fail',
        found: `${dir} is not writable (${refused}): snapshots fail`,
        fix: `make ${dir} writable by the bot's user, on a read-write volume`,
      },
    ];
  }
  const fs = await statfs(dir);
  const free = fs.bavail * fs.bsize;
  if (free < SNAPSHOT_SPACE_WARN_BYTES) {
    return [
      {
        ...base,
        status: 'warn',
        found: `${dir} is writable but has only ${gib(free)} free`,
        fix: 'grow the volume, or keep fewer snapshots (snapshotSchedule retention)',
      },
    ];
  }
  return [{ ...base, status: 'ok', found: `${dir} is writable, ${gib(free)} free` }];
}
