import { describe, expect, it } from 'vitest';
import { upgradeOrder } from '../../../src/rules/upgrade-order.ts';

describe('upgradeOrder', () => {
  it('puts workers first, then control planes, each in inventory order', () => {
    const nodes = [
      { address: '10.0.30.11', role: 'controlplane' as const, name: 'cp-1' },
      { address: '10.0.30.21', role: 'worker' as const, name: 'w-1' },
      { address: '10.0.30.12', role: 'controlplane' as const, name: 'cp-2' },
      { address: '10.0.30.22', role: 'worker' as const, name: 'w-2' },
    ];

    expect(upgradeOrder(nodes).map((n) => n.name)).toEqual(['w-1', 'w-2', 'cp-1', 'cp-2']);
  });

  it('does not change its input', () => {
    const nodes = [
      { address: '10.0.30.11', role: 'controlplane' as const },
      { address: '10.0.30.21', role: 'worker' as const },
    ];

    upgradeOrder(nodes);

    expect(nodes.map((n) => n.address)).toEqual(['10.0.30.11', '10.0.30.21']);
  });

  it('refuses an address listed twice', () => {
    const nodes = [
      { address: '10.0.30.11', role: 'controlplane' as const },
      { address: '10.0.30.11', role: 'worker' as const },
    ];

    expect(() => upgradeOrder(nodes)).toThrow('10.0.30.11 appears twice in the inventory: each node is upgraded once');
  });
});
