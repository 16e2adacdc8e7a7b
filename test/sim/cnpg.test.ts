import { CustomObjectsApi, KubeConfig, PolicyV1Api } from '@kubernetes/client-node';
import { describe } from 'vitest';
import { simTest, type SimFixture } from './sim-fixture.ts';
import { productionShape, stagingShape } from './shapes.ts';

const it = simTest({
  timing: { stepMs: 4, rebootMs: 80 },
  clusters: [
    stagingShape(),
    productionShape({
      cnpg: [
        { name: 'db', namespace: 'apps', instances: 3, podAntiAffinityType: 'required' },
        { name: 'solo', namespace: 'apps', instances: 1 },
      ],
    }),
  ],
});

function client(f: SimFixture): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(f.sim.kubeconfig('production'));
  return kc;
}

function image(f: SimFixture): string {
  return `factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.longhornSchematic}:v1.11.6`;
}

describe.concurrent('CloudNativePG', () => {
  it('serves its Clusters and the budgets it creates: <name>-primary for every Cluster, <name> for the replicas from three instances', async ({
    f,
    expect,
  }) => {
    const kc = client(f);
    const clusters = (await kc
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject({ group: 'postgresql.cnpg.io', version: 'v1', plural: 'clusters' })) as {
      items: { metadata: { name: string }; spec: { instances: number }; status: { currentPrimary: string; readyInstances: number } }[];
    };
    const pdbs = await kc.makeApiClient(PolicyV1Api).listNamespacedPodDisruptionBudget({ namespace: 'apps' });

    expect(clusters.items.map((c) => [c.metadata.name, c.spec.instances, c.status.currentPrimary, c.status.readyInstances])).toEqual([
      ['db', 3, 'db-1', 3],
      ['solo', 1, 'solo-1', 1],
    ]);
    const byName = new Map(pdbs.items.map((p) => [p.metadata?.name, p]));
    expect(byName.get('db-primary')?.spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: { 'cnpg.io/cluster': 'db', 'cnpg.io/instanceRole': 'primary' } },
    });
    expect(byName.get('db-primary')?.status).toMatchObject({ disruptionsAllowed: 0, expectedPods: 1 });
    expect(byName.get('db')?.spec).toMatchObject({
      minAvailable: 1,
      selector: { matchLabels: { 'cnpg.io/cluster': 'db', 'cnpg.io/instanceRole': 'replica' } },
    });
    expect(byName.get('solo-primary')?.status).toMatchObject({ disruptionsAllowed: 0, expectedPods: 1 });
    expect(byName.has('solo')).toBe(false);
  });

  it("switches the primary over to a ready replica elsewhere when the primary's node is drained, so the drain evicts the old primary", async ({
    f,
    expect,
  }) => {
    const cluster = f.sim.cluster('production');
    cluster.kube.cnpg = cluster.kube.cnpg?.filter((c) => c.name === 'db');
    cluster.kube.pods = cluster.kube.pods.filter((p) => !p.name.startsWith('solo-'));
    cluster.kube.pdbs = cluster.kube.pdbs.filter((p) => !p.name.startsWith('solo'));

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.11', '-e', '10.0.30.12', '-i', image(f)]);

    const db = cluster.kube.cnpg?.[0];
    expect(db?.switchovers.map((s) => [s.from, s.to, s.node])).toEqual([['db-1', 'db-2', 'talos-prd-cp-1']]);
    expect(cluster.kube.pods.find((p) => p.name === 'db-2')?.labels['cnpg.io/instanceRole']).toBe('primary');
    expect(cluster.kube.pods.find((p) => p.name === 'db-1')?.labels['cnpg.io/instanceRole']).toBe('replica');
    expect(f.sim.events.filter((e) => e.kind === 'drain-blocked').map((e) => e.detail)).not.toContain('apps/db-primary');
  });

  it('keeps a single instance where it is: its primary budget refuses the eviction', async ({ f, expect }) => {
    await f.talosctl('production', ['upgrade', '-n', '10.0.30.11', '-e', '10.0.30.12', '-i', image(f)]);

    expect(f.sim.events.filter((e) => e.kind === 'drain-blocked').map((e) => e.detail)).toContain('apps/solo-primary');
    expect(f.sim.cluster('production').kube.cnpg?.find((c) => c.name === 'solo')?.switchovers).toEqual([]);
  });
});
