import { accessSync, constants, readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { writeInventory } from './inventory.ts';
import { simFixture, type SimFixture } from './sim-fixture.ts';

let f: SimFixture;

beforeAll(async () => {
  f = await simFixture();
});

afterAll(async () => {
  await f.close();
});

/** Posts one invocation to the control endpoint the way the wrappers do, and collects the stream. */
async function exec(body: unknown): Promise<{ stdout: string; stderr: string; exit: number | undefined }> {
  const response = await fetch(`${f.sim.controlUrl}/exec`, { method: 'POST', body: JSON.stringify(body) });
  const out = { stdout: '', stderr: '', exit: undefined as number | undefined };
  for (const line of (await response.text()).split('\n').filter(Boolean)) {
    const message = JSON.parse(line) as { fd?: number; text?: string; exit?: number };
    if (message.exit !== undefined) out.exit = message.exit;
    else if (message.fd === 2) out.stderr += message.text;
    else out.stdout += message.text;
  }
  return out;
}

describe('the runtime contract', () => {
  it('hands the bot executable wrappers and the Image Factory URL', () => {
    const env = f.sim.env();

    expect(env.TALOSCTL_BIN).toBe(f.sim.bin.talosctlVersions);
    expect(f.sim.env({ talosctl: 'binary' }).TALOSCTL_BIN).toBe(f.sim.bin.talosctl);
    expect(env.IMAGE_FACTORY_URL).toBe(f.sim.imageFactoryUrl);
    for (const version of ['v1.10.9', 'v1.11.6', 'v1.12.11', 'v1.13.9']) {
      expect(() => accessSync(`${env.TALOSCTL_BIN}/talosctl-${version}`, constants.X_OK)).not.toThrow();
    }
    const wrapper = readFileSync(env.TOFU_BIN, 'utf8');
    expect(wrapper).toMatch(/^#!\/bin\/bash\n/);
    expect(wrapper).toMatch(/exec 3<>\/dev\/tcp\/127\.0\.0\.1\/\d+;/);
    expect(wrapper).not.toContain(f.sim.canary);
  });

  it('writes an inventory in the DESIGN.md format', async () => {
    const path = await writeInventory(f.sim, { approvers: { production: ['U0CAROL', 'S0SRE'] }, defaultForChannel: ['production'] });

    const { clusters } = parse(readFileSync(path, 'utf8')) as { clusters: Record<string, Record<string, unknown>> };
    expect(clusters['production']).toEqual({
      environment: 'production',
      channel: 'C0MAINTPRD',
      terraformDir: f.sim.cluster('production').terraformDir,
      controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
      workers: [],
      installerPlatform: 'nocloud',
      hostLabel: 'example.org/proxmox-host',
      snapshotDir: f.sim.cluster('production').snapshotDir,
      operators: ['U0ALICE', 'U0BOB'],
      approvers: ['U0CAROL', 'S0SRE'],
      defaultForChannel: true,
      nodeNames: { '10.0.30.11': 'talos-prd-cp-1', '10.0.30.12': 'talos-prd-cp-2', '10.0.30.13': 'talos-prd-cp-3' },
    });
    expect(clusters['staging']).toMatchObject({
      channel: 'C0MAINTSTG',
      workers: ['10.0.20.205'],
      approvers: ['U0CAROL'],
      defaultForChannel: false,
    });
  });

  it('leaves the node lists and names out of the clusters it is told to, for the bot to find the nodes itself', async () => {
    const path = await writeInventory(f.sim, { withoutNodeLists: ['staging'], path: `${f.sim.dir}/unlisted.yaml` });

    const { clusters } = parse(readFileSync(path, 'utf8')) as { clusters: Record<string, Record<string, unknown>> };
    expect([clusters['staging']!['controlPlanes'], clusters['staging']!['workers'], clusters['staging']!['nodeNames']]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(clusters['production']!['controlPlanes']).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
  });

  it('records each invocation with its cluster, times and exit code', async () => {
    const since = f.sim.calls.length;

    await f.talosctl('staging', ['version', '-n', '10.0.20.204']);
    await f.tofu('production', ['output', '-raw', 'talos_version']);

    expect(f.sim.calls.slice(since).map((c) => [c.bin, c.cluster, c.exitCode, c.argv.slice(2)])).toEqual([
      ['talosctl', 'staging', 0, ['version', '-n', '10.0.20.204']],
      ['tofu', 'production', 0, ['talos_version']],
    ]);
    const last = f.sim.calls.at(-1);
    expect(last?.endedAt ?? 0).toBeGreaterThanOrEqual(last?.startedAt ?? Infinity);
  });

  it('makes partial failures errors for talosctl 1.14+ clients', async () => {
    f.sim.faults.set('production', { nodeUnreachable: ['10.0.30.12'] });

    const result = await exec({
      bin: 'talosctl',
      argv: ['etcd', 'status', '-n', '10.0.30.11,10.0.30.12'],
      cwd: f.dir,
      clientVersion: 'v1.14.0',
      talosconfig: { path: 'x', contents: f.sim.talosconfig('production') },
    });
    f.sim.faults.clear('production');

    expect(result.exit).toBe(1);
    expect(result.stderr).toMatch(/^error from node 10\.0\.30\.12: rpc error: code = Unavailable /);
    expect(
      result.stdout
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split(/ {2,}/)[0]),
    ).toEqual(['NODE', '10.0.30.11']);
  });
});
