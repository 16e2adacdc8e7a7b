import { appendFile, copyFile, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/shapes.ts';
import type { ClusterShape } from '../sim/types.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { releaseEnv, sha256, startReleaseServer, type ReleaseServer } from '../support/release-server.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';

// The image carries only these clients: the clusters below run, and upgrade to, Talos patches it does not.
const IMAGE_CLIENTS = ['v1.11.6', 'v1.12.11'];
const FROM = 'v1.13.8';
const TARGET = 'v1.13.9';

let h: Harness | undefined;
let server: ReleaseServer | undefined;
let dir: string | undefined;

afterEach(async () => {
  await h?.stop();
  await server?.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  h = undefined;
  server = undefined;
  dir = undefined;
});

interface Setup {
  h: Harness;
  server: ReleaseServer;
  cacheDir: string;
}

/**
 * The real bot with an image that carries {@link IMAGE_CLIENTS} only, downloads left at their
 * default, and a TLS release server whose certificate the bot is told to trust. `publish` runs
 * before the bot starts, with the simulator up (a release's talosctl is the simulated client of
 * that version).
 */
async function start(
  clusters: ClusterShape[],
  publish: (s: ReleaseServer, h: Harness) => void,
  env: Record<string, string> = {},
): Promise<Setup> {
  dir = await mkdtemp(join(tmpdir(), 'talosctl-download-e2e-'));
  server = await startReleaseServer(dir);
  const imageDir = join(dir, 'image');
  const cacheDir = join(dir, 'cache', 'talosctl');
  h = await startHarness({
    clusters,
    deferStart: true,
    env: { ...releaseEnv(server, cacheDir), TALOSCTL_BIN: imageDir, ...env },
  });
  await mkdir(imageDir);
  for (const version of IMAGE_CLIENTS) {
    await copyFile(join(h.sim.bin.talosctlVersions, `talosctl-${version}`), join(imageDir, `talosctl-${version}`));
  }
  publish(server, h);
  await h.bot.start();
  await h.slack.waitForConnections(1);
  return { h, server, cacheDir };
}

/** What the cache holds, by name; none of it may be a partial download. */
async function cacheNames(cacheDir: string): Promise<string[]> {
  return (await readdir(cacheDir).catch(() => [] as string[])).sort();
}

const downloads = (s: ReleaseServer, version: string): number => s.requests.filter((p) => p === `/${version}/talosctl-linux-amd64`).length;

describe('talosctl of a Talos release the image does not carry', () => {
  it('is fetched over TLS, checked against the release sha256sum.txt and kept 0700, and the upgrade runs with it', async () => {
    const { h, server, cacheDir } = await start(
      [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })],
      (s, harness) => {
        for (const v of [FROM, TARGET]) s.publish(v, { binary: harness.sim.talosctlRelease(v) });
      },
    );

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect((await storedOperation(h, plan.opId)).state).toBe('planned');
    // Both clients came at plan time, each once, checked: the running version's for the walk, the target's for after.
    expect([downloads(server, FROM), downloads(server, TARGET)]).toEqual([1, 1]);
    expect(server.requests).toEqual(expect.arrayContaining([`/${FROM}/sha256sum.txt`, `/${TARGET}/sha256sum.txt`]));
    expect(await cacheNames(cacheDir)).toEqual([
      `talosctl-${FROM}`,
      `talosctl-${FROM}.sha256`,
      `talosctl-${TARGET}`,
      `talosctl-${TARGET}.sha256`,
    ]);
    expect((await stat(cacheDir)).mode & 0o777).toBe(0o700);
    for (const v of [FROM, TARGET]) {
      expect(await readFile(join(cacheDir, `talosctl-${v}.sha256`), 'utf8')).toBe(`${sha256(h.sim.talosctlRelease(v))}  talosctl-${v}\n`);
    }

    await clickStart(h, plan);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toMatch(/completed/i);
    expect((await storedOperation(h, plan.opId)).state).toBe('completed');
    for (const address of ['10.0.30.11', '10.0.30.12', '10.0.30.13']) expect(h.sim.node('production', address).talosVersion).toBe(TARGET);
    // The nodes were upgraded by the downloaded v1.13.8 client: the image has none of that version.
    const upgrades = h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv.includes('upgrade'));
    expect(upgrades.map((c) => c.clientVersion)).toEqual([FROM, FROM, FROM]);
    expect([downloads(server, FROM), downloads(server, TARGET)]).toEqual([1, 1]);
  });

  it('is refused when its sha256 is not the one its release publishes, leaving nothing runnable and touching no node', async () => {
    const { h, server, cacheDir } = await start(
      [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })],
      (s, harness) => {
        // A mirror or a proxy that serves other bytes than the release published.
        s.publish(FROM, { binary: harness.sim.talosctlRelease(FROM), publishedSum: sha256('the binary the release really published') });
        s.publish(TARGET, { binary: harness.sim.talosctlRelease(TARGET) });
      },
    );

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    const op = await storedOperation(h, plan.opId);
    expect(op.state).toBe('refused');
    expect(op.refusals.join('\n')).toMatch(/^a talosctl failed its check, so nothing was run with it: /);
    expect(op.refusals.join('\n')).toMatch(
      new RegExp(
        `talosctl ${FROM} downloaded from .* has sha256 [0-9a-f]{12}…, but its release publishes [0-9a-f]{12}…; it was deleted and not run`,
      ),
    );
    expect(downloads(server, FROM)).toBe(1);
    // Nothing of it is left, under its name or as a partial download, and no node was asked to upgrade.
    expect((await cacheNames(cacheDir)).filter((n) => n.includes(FROM))).toEqual([]);
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv.includes('upgrade'))).toEqual([]);
    expect(h.sim.calls.filter((c) => c.clientVersion === FROM)).toEqual([]);
  });

  it('is refused and dropped when the cached binary changed on disk after its download, and the changed binary never runs', async () => {
    const { h, server, cacheDir } = await start(
      [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })],
      (s, harness) => {
        for (const v of [FROM, TARGET]) s.publish(v, { binary: harness.sim.talosctlRelease(v) });
      },
    );
    // A first plan downloads and checks both clients; it is cancelled.
    const first = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect((await storedOperation(h, first.opId)).state).toBe('planned');
    expect(await h.command(`cancel ${first.opId}`)).toContain('Cancelled');
    // Something writes to the cache: the binary now leaves a mark whenever it runs.
    const marker = join(dir!, 'tampered-binary-ran');
    const path = join(cacheDir, `talosctl-${FROM}`);
    const original = await readFile(path, 'utf8');
    await writeFile(path, original.replace('\n', `\ntouch ${marker}\n`));
    const callsBefore = h.sim.calls.length;

    const second = await requestUpgrade(h, `upgrade talos ${TARGET}`);

    const op = await storedOperation(h, second.opId);
    expect(op.state).toBe('refused');
    expect(op.refusals.join('\n')).toMatch(/^a talosctl failed its check, so nothing was run with it: /);
    expect(op.refusals.join('\n')).toMatch(
      new RegExp(`talosctl ${FROM} in .* changed on disk after its download: .*it was deleted and not run`),
    );
    await expect(stat(marker)).rejects.toThrow(/ENOENT/);
    expect(await cacheNames(cacheDir)).toEqual([`talosctl-${TARGET}`, `talosctl-${TARGET}.sha256`]);
    expect(h.sim.calls.slice(callsBefore).filter((c) => c.clientVersion === FROM)).toEqual([]);
    expect(downloads(server, FROM)).toBe(1);
  });

  it('is hashed again when the approved operation starts: changed after the plan, it stops the operation before any node is touched', async () => {
    const { h, cacheDir } = await start([stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })], (s, harness) => {
      for (const v of [FROM, TARGET]) s.publish(v, { binary: harness.sim.talosctlRelease(v) });
    });
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    expect((await storedOperation(h, plan.opId)).state).toBe('planned');
    const marker = join(dir!, 'tampered-binary-ran');
    const path = join(cacheDir, `talosctl-${FROM}`);
    await writeFile(path, (await readFile(path, 'utf8')).replace('\n', `\ntouch ${marker}\n`));
    const callsBefore = h.sim.calls.length;

    await clickStart(h, plan);
    const stopped = await h.slack.waitFor(
      async () => {
        const op = await storedOperation(h, plan.opId);
        return op.state === 'running' || op.state === 'planned' ? undefined : op;
      },
      { description: 'the operation stopped' },
    );

    // Stopped before its first step, which never started: nothing of the operation ran.
    expect([stopped.state, stopped.steps.map((s) => s.status)]).toEqual(['failed', stopped.steps.map(() => 'pending')]);
    const said = await h.slack.waitFor(() => h.slack.thread(CHANNELS.production, plan.root.ts).find((m) => m.text.includes('❌ Stopped')), {
      description: 'the stop in the thread',
    });
    expect(said?.text ?? '').toMatch(
      new RegExp(
        `❌ Stopped: a talosctl failed its check, so nothing was run with it: talosctl ${FROM} in .* changed on disk after its download`,
      ),
    );
    await expect(stat(marker)).rejects.toThrow(/ENOENT/);
    expect(h.sim.calls.slice(callsBefore).filter((c) => c.clientVersion === FROM)).toEqual([]);
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl' && c.argv.includes('upgrade'))).toEqual([]);
    expect((await cacheNames(cacheDir)).filter((n) => n.includes(FROM))).toEqual([]);
  });
});

