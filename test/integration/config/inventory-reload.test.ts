import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startInventoryReload } from '../../../src/bootstrap/inventory-reload.ts';
import { loadConfig } from '../../../src/config/env.ts';
import { loadInventory, resolveCluster } from '../../../src/config/inventory.ts';
import { InventoryHolder } from '../../../src/config/inventory-holder.ts';
import { watchInventory } from '../../../src/config/inventory-reload.ts';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';
import { createMetrics } from '../../../src/metrics/metrics.ts';
import type { ChatMessage, ChatPort } from '../../../src/port/chat-port.ts';

function cluster(name: string, channel: string, controlPlanes: string, extra = ''): string {
  return `  ${name}:
    environment: staging
    channel: ${channel}
    terraformDir: /srv/infra/terraform/${name}
    controlPlanes: [${controlPlanes}]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
${extra}`;
}

const FIRST = `clusters:\n${cluster('staging', 'C0MAINTSTG', '10.0.20.11')}`;

let dir: string;
let generation = 0;
/** The mounted path, as a ConfigMap volume lays it out: `clusters.yaml` → `..data/clusters.yaml`, `..data` → a timestamped directory. */
let mounted: string;

/** Edits the inventory the way the kubelet updates a ConfigMap volume: a new directory, then an atomic swap of the `..data` link. */
async function kubeletWrites(text: string): Promise<void> {
  generation += 1;
  const next = `..2026_12_02_${generation}`;
  await mkdir(join(dir, next));
  await writeFile(join(dir, next, 'clusters.yaml'), text);
  await symlink(next, join(dir, '..data_tmp'));
  await rename(join(dir, '..data_tmp'), join(dir, '..data'));
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'inventory-reload-'));
  await kubeletWrites(FIRST);
  mounted = join(dir, 'clusters.yaml');
  await symlink('..data/clusters.yaml', mounted);
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('reloading the inventory file', () => {
  it('applies a good edit for new commands, and a running operation keeps the cluster it started with', async () => {
    // Arrange
    const holder = new InventoryHolder(loadInventory(mounted));
    const applied: string[][] = [];
    const reloader = await watchInventory({
      path: mounted,
      holder,
      intervalMs: 0,
      onApplied: (inv) => void applied.push(inv.clusters.map((c) => c.name)),
      onRefused: () => expect.fail('a good edit was refused'),
      onError: (error) => expect.fail(String(error)),
    });
    const running = { id: 'op-running', cluster: 'staging' };
    const started = holder.forOperation(running)!;

    // Act
    const unchanged = await reloader.check();
    await kubeletWrites(
      `clusters:\n${cluster('staging', 'C0MAINTSTG', '10.0.20.11, 10.0.20.12')}${cluster('lab', 'C0MAINTLAB', '10.0.40.11')}`,
    );
    const result = await reloader.check();

    // Assert
    expect(unchanged).toBe('unchanged');
    expect(result).toBe('applied');
    expect(applied).toEqual([['staging', 'lab']]);
    expect(holder.generation).toBe(1);
    const resolved = resolveCluster(holder, 'C0MAINTLAB', undefined);
    expect(resolved.ok && resolved.cluster.name).toBe('lab');
    expect(holder.forOperation(running)).toBe(started);
    expect(holder.forOperation(running)!.controlPlanes).toEqual(['10.0.20.11']);
    expect(holder.forOperation({ id: 'op-new', cluster: 'staging' })!.controlPlanes).toEqual(['10.0.20.11', '10.0.20.12']);
    reloader.stop();
  });

  it('refuses a bad edit once, naming every problem, posts it to each channel, counts it, and keeps the last good inventory', async () => {
    // Arrange
    const config = loadConfig({
      SLACK_BOT_TOKEN: 'xoxb-1111-2222-botsecretvalue',
      SLACK_APP_TOKEN: 'xapp-1-A111-2222-appsecretvalue',
      REDIS_URL: 'redis://127.0.0.1:6379',
      CLUSTERS_FILE: mounted,
      CLUSTERS_RELOAD_SECONDS: '0',
    });
    const inventory = new InventoryHolder(loadInventory(mounted));
    const before = inventory.current();
    const metrics = createMetrics();
    const posts: { channel: string; message: ChatMessage }[] = [];
    const chat = { post: (channel: string, message: ChatMessage) => (posts.push({ channel, message }), Promise.resolve({ ts: '1.1' })) };
    const logger = createLogger({ level: 'silent', scrubber: new SecretScrubber() });
    let schedulesSynced = 0;
    const reloader = await startInventoryReload({ config, inventory, logger }, metrics, chat as unknown as ChatPort, () => {
      schedulesSynced += 1;
    });

    // Act: an unknown key and an address in two clusters, each of which alone refuses the file
    await kubeletWrites(
      `clusters:\n${cluster('staging', 'C0MAINTSTG', '10.0.20.11', '    aprovers: [U0DAVE]\n')}${cluster('lab', 'C0MAINTLAB', '10.0.20.11')}`,
    );
    const first = await reloader.check();
    const again = await reloader.check();

    // Assert
    expect([first, again]).toEqual(['refused', 'unchanged']);
    expect(inventory.current()).toBe(before);
    expect(inventory.clusters.map((c) => c.name)).toEqual(['staging']);
    expect(posts.map((p) => p.channel)).toEqual(['C0MAINTSTG']);
    expect(posts[0]!.message.text).toContain('did you mean approvers?');
    expect(posts[0]!.message.text).toContain('address 10.0.20.11 also belongs to staging');
    expect(posts[0]!.message.text).toContain('last good one');
    const counted = (await metrics.registry.getSingleMetric('talos_chatops_inventory_reloads_total')!.get()).values;
    expect(counted.find((v) => v.labels.result === 'refused')?.value).toBe(1);
    expect(counted.find((v) => v.labels.result === 'applied')?.value).toBe(0);
    expect(schedulesSynced).toBe(0);

    // Act: the fix is applied, and the schedules follow it
    await kubeletWrites(FIRST.replace('U0ALICE', 'U0ALICE, U0DAVE'));
    expect(await reloader.check()).toBe('applied');
    expect(inventory.clusters[0]!.operators).toEqual(['U0ALICE', 'U0DAVE']);
    expect(schedulesSynced).toBe(1);
    expect(await readFile(mounted, 'utf8')).toContain('U0DAVE');
    reloader.stop();
  });
});
