import { describe, expect, it } from 'vitest';
import { mutatesTalos } from '../../../../jobs/engine/lock-fence.ts';

describe('the talosctl calls the lock fence guards', () => {
  it('fences the calls that change a node, the bootstrap among them, and lets reads through', () => {
    const changes = [
      ['bootstrap', '--recover-from=/var/backups/talos-etcd/s.db'],
      ['reset', '--graceful=false'],
      ['reboot'],
      ['etcd', 'remove-member', '0123456789abcdef'],
    ];
    const reads = [['service', 'etcd'], ['etcd', 'members'], ['etcd', 'status'], ['etcd', 'snapshot', '/tmp/s.db'], ['version']];

    expect(changes.map(mutatesTalos)).toEqual(changes.map(() => true));
    expect(reads.map(mutatesTalos)).toEqual(reads.map(() => false));
  });
});
