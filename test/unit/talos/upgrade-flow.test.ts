import { describe, expect, it } from 'vitest';
import { upgradesThroughLifecycleService } from '../../../src/talos/upgrade-flow.ts';

describe('upgradesThroughLifecycleService', () => {
  it('is true from Talos 1.13 on, with or without the leading v or a suffix', () => {
    expect(['v1.13.0', '1.13.9', 'v1.13.0-rc.1', 'v1.14.2', 'v2.0.0'].map(upgradesThroughLifecycleService)).toEqual([
      true,
      true,
      true,
      true,
      true,
    ]);
  });

  it('is false before 1.13 and for what is not a version', () => {
    expect(['v1.12.11', '1.11.6', 'v0.14.0', '', 'Talos'].map(upgradesThroughLifecycleService)).toEqual([
      false,
      false,
      false,
      false,
      false,
    ]);
  });
});
