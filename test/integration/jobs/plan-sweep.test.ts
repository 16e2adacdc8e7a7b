import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRetentionSweepJob } from '../../../jobs/retention-sweep-job.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createClusterLock } from '../../../src/ops/cluster-lock.ts';
import { newOperation, type Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const redis = useRedisFixture();
const NOW = new Date('2026-12-01T08:00:00.000Z');
const minutesAgo = (m: number): string => new Date(NOW.getTime() - m * 60_000).toISOString();
let planDir: string;

beforeEach(async () => {
  planDir = await mkdtemp(join(tmpdir(), 'plan-sweep-'));
});

afterEach(async () => {
  await rm(planDir, { recursive: true, force: true });
});

function op(fields: Partial<Operation> & Pick<Operation, 'state'>): Operation {
  return newOperation({
    kind: 'terraform-apply',
    cluster: 'staging',
    channel: 'C0MAINTSTG',
    requestedBy: 'U0ALICE',
    createdAt: minutesAgo(300),
    ...fields,
  });
}

async function keptPlan(opId: string): Promise<void> {
  await mkdir(join(planDir, opId), { mode: 0o700 });
  await writeFile(join(planDir, opId, 'tfplan'), 'the state, secrets included', { mode: 0o600 });
}

describe('the retention sweep of kept plans, on a real Redis', () => {
  it("deletes the plans of operations that ended or that Redis forgot, and keeps live ones and a just-ended one's until its record is out", async () => {
    // Arrange
    const client = redis.client();
    const store = createOperationStore(client, { retentionMs: 400 * 86_400_000 });
    const planned = op({ state: 'planned' });
    const stopped = op({ state: 'failed', endedAt: minutesAgo(120) });
    const completedLongAgo = op({ state: 'completed', endedAt: minutesAgo(120) });
    const cancelledJustNow = op({ state: 'cancelled', endedAt: minutesAgo(1) });
    for (const o of [planned, stopped, completedLongAgo, cancelledJustNow]) {
      await store.create(o);
      await keptPlan(o.id);
    }
    await keptPlan('op-redis-never-knew');
    const sweep = createRetentionSweepJob({
      store,
      lock: createClusterLock(client),
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
      clock: { now: () => NOW },
      retentionMs: 400 * 86_400_000,
      planDir,
    });

    // Act
    const { plans } = await sweep();

    // Assert
    expect(plans).toBe(2);
    expect((await readdir(planDir)).sort()).toEqual([planned.id, stopped.id, cancelledJustNow.id].sort());
    expect(existsSync(join(planDir, completedLongAgo.id))).toBe(false);
  });
});
