import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { requestUpgrade, waitForRootState } from '../support/upgrade-flow.ts';

// talosctl up to 1.13 reads a resource from several nodes by resolving it on the first one and listing the
// other nodes' failures without their names (cmd/talosctl/pkg/talos/helpers/resources.go, get.go at v1.13.9).
// The bot asks the nodes one by one before it blames one.

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

describe('a read of several nodes with one of them down', () => {
  it('names only the node that is down when it is the first one asked, not every node', async () => {
    // Arrange: the first control plane does not answer, so the multi-node `get extensions` prints nothing at all.
    h.sim.faults.set('production', { nodeUnreachable: ['10.0.30.11'] });

    // Act
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11', { channel: CHANNELS.production });
    const refused = await waitForRootState(h, plan, /refused|planned/, CHANNELS.production);
    await waitForSettled(h);
    h.sim.faults.clear('production', 'nodeUnreachable');

    // Assert
    const shown = JSON.stringify(refused.blocks);
    expect(refused.text).toContain('refused');
    expect(shown).toContain('10.0.30.11 does not answer talosctl get extensions');
    expect(shown).not.toContain('10.0.30.12 does not answer talosctl get extensions');
    expect(shown).not.toContain('10.0.30.13 does not answer talosctl get extensions');
    const reads = h.sim.calls.filter(
      (c) => c.bin === 'talosctl' && c.argv[0] === 'get' && c.argv[1] === 'extensions' && c.cluster === 'production',
    );
    // The failed read of all three, then each node on its own.
    expect(reads.map((c) => c.argv[c.argv.indexOf('--nodes') + 1])).toEqual(
      expect.arrayContaining(['10.0.30.11,10.0.30.12,10.0.30.13', '10.0.30.11', '10.0.30.12', '10.0.30.13']),
    );
  }, 120_000);
});
