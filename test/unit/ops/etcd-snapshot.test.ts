import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseInventory } from '../../../src/config/inventory.ts';
import { errorCode, errorText } from '../../../src/errors.ts';
import { takeEtcdSnapshot } from '../../../src/ops/etcd-snapshot.ts';
import type { Talosctl } from '../../../src/talos/talosctl.ts';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'snapshot-placement-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function cluster(snapshotDir: string) {
  const text = `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/tf/production
    controlPlanes: [10.0.30.11]
    workers: [10.0.30.21]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: ${snapshotDir}
    operators: [U0ALICE]
    approvers: [U0CAROL]
`;
  return parseInventory(text, 'clusters.yaml').clusters[0]!;
}

/** A talosctl that records every call and answers none: a snapshot that reached it would fail the test. */
function recordingTalosctl(calls: string[][]): Talosctl {
  return {
    binary: 'talosctl',
    run: (args) => {
      calls.push(args);
      return Promise.reject(new Error('talosctl was called'));
    },
  };
}

const kube = {
  listNodes: () =>
    Promise.resolve([
      { metadata: { name: 'talos-prd-cp-1' }, status: { addresses: [{ type: 'InternalIP', address: '10.0.30.11' }] } },
      { metadata: { name: 'talos-prd-w-1' }, status: { addresses: [{ type: 'InternalIP', address: '10.0.30.21' }] } },
    ]),
};

describe('takeEtcdSnapshot on a cluster the bot runs on', () => {
  it('refuses before any talosctl call or file, saying why and what to do', async () => {
    // Arrange
    const calls: string[][] = [];
    const snapshotDir = join(dir, 'snapshots');

    // Act
    const error: unknown = await takeEtcdSnapshot(recordingTalosctl(calls), cluster(snapshotDir), {
      timeoutMs: 5000,
      host: { placement: { nodeName: 'talos-prd-w-1', hostIp: '10.0.30.21', podIp: '10.244.1.7' }, kube },
    }).catch((e: unknown) => e);

    // Assert
    expect(errorCode(error)).toBe('snapshot-on-cluster');
    expect(errorText(error)).toBe(
      'the bot runs on talos-prd-w-1, a node of production (BOT_NODE_NAME talos-prd-w-1): an etcd snapshot it took would stay on the cluster it is meant to rescue, so it takes none, and nothing that needs one starts. ' +
        'Run the bot outside production, on a management cluster or host (docs/deploy.md, "Where to run it"); another snapshotDir is not enough, since the bot, its Redis and its records go down with production and its upgrades drain the bot\'s own node.',
    );
    expect(calls).toEqual([]);
    await expect(readdir(snapshotDir)).rejects.toThrow(/ENOENT/);
  });

  it('goes on to talosctl when the bot runs elsewhere, and when the Nodes cannot be read but no address matches', async () => {
    // Arrange
    const calls: string[][] = [];
    const elsewhere = { nodeName: 'talos-mgmt-w-1', hostIp: '10.0.50.21', podIp: undefined };
    const unreadable = { listNodes: () => Promise.reject(new Error('connect ECONNREFUSED')) };

    // Act
    await takeEtcdSnapshot(recordingTalosctl(calls), cluster(dir), { timeoutMs: 5000, host: { placement: elsewhere, kube } }).catch(
      () => undefined,
    );
    await takeEtcdSnapshot(recordingTalosctl(calls), cluster(dir), {
      timeoutMs: 5000,
      host: { placement: elsewhere, kube: unreadable },
    }).catch(() => undefined);

    // Assert: both reached talosctl (`etcd status`, to find a healthy member).
    expect(calls).toEqual([
      ['etcd', 'status'],
      ['etcd', 'status'],
    ]);
  });

  it('refuses by the host IP alone when the Nodes cannot be read', async () => {
    // Arrange
    const calls: string[][] = [];
    const unreadable = { listNodes: () => Promise.reject(new Error('connect ECONNREFUSED')) };

    // Act
    const error: unknown = await takeEtcdSnapshot(recordingTalosctl(calls), cluster(dir), {
      timeoutMs: 5000,
      host: { placement: { nodeName: 'talos-prd-w-1', hostIp: '10.0.30.21', podIp: undefined }, kube: unreadable },
    }).catch((e: unknown) => e);

    // Assert
    expect(errorCode(error)).toBe('snapshot-on-cluster');
    expect(errorText(error)).toMatch(/^the bot runs on 10\.0\.30\.21, a node of production \(BOT_HOST_IP 10\.0\.30\.21\)/);
    expect(calls).toEqual([]);
  });
});
