import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Tofu } from '../../../src/cluster/tofu.ts';
import { ExecError, type RunResult } from '../../../src/exec/process-runner.ts';
import { runPlan } from '../../../src/tofu/run-plan.ts';

type Answer = { exitCode: number; stdout?: string; stderr?: string } | ExecError;

interface Call {
  dir: string;
  args: string[];
  okExitCodes: number[] | undefined;
  timeoutMs: number | undefined;
}

const NO_CHANGES = JSON.stringify({ format_version: '1.0', resource_changes: [] });

/** A fake tofu answering by subcommand the way the process runner would: outside okExitCodes it throws. */
function fakeTofu(answers: Record<string, Answer>, calls: Call[], onPlan?: (planFile: string) => Promise<void>): Tofu {
  return {
    outputRaw: () => Promise.reject(new Error('the plan must not read outputs')),
    async run(dir, args, options = {}) {
      calls.push({ dir, args, okExitCodes: options.okExitCodes, timeoutMs: options.timeoutMs });
      const answer = answers[args[0]!] ?? { exitCode: 0 };
      if (answer instanceof ExecError) throw answer;
      if (args[0] === 'plan' && onPlan) await onPlan(args.find((a) => a.startsWith('-out='))!.slice(5));
      const result: RunResult = {
        command: ['tofu', ...args],
        stdout: answer.stdout ?? '',
        stderr: answer.stderr ?? '',
        exitCode: answer.exitCode,
        durationMs: 1,
      };
      if (!(options.okExitCodes ?? [0]).includes(answer.exitCode))
        throw new ExecError('exec-failed', `tofu ${args[0]} exited with ${answer.exitCode}`, result);
      return result;
    },
  };
}

let base: string;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'run-plan-test-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

