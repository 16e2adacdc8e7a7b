import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { assertPlanSpace, planSpaceUsage, PlanSpaceFull, sweepPlanSpace } from '../../../src/tofu/plan-space.ts';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'plan-space-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function keptPlan(opId: string, bytes: number): Promise<void> {
  await mkdir(join(dir, opId), { mode: 0o700 });
  await writeFile(join(dir, opId, 'tfplan'), Buffer.alloc(bytes), { mode: 0o600 });
}

describe('the plan space', () => {
  it('counts every kept plan and refuses a new one once they hold the bound, naming what fills it', async () => {
    await keptPlan('op-1', 600);
    await keptPlan('op-2', 400);

    const usage = await planSpaceUsage(dir);
    const full = await assertPlanSpace(dir, 1000).catch((error: unknown) => error);

    expect(usage).toEqual({ bytes: 1000, plans: 2 });
    expect(full).toBeInstanceOf(PlanSpaceFull);
    expect((full as Error).message).toMatch(/^the plan space is full \(0\.0 of 0\.0 MiB, 2 kept plans\); nothing was planned\./);
    await expect(assertPlanSpace(dir, 1001)).resolves.toBeUndefined();
  });

  it('is empty, not an error, before the first plan made its directory', async () => {
    await expect(assertPlanSpace(join(dir, 'not-yet'), 1)).resolves.toBeUndefined();
  });

  it('sweeps every directory its keeper does not name live, and whatever is not an operation id', async () => {
    await keptPlan('op-live', 10);
    await keptPlan('op-ended', 10);
    await mkdir(join(dir, '..hidden'));
    await writeFile(join(dir, 'stray-file'), 'x');

    const removed = await sweepPlanSpace(dir, (opId) => Promise.resolve(opId === 'op-live' || opId === 'stray-file'));

    expect(removed.sort()).toEqual(['..hidden', 'op-ended']);
    expect((await readdir(dir)).sort()).toEqual(['op-live', 'stray-file']);
    expect(existsSync(join(dir, 'op-live', 'tfplan'))).toBe(true);
  });
});
