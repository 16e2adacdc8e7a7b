import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HomePublisher, HomeView } from '../../../src/home/home-view.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import type { GateReport } from '../../../src/health/health-gate.ts';
import { createHomeRecords, type GateRecord } from '../../../src/home/home-records.ts';
import { createHomeTab, type HomeTab } from '../../../src/home/home-tab.ts';
import { presentationOf } from '../../../jobs/playbooks/index.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createClusterLock } from '../../../src/ops/cluster-lock.ts';
import { newOperation, type Operation } from '../../../src/ops/operation.ts';
import { createOperationStore } from '../../../src/ops/operation-store.ts';
import { waitFor } from '../../slack-emulator/wait-for.ts';
import { useRedisFixture } from '../../support/redis-fixture.ts';

const INVENTORY = parseInventory(
  `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/infra/terraform/production
    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
`,
  'clusters.yaml',
);

const redis = useRedisFixture();
let home: HomeTab | undefined;

beforeEach(async () => {});

afterEach(() => {
  home?.close();
  home = undefined;
});

function gate(overrides: Partial<GateRecord> = {}): GateRecord {
  return {
    cluster: 'production',
    passed: true,
    at: '2026-11-30T09:00:00.000Z',
    stopReasons: [],
    talos: ['v1.11.5'],
    kubernetes: ['v1.34.1'],
    ...overrides,
  };
}

/** A publisher that records what it was given, per user. */
function recordingPublisher(): HomePublisher & { views: { user: string; view: HomeView; at: number }[]; of(user: string): string[] } {
  const views: { user: string; view: HomeView; at: number }[] = [];
  return {
    views,
    of: (user) => views.filter((v) => v.user === user).map((v) => JSON.stringify(v.view.blocks)),
    publish(user, view) {
      views.push({ user, view, at: Date.now() });
      return Promise.resolve();
    },
  };
}

/** People in each maintenance channel; a channel missing here cannot be read (Slack answers an error). */
type Channels = Record<string, string[]>;

function setup(options: { throttleMs?: number; settleMs?: number; now?: () => Date; channels?: Channels } = {}) {
  const channels: Channels = options.channels ?? { C0MAINTPRD: [], C0MAINTSTG: [] };
  const client = redis.client();
  const records = createHomeRecords(client);
  const store = createOperationStore(client, { onChange: (before, after) => home?.operationChanged(before, after) });
  const lock = createClusterLock(client);
  const publisher = recordingPublisher();
  const permalinks: string[] = [];
  home = createHomeTab({
    inventory: INVENTORY,
    store,
    lock,
    records,
    chat: {
      permalink: (channel, ts) => {
        permalinks.push(`${channel}/${ts}`);
        return Promise.resolve(`https://talos-test.slack.com/archives/${channel}/p${ts.replace('.', '')}`);
      },
    },
    publisher,
    audience: {
      isListed: (user, allowed) => Promise.resolve(allowed.includes(user)),
      channelMembers: {
        isMember: (channel, user) =>
          channels[channel] === undefined
            ? Promise.reject(new Error('An API error occurred: fetch_members_failed'))
            : Promise.resolve(channels[channel].includes(user)),
      },
      logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
    },
    presentations: presentationOf,
    now: options.now ?? (() => new Date()),
    logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
    throttleMs: options.throttleMs ?? 50,
    settleMs: options.settleMs ?? 10,
  });
  return { records, store, lock, publisher, permalinks, home };
}

async function runningUpgrade(
  store: ReturnType<typeof createOperationStore>,
  lock: ReturnType<typeof createClusterLock>,
): Promise<Operation> {
  const op = newOperation({
    kind: 'talos-upgrade',
    cluster: 'production',
    channel: 'C0MAINTPRD',
    requestedBy: 'U0ALICE',
    createdAt: new Date().toISOString(),
    state: 'planned',
  });
  await store.create({ ...op, target: { version: 'v1.12.11' }, rootTs: '1764496800.000100' });
  await lock.acquire('production', op.id);
  return (await store.update(op.id, (o) => ({ ...o, state: 'running', startedBy: 'U0BOB', startedAt: new Date().toISOString() }))).op;
}