describe('a Talos minor the built-in support table lacks', () => {
  it('is refused before anything is downloaded, with its support matrix and the lines to add; once the inventory adds them, it is planned', async () => {
    const running = 'v1.14.3';
    const { h, server } = await start(
      [stagingShape({ talosVersion: running }), productionShape({ talosVersion: running })],
      (s, harness) => {
        harness.sim.state.factoryVersions.push('v1.14.1', 'v1.14.2', 'v1.14.3', 'v1.15.0');
        for (const v of [running, 'v1.15.0']) s.publish(v, { binary: harness.sim.talosctlRelease(v) });
      },
      { CLUSTERS_RELOAD_SECONDS: '1' },
    );

    const refused = await requestUpgrade(h, 'upgrade talos v1.15.0');

    const op = await storedOperation(h, refused.opId);
    expect(op.state).toBe('refused');
    const reason = op.refusals.join('\n');
    expect(reason).toContain('https://docs.siderolabs.com/talos/v1.15/getting-started/support-matrix');
    const lines = 'talosSupport:\n  - talos: "1.15"\n    kubernetesMin: "1.33"\n    kubernetesMax: "1.38"\n    upgradeFromMin: "1.13.0"';
    expect(reason).toContain(lines);
    // Refused before any talosctl was fetched.
    expect(server.requests).toEqual([]);

    // The operator reads the matrix and adds the lines; the bot reads the file again on its own.
    await appendFile(h.inventoryPath, `\n${lines}\n`);
    await h.slack.waitFor(() => h.bot.logLines().find((l) => l.msg === 'cluster inventory reloaded: new commands and operations use it'), {
      description: 'the inventory reloaded',
    });
    const planned = await requestUpgrade(h, 'upgrade talos v1.15.0');

    const accepted = await storedOperation(h, planned.opId);
    expect(accepted.refusals).toEqual([]);
    expect(accepted.state).toBe('planned');
    expect(accepted.target).toMatchObject({ version: 'v1.15.0', fromVersion: running });
    expect(downloads(server, running)).toBe(1);
    expect(downloads(server, 'v1.15.0')).toBe(1);
  });
});
