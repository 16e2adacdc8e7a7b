import { describe, expect, it } from 'vitest';
import { followUpsOf } from '../../../../../jobs/playbooks/terraform-apply/follow-up-link.ts';

const UPGRADE = { op: 'op-up1', kind: 'kubernetes' as const, version: 'v1.34.2' };

describe('the link between an upgrade and its Terraform follow-up', () => {
  it('follows up an upgrade only for a kind whose declared version the plan moves', () => {
    // Arrange
    const upgrades = { kubernetes: { op: 'op-up1', version: 'v1.34.2' }, talos: { op: 'op-up0', version: 'v1.12.1' } };

    // Act
    const moved = followUpsOf(upgrades, { kubernetes: true, talos: false });
    const none = followUpsOf(upgrades, {});

    // Assert
    expect(moved).toEqual([UPGRADE]);
    expect(none).toEqual([]);
  });
});
