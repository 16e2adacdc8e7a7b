/** Test fixture: a simulator plus helpers that run the fake executables as real child processes. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { test } from 'vitest';
import { startSimulator, type Simulator, type SimulatorOptions } from './simulator.ts';

export interface RunResult {
  exitCode: number | undefined;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

export interface SimFixture {
  sim: Simulator;
  dir: string;
  /** Path of a talosconfig file per cluster (0600, as the bot writes them). */
  talosconfig: Record<string, string>;
  /** Runs `bin/talosctl` (or `talosctl-<version>`) with `--talosconfig` of `cluster` prepended. */
  talosctl(cluster: string, args: string[], options?: { version?: string; timeoutMs?: number; cwd?: string }): Promise<RunResult>;
  /**
   * Runs talosctl until the simulator holds the call as hung (what it hangs at is `hung`) and the
   * client printed `printed` to stderr, then kills it, as a client that gives up: the give-up follows
   * the hang, however loaded the machine is.
   */
  talosctlUntilHung(cluster: string, args: string[], options?: { printed?: string }): Promise<RunResult & { hung: string }>;
  /** Starts talosctl without waiting, for streaming and kill tests. */
  spawnTalosctl(cluster: string, args: string[], options?: { version?: string }): ResultPromise;
  /** Runs `bin/tofu` in the cluster's Terraform directory; stdin is empty (end of input) unless `input` is given. */
  tofu(cluster: string, args: string[], options?: { input?: string }): Promise<RunResult>;
  /** Starts tofu without waiting, for streaming tests. */
  spawnTofu(cluster: string, args: string[]): ResultPromise;
  close(): Promise<void>;
}

export async function simFixture(options: Partial<SimulatorOptions> = {}): Promise<SimFixture> {
  const dir = await mkdtemp(join(tmpdir(), 'talos-sim-test-'));
  const sim = await startSimulator({
    dir: join(dir, 'sim'),
    canary: 'CANARY-sim-test-0042',
    timing: { stepMs: 4, rebootMs: 80 },
    ...options,
  });
  const talosconfig: Record<string, string> = {};
  for (const name of Object.keys(sim.state.clusters)) {
    talosconfig[name] = join(dir, `talosconfig-${name}`);
    await writeFile(talosconfig[name], sim.talosconfig(name), { mode: 0o600 });
  }
  const binFor = (version?: string): string => (version ? join(sim.bin.talosctlVersions, `talosctl-${version}`) : sim.bin.talosctl);
  const settle = async (child: ResultPromise): Promise<RunResult> => {
    const result = await child;
    return { exitCode: result.exitCode, stdout: String(result.stdout), stderr: String(result.stderr), timedOut: result.timedOut };
  };
  const spawnTalosctl: SimFixture['spawnTalosctl'] = (cluster, args, opts = {}) =>
    execa(binFor(opts.version), ['--talosconfig', talosconfig[cluster] ?? '', ...args], {
      reject: false,
      stripFinalNewline: false,
      extendEnv: false,
      env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
      cwd: dir,
    });
  return {
    sim,
    dir,
    talosconfig,
    talosctl: (cluster, args, opts = {}) =>
      settle(
        execa(binFor(opts.version), ['--talosconfig', talosconfig[cluster] ?? '', ...args], {
          reject: false,
          stripFinalNewline: false,
          extendEnv: false,
          env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
          cwd: opts.cwd ?? dir,
          ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
        }),
      ),
    async talosctlUntilHung(cluster, args, { printed = '' } = {}) {
      const from = sim.calls.length;
      const child = spawnTalosctl(cluster, args);
      let stderr = '';
      child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
      const hungCall = () => sim.calls.slice(from).find((c) => c.hung !== undefined);
      await sim.waitFor(() => hungCall() !== undefined && stderr.includes(printed), 10_000, `talosctl ${args.join(' ')} hanging`);
      child.kill();
      return { ...(await settle(child)), hung: hungCall()!.hung! };
    },
    spawnTalosctl,
    tofu: (cluster, args, opts = {}) =>
      settle(
        execa(sim.bin.tofu, args, {
          reject: false,
          stripFinalNewline: false,
          extendEnv: false,
          env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
          cwd: sim.cluster(cluster).terraformDir,
          input: opts.input ?? '',
        }),
      ),
    spawnTofu: (cluster, args) =>
      execa(sim.bin.tofu, args, {
        reject: false,
        stripFinalNewline: false,
        extendEnv: false,
        env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin' },
        cwd: sim.cluster(cluster).terraformDir,
        input: '',
      }),
    async close() {
      await sim.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Splits a talosctl table into rows of cells (columns are separated by 2+ spaces). */
export function tableRows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => l.trim().split(/ {2,}/));
}

/**
 * `it` with a per-test `f` fixture: every test owns a simulator, so faults never leak between tests
 * and tests can run concurrently.
 */
export function simTest(options: Partial<SimulatorOptions> = {}) {
  return test.extend<{ f: SimFixture }>({
    // oxlint-disable-next-line no-empty-pattern -- vitest reads fixture dependencies from this pattern
    f: async ({}, use) => {
      const fixture = await simFixture(options);
      await use(fixture);
      await fixture.close();
    },
  });
}