describe('home records on a real Redis', () => {
  it("keeps a cluster's last gate, and a gate that finished late does not replace a newer one", async () => {
    // Arrange
    const records = createHomeRecords(redis.client(), { gateRetentionMs: 60_000 });

    // Act
    await records.recordGate(gate({ at: '2026-11-30T09:00:00.000Z', passed: false, stopReasons: ['etcd has no leader'] }));
    await records.recordGate(gate({ at: '2026-11-30T08:00:00.000Z', passed: true }));

    // Assert
    expect(await records.lastGate('production')).toMatchObject({ at: '2026-11-30T09:00:00.000Z', passed: false });
    expect(await records.lastGate('staging')).toBeUndefined();
    const ttl = await redis.client().pttl('talos:home:gate:production');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(60_000);
  });

  it('forgets a viewer once the viewer window has passed, and the list itself expires', async () => {
    // Arrange
    const records = createHomeRecords(redis.client(), { viewerTtlMs: 60_000 });
    const t0 = new Date('2026-11-30T09:00:00.000Z');

    // Act
    await records.opened('U0ALICE', t0);
    await records.opened('U0BOB', new Date(t0.getTime() + 30_000));

    // Assert
    expect((await records.recentViewers(new Date(t0.getTime() + 45_000))).sort()).toEqual(['U0ALICE', 'U0BOB']);
    expect(await records.recentViewers(new Date(t0.getTime() + 75_000))).toEqual(['U0BOB']);
    expect(await redis.client().pttl('talos:home:viewers')).toBeGreaterThan(0);
  });
});