describe('runPlan', () => {
  it('never quotes the stdout of a failed tofu show -json, which holds sensitive values in plain text', async () => {
    const secretJson = JSON.stringify({
      format_version: '1.2',
      output_changes: { talosconfig: { actions: ['no-op'], before: 'SECRET-TALOSCONFIG', after: 'SECRET-TALOSCONFIG' } },
    });
    const tofu = fakeTofu({ plan: { exitCode: 2 }, show: { exitCode: 1, stdout: secretJson, stderr: '' } }, []);

    const outcome = await runPlan(tofu, '/srv/terraform/production', { planTimeoutMs: 1_800_000, tempBase: base });

    expect(outcome.plan).toEqual({
      status: 'error',
      lines: [expect.stringContaining('tofu show -json of the saved plan failed (exit 1)')],
    });
    expect(JSON.stringify(outcome)).not.toContain('SECRET');
  });

  it('plans into a private file, reads it with show -json and removes it', async () => {
    const calls: Call[] = [];
    let mode = 0;
    const tofu = fakeTofu({ plan: { exitCode: 2 }, show: { exitCode: 0, stdout: NO_CHANGES } }, calls, async (file) => {
      await writeFile(file, 'plan');
      mode = (await stat(dirname(file))).mode & 0o777;
    });

    const outcome = await runPlan(tofu, '/srv/terraform/production', { planTimeoutMs: 1_800_000, tempBase: base });

    expect(outcome).toEqual({
      fmt: { status: 'formatted' },
      validate: { status: 'valid' },
      plan: { status: 'planned', review: expect.objectContaining({ changes: [] }) },
    });
    const planFile = calls[2]!.args.at(-1)!.slice('-out='.length);
    expect(calls.map((c) => [c.dir, ...c.args])).toEqual([
      ['/srv/terraform/production', 'fmt', '-check', '-recursive'],
      ['/srv/terraform/production', 'validate', '-no-color'],
      ['/srv/terraform/production', 'plan', '-detailed-exitcode', '-lock=false', '-input=false', '-no-color', `-out=${planFile}`],
      ['/srv/terraform/production', 'show', '-json', planFile],
    ]);
    expect(calls[2]).toMatchObject({ okExitCodes: [0, 2], timeoutMs: 1_800_000 });
    expect(mode).toBe(0o700);
    expect(existsSync(dirname(planFile))).toBe(false);
    expect(await readdir(base)).toEqual([]);
  });

  it('keeps a plan for apply: taken under the state lock, in the private directory asked for, with its hash and its text', async () => {
    const calls: Call[] = [];
    const keep = join(base, 'plans', 'op-abc123');
    const tofu = fakeTofu({ plan: { exitCode: 2 }, show: { exitCode: 0, stdout: NO_CHANGES } }, calls, async (file) =>
      writeFile(file, 'the saved plan'),
    );

    const outcome = await runPlan(tofu, '/tf', { planTimeoutMs: 1000, saveTo: keep });

    expect(calls.map((c) => c.args.join(' '))).toEqual([
      'fmt -check -recursive',
      'validate -no-color',
      `plan -detailed-exitcode -input=false -no-color -out=${join(keep, 'tfplan')}`,
      `show -json ${join(keep, 'tfplan')}`,
      `show -no-color ${join(keep, 'tfplan')}`,
    ]);
    // sha256 of "the saved plan"
    expect(outcome.saved).toEqual({
      file: join(keep, 'tfplan'),
      sha256: 'e6de090512496da25e7e0136d2156e523b9decf61c8bc732847d7f62661ec4d7',
      textFile: join(keep, 'tfplan.txt'),
    });
    expect((await stat(keep)).mode & 0o777).toBe(0o700);
    expect((await stat(join(keep, 'tfplan.txt'))).mode & 0o777).toBe(0o600);
    expect(existsSync(join(keep, 'tfplan'))).toBe(true);
  });

  it('asks tofu to replace the addresses given, one -replace each, in the kept plan', async () => {
    const calls: Call[] = [];
    const keep = join(base, 'plans', 'op-rep1');
    const vm = 'proxmox_virtual_environment_vm.talos["talos-prd-cp-2"]';
    const tofu = fakeTofu({ plan: { exitCode: 2 }, show: { exitCode: 0, stdout: NO_CHANGES } }, calls, async (file) =>
      writeFile(file, 'plan'),
    );

    await runPlan(tofu, '/tf', { planTimeoutMs: 1000, saveTo: keep, replace: [vm] });

    expect(calls.find((c) => c.args[0] === 'plan')?.args).toEqual([
      'plan',
      '-detailed-exitcode',
      '-input=false',
      '-no-color',
      `-replace=${vm}`,
      `-out=${join(keep, 'tfplan')}`,
    ]);
  });

  it('lists unformatted files from fmt exit 3 and goes on', async () => {
    const calls: Call[] = [];
    const tofu = fakeTofu({ fmt: { exitCode: 3, stdout: 'main.tf\nnodes.tf\n' }, show: { exitCode: 0, stdout: NO_CHANGES } }, calls);
    const outcome = await runPlan(tofu, '/tf', { planTimeoutMs: 1000, tempBase: base });
    expect(outcome.fmt).toEqual({ status: 'unformatted', files: ['main.tf', 'nodes.tf'] });
    expect(outcome.plan.status).toBe('planned');
  });

  it('skips the plan when validate fails, reporting its diagnostic', async () => {
    const calls: Call[] = [];
    const stderr = '\nError: Unsupported argument\n\n  on nodes.tf line 12:\n';
    const tofu = fakeTofu({ validate: { exitCode: 1, stderr } }, calls);
    const outcome = await runPlan(tofu, '/tf', { planTimeoutMs: 1000, tempBase: base });
    expect(outcome.validate).toEqual({ status: 'invalid', lines: ['Error: Unsupported argument', 'on nodes.tf line 12:'] });
    expect(outcome.plan).toEqual({ status: 'skipped', because: 'the configuration is not valid' });
    expect(calls.map((c) => c.args[0])).toEqual(['fmt', 'validate']);
  });

  it('reports a plan error and removes the plan directory', async () => {
    const calls: Call[] = [];
    const tofu = fakeTofu({ plan: { exitCode: 1, stderr: '╷\n│ Error: Error acquiring the state lock\n╵\n' } }, calls);
    const outcome = await runPlan(tofu, '/tf', { planTimeoutMs: 1000, tempBase: base });
    expect(outcome.plan).toEqual({ status: 'error', lines: ['Error: Error acquiring the state lock'] });
    expect(calls.map((c) => c.args[0])).toEqual(['fmt', 'validate', 'plan']);
    expect(await readdir(base)).toEqual([]);
  });

  it('reports unparseable show output as a plan error', async () => {
    const tofu = fakeTofu({ show: { exitCode: 0, stdout: 'not json' } }, []);
    const outcome = await runPlan(tofu, '/tf', { planTimeoutMs: 1000, tempBase: base });
    expect(outcome.plan).toEqual({
      status: 'error',
      lines: ['cannot parse tofu show -json output: it is not JSON. Check that TOFU_BIN is OpenTofu 1.6 or newer.'],
    });
  });

  it('stops on a cancelled job instead of reporting it, and still removes the plan directory', async () => {
    const tofu = fakeTofu({ plan: new ExecError('exec-cancelled', 'tofu plan was cancelled') }, []);
    await expect(runPlan(tofu, '/tf', { planTimeoutMs: 1000, tempBase: base })).rejects.toThrow('tofu plan was cancelled');
    expect(await readdir(base)).toEqual([]);
  });
});
