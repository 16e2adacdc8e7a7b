import { describe, expect, it } from 'vitest';
import { longhornView, unhealthyVolumes } from '../../../../src/health/rules/longhorn.ts';

function volume(name: string, state: string, robustness: string): unknown {
  return { metadata: { name }, status: { state, robustness, kubernetesStatus: { namespace: 'apps', pvcName: `claim-${name}` } } };
}

describe('unhealthyVolumes', () => {
  it('waits for a degraded or faulted volume and names its claim', () => {
    expect(
      unhealthyVolumes([
        volume('pvc-1', 'attached', 'degraded'),
        volume('pvc-2', 'attached', 'faulted'),
        volume('pvc-3', 'attached', 'healthy'),
      ]),
    ).toEqual(['apps/claim-pvc-1 (volume pvc-1): degraded (attached)', 'apps/claim-pvc-2 (volume pvc-2): faulted (attached)']);
  });

  it('does not count a detached volume, whose robustness is unknown, as degraded', () => {
    expect(unhealthyVolumes([volume('pvc-1', 'detached', 'unknown')])).toEqual([]);
  });

  it('waits for a volume still attaching, whose robustness is not known yet', () => {
    expect(unhealthyVolumes([volume('pvc-1', 'attaching', 'unknown')])).toEqual(['apps/claim-pvc-1 (volume pvc-1): unknown (attaching)']);
  });

  it('names an object it cannot read instead of skipping it', () => {
    expect(unhealthyVolumes([{ status: {} }])).toEqual(['volume #1: unreadable']);
  });
});

describe('longhornView', () => {
  it('reads the node-drain-policy setting, with the default when it is missing', () => {
    const setting = { metadata: { name: 'node-drain-policy' }, value: 'always-allow' };

    expect(longhornView([], [], [setting]).view.drainPolicy).toBe('always-allow');
    expect(longhornView([], [], []).view.drainPolicy).toBe('block-if-contains-last-replica');
  });

  it('names the objects it cannot read', () => {
    expect(longhornView([], [{ metadata: { name: 'r' }, spec: {} }], []).unreadable).toEqual(['replica #1']);
  });
});
