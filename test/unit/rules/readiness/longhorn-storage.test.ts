import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { longhornStorageGate, type UserVolumesByNode } from '../../../../src/rules/readiness/longhorn-storage.ts';

const ok = <T>(value: T) => ({ ok: true as const, value });
const NODES: V1Node[] = ['cp-1', 'cp-2'].map((name) => ({ metadata: { name } }));

function longhornNode(name: string, paths: string[]) {
  return { metadata: { name }, spec: { disks: Object.fromEntries(paths.map((path, i) => [`default-disk-${i}`, { path }])) } };
}

const PARTITIONS: UserVolumesByNode = new Map([
  ['cp-1', new Map([['longhorn', 'partition']])],
  ['cp-2', new Map([['longhorn', 'partition']])],
]);

describe('longhornStorageGate', () => {
  it('passes when every node keeps its Longhorn disk on a partition user volume', () => {
    const gate = longhornStorageGate(
      ok(NODES),
      ok([longhornNode('cp-1', ['/var/mnt/longhorn']), longhornNode('cp-2', ['/var/mnt/longhorn'])]),
      ok(PARTITIONS),
    );
    expect(gate.status).toBe('passed');
    expect(gate.evidence).toContain('cp-1  disks: default-disk-0 at /var/mnt/longhorn  user volumes: u-longhorn (partition)');
  });

  it("fails a disk on Longhorn's default path, a directory user volume and a node without Longhorn", () => {
    const volumes: UserVolumesByNode = new Map([
      ['cp-1', new Map([['longhorn', 'directory']])],
      ['cp-2', new Map()],
    ]);
    const gate = longhornStorageGate(
      ok([...NODES, { metadata: { name: 'worker-1' } }]),
      ok([longhornNode('cp-1', ['/var/mnt/longhorn']), longhornNode('cp-2', ['/var/lib/longhorn/'])]),
      ok(volumes),
    );
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('worker-1 has no Longhorn node (nodes.longhorn.io)');
    expect(gate.summary).toContain('cp-1: disk default-disk-0 at /var/mnt/longhorn, user volume u-longhorn is a directory on EPHEMERAL');
    expect(gate.summary).toContain('cp-2: disk default-disk-0 at /var/lib/longhorn/, on EPHEMERAL');
    expect(gate.summary).toContain('a UserVolumeConfig named longhorn, mounted at /var/mnt/longhorn');
  });

  it('fails a node whose volumes could not be read, and a disk with no user volume behind it', () => {
    const gate = longhornStorageGate(
      ok(NODES),
      ok([longhornNode('cp-1', ['/var/mnt/longhorn']), longhornNode('cp-2', ['/var/mnt/data'])]),
      ok(
        new Map<string, Map<string, string> | { unread: string }>([
          ['cp-1', { unread: 'connection refused' }],
          ['cp-2', new Map([['longhorn', 'partition']])],
        ]),
      ),
    );
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('user volume u-longhorn could not be read (connection refused)');
    expect(gate.summary).toContain('no user volume u-data: /var/mnt/data is a folder on EPHEMERAL');
  });

  it('fails without Longhorn and on unread input', () => {
    expect(longhornStorageGate(ok(NODES), ok(undefined), ok(PARTITIONS)).summary).toContain('Longhorn is not installed');
    expect(longhornStorageGate(ok(NODES), ok([]), { ok: false, error: 'timed out' }).summary).toContain(
      "could not read the nodes' Talos volumes (talosctl get volumestatus): timed out",
    );
  });
});
