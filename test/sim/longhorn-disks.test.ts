import { CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { describe } from 'vitest';
import { productionShape } from './shapes.ts';
import { simTest } from './sim-fixture.ts';

const base = productionShape();
const it = simTest({
  clusters: [
    productionShape({
      nodes: base.nodes.map((n, i) =>
        i === 1 ? { ...n, longhornDataPath: '/var/lib/longhorn/' } : i === 2 ? { ...n, longhornVolumeType: 'directory' as const } : n,
      ),
    }),
  ],
});

interface LonghornNode {
  metadata: { name: string; namespace: string };
  spec: { disks: Record<string, { path: string; diskType: string }> };
}

describe.concurrent('Longhorn disks and the user volumes under them', () => {
  it('serves nodes.longhorn.io with each disk path, and volumestatus with the user volume behind /var/mnt/<name>', async ({
    f,
    expect,
  }) => {
    const kc = new KubeConfig();
    kc.loadFromString(f.sim.kubeconfig('production'));
    const list = (await kc
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject({ group: 'longhorn.io', version: 'v1beta2', plural: 'nodes' })) as { items: LonghornNode[] };
    const volumes = await Promise.all(
      ['10.0.30.11', '10.0.30.12', '10.0.30.13'].map((n) =>
        f.talosctl('production', ['-n', n, '-e', n, 'get', 'volumestatus', '-o', 'json']),
      ),
    );
    const users = volumes.map((v) =>
      v.stdout
        .split(/\n(?=\{)/)
        .map((o) => JSON.parse(o) as { metadata: { id: string }; spec: { type: string } })
        .filter((o) => o.metadata.id.startsWith('u-'))
        .map((o) => [o.metadata.id, o.spec.type]),
    );

    expect(
      list.items.map((n) => [n.metadata.name, n.metadata.namespace, Object.values(n.spec.disks).map((d) => [d.path, d.diskType])]),
    ).toEqual([
      ['talos-prd-cp-1', 'longhorn-system', [['/var/mnt/longhorn', 'filesystem']]],
      ['talos-prd-cp-2', 'longhorn-system', [['/var/lib/longhorn/', 'filesystem']]],
      ['talos-prd-cp-3', 'longhorn-system', [['/var/mnt/longhorn', 'filesystem']]],
    ]);
    expect(list.items.every((n) => Object.keys(n.spec.disks).every((d) => /^default-disk-[0-9a-f]+$/.test(d)))).toBe(true);
    expect(volumes.map((v) => v.exitCode)).toEqual([0, 0, 0]);
    expect(users).toEqual([[['u-longhorn', 'partition']], [], [['u-longhorn', 'directory']]]);
  });
});
