import { afterEach, describe, expect, it } from 'vitest';
import { productionShape, stagingShape } from '../sim/index.ts';
import { CHANNELS, startHarness, USERS, type Harness, type HarnessOptions } from '../support/harness.ts';
import { approve, approveUntilDone, clickStart, requestUpgrade, waitForApprovalRequest, auditLines } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
const CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];
let h: Harness;
let bringUp = (): void => undefined;

afterEach(async () => {
  await h?.stop();
});

/**
 * Starts the production upgrade, approves the first control plane and waits until talosctl is upgrading it.
 * With `holdReboot`, the node stays down in its reboot until `bringUp` is called.
 */
async function upgradeFirstNode(options: HarnessOptions, holdReboot = false): Promise<Awaited<ReturnType<typeof requestUpgrade>>> {
  h = await startHarness(options);
  if (holdReboot) bringUp = h.sim.holdReboots('production', CONTROL_PLANES[0]);
  const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
  await clickStart(h, plan);
  await approve(h, await waitForApprovalRequest(h, plan));
  await h.slack.waitFor(() => h.sim.events.find((e) => e.kind === 'upgrade-start' && e.node === CONTROL_PLANES[0]), {
    timeoutMs: 30_000,
    description: 'the upgrade of the first control plane',
  });
  return plan;
}

function expectEveryNodeUpgradedOnce(): void {
  for (const node of CONTROL_PLANES) {
    expect([node, h.sim.upgradeCount('production', node), h.sim.node('production', node).talosVersion]).toEqual([node, 1, TARGET]);
  }
  expect(h.sim.maxControlPlanesDownAtOnce('production')).toBe(1);
}

describe('SIGTERM during a node upgrade', () => {
  it('lets the node step finish, exits 0, and the next start carries the operation to the end', async () => {
    const plan = await upgradeFirstNode({});

    expect(await h.bot.stop()).toBe(0);
    // The step was allowed to finish before the exit: the node is done, and nothing else was started.
    expect(h.sim.node('production', CONTROL_PLANES[0]!).talosVersion).toBe(TARGET);
    expect(h.sim.upgradeCount('production', CONTROL_PLANES[1]!)).toBe(0);
    expect(h.bot.logLines().map((l) => l.msg)).toEqual(expect.arrayContaining(['shutdown requested', 'running jobs finished', 'stopped']));
    expect(h.bot.logLines().find((l) => l.msg === 'stopped')?.forced).toBe(false);

    await h.bot.start();
    await h.slack.waitForConnections(1);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expectEveryNodeUpgradedOnce();
  });

  it('after the grace period, closes by force, exits 0, and the next start resumes the node by observation', async () => {
    // The node stays down until the bot has exited, so the step is still running when the grace ends.
    const plan = await upgradeFirstNode({ env: { SHUTDOWN_GRACE_SECONDS: '1' } }, true);

    expect(await h.bot.stop()).toBe(0);
    bringUp();
    expect(h.bot.logLines().find((l) => l.msg === 'stopped')?.forced).toBe(true);
    expect(h.bot.logs()).toContain('grace period over');

    await h.bot.start();
    await h.slack.waitForConnections(1);
    const done = await approveUntilDone(h, plan);

    expect(done.text).toContain('completed');
    expectEveryNodeUpgradedOnce();
    // The step's result in the thread says the node was observed after the restart, not asked again.
    expect(
      auditLines(h, plan).filter(
        (l) => /^#\d+ upgraded: /.test(l) && /was observed, not requested again|only the checks after it ran again/.test(l),
      ),
    ).toHaveLength(1);
  });
});

describe('the ops endpoints while draining', () => {
  it('keep /healthz answering and /readyz naming the drain while the running step finishes', async () => {
    await upgradeFirstNode({}, true);
    const get = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${h.httpPort}${path}`);
      return { status: response.status, body: await response.text() };
    };
    expect(await get('/readyz')).toEqual({ status: 200, body: 'ready\n' });

    const stopped = h.bot.stop();
    let ready = await get('/readyz');
    for (const deadline = Date.now() + 10_000; ready.status === 200 && Date.now() < deadline;) ready = await get('/readyz');
    const healthy = await get('/healthz');
    const metrics = await get('/metrics');

    expect(ready.status).toBe(503);
    expect(ready.body).toMatch(/^not ready: .*draining/);
    expect(healthy).toEqual({ status: 200, body: 'ok\n' });
    expect(metrics.status).toBe(200);
    expect(h.sim.node('production', CONTROL_PLANES[0]!).talosVersion).not.toBe(TARGET);
    bringUp();
    expect(await stopped).toBe(0);
  });
});

describe('draining between steps', () => {
  it('does not start the next worker after SIGTERM; the next start continues from it', async () => {
    const staging = stagingShape({
      nodes: [
        { hostname: 'talos-stg-cp-1', address: '10.0.20.204', role: 'controlplane', host: 'pve5' },
        { hostname: 'talos-stg-w-1', address: '10.0.20.205', role: 'worker', host: 'pve5' },
        { hostname: 'talos-stg-w-2', address: '10.0.20.206', role: 'worker', host: 'pve5' },
      ],
    });
    const harness = await startHarness({ clusters: [staging, productionShape()] });
    try {
      // The first worker stays down in its reboot until the bot has been told to stop: its step is running then.
      const up = harness.sim.holdReboots('staging', '10.0.20.205');
      const plan = await requestUpgrade(harness, 'upgrade talos v1.12.11', { channel: CHANNELS.staging });
      await clickStart(harness, plan, USERS.alice, CHANNELS.staging);
      await harness.slack.waitFor(() => harness.sim.events.find((e) => e.kind === 'reboot' && e.node === '10.0.20.205'), {
        timeoutMs: 20_000,
      });
      const stopping = harness.bot.stop();
      await harness.slack.waitFor(() => harness.bot.logLines().some((l) => l.msg === 'shutdown requested'), {
        description: 'the bot taking the SIGTERM',
      });
      up();
      expect(await stopping).toBe(0);
      // The first worker finished its step before the process exited; the second was never touched.
      expect(harness.sim.node('staging', '10.0.20.205').talosVersion).toBe('v1.12.11');
      expect(harness.sim.upgradeCount('staging', '10.0.20.206')).toBe(0);
      expect(harness.bot.logs()).toContain('operation checkpointed for shutdown');

      await harness.bot.start();
      const done = await approveUntilDone(harness, plan, CHANNELS.staging);
      expect(done.text).toContain('completed');
      for (const node of ['10.0.20.204', '10.0.20.205', '10.0.20.206']) expect(harness.sim.upgradeCount('staging', node)).toBe(1);
    } finally {
      await harness.stop();
    }
  });
});
