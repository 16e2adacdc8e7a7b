import { describe, expect, it } from 'vitest';
import { ephemeralLonghornDisks, placeOf, type UserVolumeType } from '../../../../src/health/rules/longhorn-disks.ts';

describe('Longhorn disks and the EPHEMERAL wipe', () => {
  it('puts /var and everything under it on EPHEMERAL, except inside a user volume mounted at /var/mnt/<name>', () => {
    const ephemeral = ['/var/lib/longhorn/', '/var/lib/longhorn', '/var', '/var/mnt', '/var/mnt/', '/var/mnt/longhorn/../../lib/longhorn'];
    expect(ephemeral.map(placeOf)).toEqual(ephemeral.map(() => ({ on: 'ephemeral' })));
    expect(['/var/mnt/longhorn', '/var/mnt/longhorn/', '/var/mnt/data/longhorn'].map(placeOf)).toEqual([
      { on: 'user-volume', name: 'longhorn' },
      { on: 'user-volume', name: 'longhorn' },
      { on: 'user-volume', name: 'data' },
    ]);
    expect(['/mnt/longhorn', '/variable/x'].map(placeOf)).toEqual([{ on: 'elsewhere' }, { on: 'elsewhere' }]);
  });

  it('names the control planes whose disks the wipe would take: on EPHEMERAL, or in a user volume that is a directory, absent or unread', () => {
    const node = (name: string, disks: Record<string, string>) => ({
      metadata: { name },
      spec: { disks: Object.fromEntries(Object.entries(disks).map(([d, path]) => [d, { path }])) },
    });
    const objects = [
      node('cp-2', { 'default-disk-b': '/var/lib/longhorn/', kept: '/var/mnt/longhorn' }),
      node('cp-1', { 'default-disk-a': '/var/mnt/longhorn' }),
      node('cp-3', { folder: '/var/mnt/longhorn', missing: '/var/mnt/other', unread: '/var/mnt/odd' }),
      node('worker-1', { 'default-disk-w': '/var/lib/longhorn/' }),
      { metadata: {} },
    ];
    const types: Record<string, UserVolumeType> = {
      'cp-1/longhorn': 'partition',
      'cp-2/longhorn': 'disk',
      'cp-3/longhorn': 'directory',
      'cp-3/odd': { unread: 'no answer within 5 s' },
    };

    const found = ephemeralLonghornDisks(objects, ['cp-1', 'cp-2', 'cp-3'], (n, v) => types[`${n}/${v}`] ?? 'absent');

    expect(found).toEqual([
      { node: 'cp-2', disk: 'default-disk-b', path: '/var/lib/longhorn/', why: 'on EPHEMERAL' },
      { node: 'cp-3', disk: 'folder', path: '/var/mnt/longhorn', why: 'user volume u-longhorn is a directory on EPHEMERAL' },
      { node: 'cp-3', disk: 'missing', path: '/var/mnt/other', why: 'no user volume u-other: /var/mnt/other is a folder on EPHEMERAL' },
      { node: 'cp-3', disk: 'unread', path: '/var/mnt/odd', why: 'user volume u-odd could not be read (no answer within 5 s)' },
    ]);
  });
});
