import { describe, expect, it } from 'vitest';
import { rebuildLine, volumeRebuilds } from '../../../../src/health/rules/longhorn-rebuild.ts';

const volume = (name: string, robustness: string, state = 'attached') => ({
  metadata: { name },
  status: { state, robustness, kubernetesStatus: { pvcName: `data-${name}`, namespace: 'apps' } },
});
const replica = (name: string, volumeName: string, nodeID: string) => ({ metadata: { name }, spec: { volumeName, nodeID } });
const engine = (volumeName: string, addresses: Record<string, string>, rebuild: Record<string, unknown>) => ({
  metadata: { name: `${volumeName}-e-0` },
  spec: { volumeName },
  status: { currentReplicaAddressMap: addresses, rebuildStatus: rebuild },
});

describe('volumeRebuilds', () => {
  it("lists only the volumes not healthy, each with the rebuilding replicas' node and progress from the engine", () => {
    const volumes = [volume('pvc-a', 'degraded'), volume('pvc-b', 'healthy'), volume('pvc-c', 'unknown', 'detached')];
    const engines = [
      engine(
        'pvc-a',
        { 'pvc-a-r-1': '10.0.30.11:10000', 'pvc-a-r-2': '10.0.30.12:10000' },
        {
          'tcp://10.0.30.11:10000': { isRebuilding: true, progress: 42, state: 'in_progress', error: '' },
          'tcp://10.0.30.12:10000': { isRebuilding: false, progress: 100, state: 'complete', error: '' },
        },
      ),
    ];
    const replicas = [replica('pvc-a-r-1', 'pvc-a', 'talos-prd-cp-1'), replica('pvc-a-r-2', 'pvc-a', 'talos-prd-cp-2')];

    const rebuilds = volumeRebuilds(volumes, engines, replicas);

    expect(rebuilds).toEqual([
      {
        volume: 'apps/data-pvc-a (volume pvc-a)',
        name: 'pvc-a',
        robustness: 'degraded (attached)',
        rebuilding: [{ node: 'talos-prd-cp-1', progress: 42 }],
        errors: [],
      },
    ]);
    expect(rebuildLine(rebuilds[0]!)).toBe('apps/data-pvc-a (volume pvc-a): degraded (attached); rebuilding on talos-prd-cp-1: 42%');
  });

  it('names a failed rebuild, and a degraded volume whose engine reports no rebuild yet', () => {
    const volumes = [volume('pvc-a', 'degraded'), volume('pvc-b', 'faulted')];
    const engines = [
      engine('pvc-a', { 'pvc-a-r-1': '10.0.30.11:10000' }, { 'tcp://10.0.30.11:10000': { state: 'error', error: 'connection reset' } }),
    ];

    const lines = volumeRebuilds(volumes, engines, undefined).map(rebuildLine);

    expect(lines).toEqual([
      'apps/data-pvc-a (volume pvc-a): degraded (attached); rebuild of the replica on pvc-a-r-1 failed: connection reset',
      'apps/data-pvc-b (volume pvc-b): faulted (attached); no rebuild reported yet',
    ]);
  });
});
