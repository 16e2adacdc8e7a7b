import { describe, expect, it } from 'vitest';
import { ephemeralLonghornDisks, onEphemeral } from '../../../src/health/rules/longhorn-disks.ts';

describe('Longhorn disks on EPHEMERAL', () => {
  it('puts /var and everything under it on EPHEMERAL, except inside a user volume mounted at /var/mnt/<name>', () => {
    expect(
      [
        '/var/lib/longhorn/',
        '/var/lib/longhorn',
        '/var',
        '/var/mnt',
        '/var/mnt/',
        '/var/mnt/longhorn/../../lib/longhorn',
        '/var/longhorn',
      ].map(onEphemeral),
    ).toEqual([true, true, true, true, true, true, true]);
    expect(['/var/mnt/longhorn', '/var/mnt/longhorn/', '/var/mnt/data/longhorn', '/mnt/longhorn', '/variable/x'].map(onEphemeral)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });

  it('names the disks of the control planes only, and skips objects it cannot read', () => {
    const node = (name: string, disks: Record<string, string>) => ({
      metadata: { name },
      spec: { disks: Object.fromEntries(Object.entries(disks).map(([d, path]) => [d, { path }])) },
    });
    const objects = [
      node('cp-2', { 'default-disk-b': '/var/lib/longhorn/', extra: '/var/mnt/longhorn' }),
      node('cp-1', { 'default-disk-a': '/var/mnt/longhorn' }),
      node('worker-1', { 'default-disk-w': '/var/lib/longhorn/' }),
      { metadata: {} },
    ];

    expect(ephemeralLonghornDisks(objects, ['cp-1', 'cp-2', 'cp-3'])).toEqual([
      { node: 'cp-2', disk: 'default-disk-b', path: '/var/lib/longhorn/' },
    ]);
  });
});