describe('the Home tab on a real Redis', () => {
  it('draws both clusters for the user who opens it, from what the bot recorded', async () => {
    // Arrange
    const { records, publisher } = setup();
    await records.recordGate(gate());

    // Act
    await home!.opened('U0CAROL');

    // Assert
    const [shown] = publisher.of('U0CAROL');
    expect(shown).toContain('*production* · production · <#C0MAINTPRD>');
    expect(shown).toContain('*staging* · staging · <#C0MAINTSTG>');
    expect(shown).toContain('v1.11.5');
    expect(shown).toContain('✅ passed');
  });

  it('is drawn again for recent viewers when an operation takes the lock, with the holder linked to its thread', async () => {
    // Arrange
    const { store, lock, publisher } = setup();
    await home!.opened('U0CAROL');

    // Act
    const op = await runningUpgrade(store, lock);

    // Assert
    const latest = await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes(op.id)), {
      description: 'a redraw naming the operation',
    });
    expect(latest).toContain(
      `<https://talos-test.slack.com/archives/C0MAINTPRD/p1764496800000100|\`${op.id}\`> Talos upgrade to v1.12.11, running`,
    );
    expect(latest).toContain('by <@U0BOB>');
  });

  it('links the lock holder with the thread link the operation keeps, without asking Slack again', async () => {
    // Arrange
    const { store, lock, publisher, permalinks } = setup();
    await home!.opened('U0CAROL');
    const stored = 'https://talos-test.slack.com/archives/C0MAINTPRD/p1764496800000100?kept=1';

    // Act
    const op = await runningUpgrade(store, lock);
    // Paused the way an operation pauses: its approval request expired.
    await store.update(op.id, (o) => ({ ...o, permalink: stored, state: 'awaiting-approval' }));
    await store.update(op.id, (o) => ({ ...o, state: 'paused' }));
    const latest = await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes(', paused')), {
      description: 'a redraw of the paused operation',
    });

    // Assert
    expect(latest).toContain(`<${stored}|`);
    expect(permalinks.filter((p) => p === 'C0MAINTPRD/1764496800.000100').length).toBeLessThanOrEqual(1);
  });

  it('shows an approval waiting with its expiry, and a completed upgrade as the version the cluster runs', async () => {
    // Arrange
    const { store, lock, records, publisher } = setup();
    await records.recordGate(gate({ at: '2026-11-30T09:00:00.000Z' }));
    await home!.opened('U0CAROL');
    const op = await runningUpgrade(store, lock);
    const expiresAt = new Date(Date.now() + 30 * 60_000).toISOString();

    // Act
    await store.update(op.id, (o) => ({
      ...o,
      state: 'awaiting-approval',
      steps: [{ id: 's2', kind: 'upgrade-control-plane', node: '10.0.30.11', nodeName: 'talos-prd-cp-1', status: 'pending' }],
      approvals: [
        { step: 's2', nonce: 'n1', messageTs: '1764496900.000200', requestedAt: new Date().toISOString(), expiresAt, state: 'pending' },
      ],
    }));
    const asking = await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes('Approvals waiting')), {
      description: 'the approval on the Home',
    });
    await store.update(op.id, (o) => ({
      ...o,
      state: 'running',
      approvals: o.approvals.map((a) => ({ ...a, state: 'approved' as const })),
    }));
    await store.update(op.id, (o) => ({ ...o, state: 'completed', endedAt: new Date().toISOString() }));
    await lock.release('production', op.id);
    const done = await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes(`Talos upgrade ${op.id}`)), {
      description: 'the upgrade as the latest version',
    });

    // Assert
    expect(asking).toContain('control plane talos-prd-cp-1 (10.0.30.11)');
    expect(asking).toContain(`expires <!date^${Math.floor(Date.parse(expiresAt) / 1000)}^`);
    expect(done).toContain('v1.12.11');
    expect(done).not.toContain('Approvals waiting');
  });

  it('is drawn again after a health gate, with its verdict and the versions it read', async () => {
    // Arrange
    const { publisher } = setup();
    await home!.opened('U0CAROL');
    const report: GateReport = {
      cluster: 'staging',
      passed: false,
      stopReasons: ['etcd has no leader on 10.0.20.11'],
      checks: [],
      startedAt: new Date().toISOString(),
      durationMs: 1000,
      slowestProbeMs: 900,
      versions: { talos: ['v1.11.5'], kubernetes: ['v1.33.4'] },
    };

    // Act
    home!.gateFinished(report);

    // Assert
    const latest = await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes('etcd has no leader')), {
      description: 'the gate on the Home',
    });
    expect(latest).toContain('❌ failed');
    expect(latest).toContain('v1.33.4');
  });

  it('is not drawn again when an operation changes nothing a viewer sees', async () => {
    // Arrange: the operation runs before the Home exists, so no redraw of its start is still on its way.
    const client = redis.client();
    const op = await runningUpgrade(createOperationStore(client), createClusterLock(client));
    const { store, publisher } = setup({ settleMs: 10 });
    await home!.opened('U0CAROL');
    const before = publisher.views.length;

    // Act: a change no one sees, then, past the settle time a redraw of it would take, one everyone sees.
    await store.update(op.id, (o) => ({ ...o, notes: [...o.notes, 'an audit detail'] }));
    await new Promise((r) => setTimeout(r, 100));
    await store.update(op.id, (o) => ({ ...o, state: 'failed' }));
    await waitFor(() => publisher.of('U0CAROL').at(-1)?.includes(', failed'), { description: 'the failed state on the Home' });

    // Assert: the one redraw is the visible change's.
    expect(publisher.views.length).toBe(before + 1);
  });

  it('publishes to a user at most once per throttle window, and the last change still arrives', async () => {
    // Arrange
    const { store, lock, publisher } = setup({ throttleMs: 400, settleMs: 5 });
    await home!.opened('U0CAROL');
    const op = await runningUpgrade(store, lock);

    // Act: a burst of visible changes, each after the previous redraw was scheduled.
    for (const state of ['waiting-window', 'running', 'failed'] as const) {
      await store.update(op.id, (o) => ({ ...o, state }));
      await new Promise((r) => setTimeout(r, 30));
    }
    await waitFor(() => publisher.of('U0CAROL').at(-1)?.includes(', failed'), {
      description: 'the last state on the Home',
      timeoutMs: 3000,
    });

    // Assert
    const times = publisher.views.filter((v) => v.user === 'U0CAROL').map((v) => v.at);
    const gaps = times.slice(1).map((t, i) => t - times[i]!);
    expect(gaps.every((gap) => gap >= 390)).toBe(true);
    expect(times.length).toBeLessThanOrEqual(3);
  });

  it('draws nothing for users who have not opened the Home', async () => {
    // Arrange: Carol opened it; no one else did.
    const { store, lock, publisher } = setup();
    await home!.opened('U0CAROL');

    // Act
    const op = await runningUpgrade(store, lock);
    // Every viewer is drawn in the same redraw: once Carol's names the operation, the redraw has been made.
    await waitFor(() => publisher.of('U0CAROL').find((v) => v.includes(op.id)), {
      description: "a redraw of Carol's Home naming the operation",
    });

    // Assert
    expect(publisher.views.filter((v) => v.user !== 'U0CAROL')).toEqual([]);
  });

  it("shows a cluster's detail to its channel's members and, in the same redraw, only what `/talos status` shows elsewhere to anyone else", async () => {
    // Arrange: Eve is in production's channel, Mallory in none; neither operates or approves anything.
    const { store, lock, records, publisher } = setup({ channels: { C0MAINTPRD: ['U0EVE'], C0MAINTSTG: [] } });
    await records.recordGate(gate({ passed: false, stopReasons: ['node 10.0.30.12 is NotReady: kubelet stopped posting status'] }));
    await home!.opened('U0EVE');
    await home!.opened('U0MALLORY');

    // Act: an upgrade takes the lock; one redraw for both viewers.
    const op = await runningUpgrade(store, lock);
    const eve = await waitFor(() => publisher.of('U0EVE').find((v) => v.includes(op.id)), { description: "Eve's redraw" });
    const mallory = await waitFor(() => publisher.of('U0MALLORY').find((v) => v.includes(op.id)), { description: "Mallory's redraw" });

    // Assert: Eve sees production in full, staging (not her channel) withheld.
    expect(eve).toContain('*production* · production · <#C0MAINTPRD>');
    expect(eve).toContain('Talos upgrade to v1.12.11, running');
    expect(eve).toContain('by <@U0BOB>');
    expect(eve).toContain('kubelet stopped posting status');
    expect(eve).toContain('*staging* (<#C0MAINTSTG>) — no operation holds it');
    // Mallory: the holder's id and thread, where the channel is, and nothing else of production.
    expect(mallory).toContain(
      `*production* (<#C0MAINTPRD>) — held by <https://talos-test.slack.com/archives/C0MAINTPRD/p1764496800000100|${op.id}>`,
    );
    expect(mallory).toContain('*staging* (<#C0MAINTSTG>) — no operation holds it');
    for (const detail of [
      'v1.12.11',
      'v1.11.5',
      'v1.34.1',
      'U0BOB',
      'U0ALICE',
      'Talos upgrade',
      'kubelet',
      '10.0.30.12',
      'failed',
      'running',
    ]) {
      expect(mallory).not.toContain(detail);
    }
  });

  it('withholds the detail from someone whose channel membership Slack cannot tell', async () => {
    // Arrange: production's members cannot be read.
    const { records, publisher } = setup({ channels: { C0MAINTSTG: [] } });
    await records.recordGate(gate({ passed: false, stopReasons: ['etcd has no leader on 10.0.30.11'] }));

    // Act
    await home!.opened('U0EVE');

    // Assert
    const [shown] = publisher.of('U0EVE');
    expect(shown).toContain('*production* (<#C0MAINTPRD>) — no operation holds it');
    expect(shown).not.toContain('etcd has no leader');
    expect(shown).not.toContain('v1.11.5');
  });
});
