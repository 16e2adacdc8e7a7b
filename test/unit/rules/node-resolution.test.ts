import { describe, expect, it } from 'vitest';
import { parseInventory } from '../../../src/config/inventory.ts';
import { namedNodeCheck, resolveNode, type LastLook } from '../../../src/rules/node-resolution.ts';
import { inventory } from '../../support/engine-fixture.ts';

const NOW = new Date('2026-12-05T03:54:00.000Z');
const LOOK: LastLook = {
  controlPlanes: ['10.0.30.11', '10.0.30.12'],
  workers: ['10.0.30.21'],
  nodeNames: { '10.0.30.11': 'talos-prd-cp-1', '10.0.30.12': 'talos-prd-cp-2', '10.0.30.21': 'talos-prd-w-1' },
  observedAt: '2026-12-05T03:51:00.000Z',
};

function unlisted(extra = '') {
  return parseInventory(
    `clusters:\n  production:\n    environment: production\n    channel: C0MAINTPRD\n    terraformDir: /srv/tf\n    installerPlatform: nocloud\n    hostLabel: h\n    snapshotDir: /var/b\n    operators: [U0ALICE]\n    approvers: [U0CAROL]\n${extra}`,
    'clusters.yaml',
  ).clusters[0]!;
}

describe('a node named by a command', () => {
  it('with node lists, resolves a name or an address of the inventory, and lists every node for anything else', () => {
    // Arrange
    const production = inventory('    nodeNames:\n      10.0.30.11: talos-prd-cp-1\n      10.0.30.12: talos-prd-cp-2\n').clusters[0]!;

    // Act / Assert
    expect(resolveNode(production, 'talos-prd-cp-2', undefined, NOW)).toEqual({
      ok: true,
      address: '10.0.30.12',
      named: { name: 'talos-prd-cp-2', by: 'inventory' },
    });
    expect(resolveNode(production, '10.0.30.13', undefined, NOW)).toEqual({ ok: true, address: '10.0.30.13' });
    expect(resolveNode(production, 'talos-prd-cp-9', undefined, NOW)).toEqual({
      ok: false,
      reason:
        'talos-prd-cp-9 is not a node of *production*. Its nodes: talos-prd-cp-1 (10.0.30.11), talos-prd-cp-2 (10.0.30.12), 10.0.30.13.',
    });
  });

  it('without node lists, resolves a name the last look saw, and says which look and how old', () => {
    // Act
    const found = resolveNode(unlisted(), 'talos-prd-w-1', LOOK, NOW);

    // Assert
    expect(found).toEqual({
      ok: true,
      address: '10.0.30.21',
      named: { name: 'talos-prd-w-1', by: 'last-look', seenAt: LOOK.observedAt },
      said: 'talos-prd-w-1 is 10.0.30.21 as of the last look at the cluster, 3 min ago; the preflight looks again and refuses if that changed.',
    });
    expect(resolveNode(unlisted(), '10.0.30.14', LOOK, NOW)).toEqual({ ok: true, address: '10.0.30.14' });
  });

  it('refuses a name no source knows, with the nodes of the last look listed', () => {
    // Act
    const found = resolveNode(unlisted(), 'talos-prd-cp-9', LOOK, NOW);

    // Assert
    expect(found).toEqual({
      ok: false,
      reason:
        'No node of *production* is named talos-prd-cp-9. Its nodes at the last look, 3 min ago: talos-prd-cp-1 (10.0.30.11), talos-prd-cp-2 (10.0.30.12), talos-prd-w-1 (10.0.30.21). Name one of them or give its IP address; `/talos health` looks again.',
    });
  });

  it('refuses a name before any look, saying to run /talos health or give the address', () => {
    // Act
    const found = resolveNode(unlisted(), 'talos-prd-cp-2', undefined, NOW);

    // Assert
    expect(found.ok).toBe(false);
    expect(!found.ok && found.reason).toContain('run `/talos health` first');
    expect(!found.ok && found.reason).toContain("give the node's IP address");
  });

  it('refuses a name the inventory and the last look put at different addresses', () => {
    // Act
    const found = resolveNode(unlisted('    nodeNames: {10.0.30.13: talos-prd-cp-2}\n'), 'talos-prd-cp-2', LOOK, NOW);

    // Assert
    expect(found.ok).toBe(false);
    expect(!found.ok && found.reason).toContain('talos-prd-cp-2 is 10.0.30.13 in the inventory');
    expect(!found.ok && found.reason).toContain('saw it at 10.0.30.12');
  });
});

describe("the preflight's look at the name", () => {
  const named = { name: 'talos-prd-cp-2', by: 'last-look' as const, seenAt: LOOK.observedAt };

  it('confirms the name the address still carries', () => {
    // Act
    const check = namedNodeCheck({ name: 'production' }, '10.0.30.12', named, LOOK.nodeNames);

    // Assert
    expect(check.refusal).toBeUndefined();
    expect(check.note).toContain("this preflight's own look confirms it");
  });

  it('refuses when the address carries another name now, and says where the name went', () => {
    // Act
    const check = namedNodeCheck({ name: 'production' }, '10.0.30.12', named, {
      '10.0.30.12': 'talos-prd-cp-4',
      '10.0.30.14': 'talos-prd-cp-2',
    });

    // Assert
    expect(check.refusal).toBe(
      'talos-prd-cp-2 was 10.0.30.12 by the last look at the cluster (2026-12-05 03:51 UTC), but 10.0.30.12 is talos-prd-cp-4 now and talos-prd-cp-2 is 10.0.30.14, so nothing was planned: see the nodes as they are with `/talos health`, then name the node again or give its address.',
    );
  });

  it("refuses a last look's name whose address no source names now, but not an inventory name", () => {
    // Act / Assert
    expect(namedNodeCheck({ name: 'production' }, '10.0.30.12', named, {}).refusal).toContain('no source names 10.0.30.12 now');
    expect(namedNodeCheck({ name: 'production' }, '10.0.30.12', { name: 'talos-prd-cp-2', by: 'inventory' }, {})).toEqual({});
  });
});
