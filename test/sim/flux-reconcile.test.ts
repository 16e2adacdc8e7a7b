import { CustomObjectsApi, KubeConfig, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { describe } from 'vitest';
import { renderFlux } from './flux-objects.ts';
import { simTest, type SimFixture } from './sim-fixture.ts';

const it = simTest({ timing: { stepMs: 4, rebootMs: 80, fluxReconcileMs: 300 } });

interface Flux {
  kind: string;
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  status: { lastHandledReconcileAt?: string; conditions: { type: string; status: string; reason: string; lastTransitionTime: string }[] };
}

const KINDS = {
  Kustomization: { group: 'kustomize.toolkit.fluxcd.io', version: 'v1', plural: 'kustomizations' },
  HelmRelease: { group: 'helm.toolkit.fluxcd.io', version: 'v2', plural: 'helmreleases' },
} as const;

function api(f: SimFixture): CustomObjectsApi {
  const kc = new KubeConfig();
  kc.loadFromString(f.sim.kubeconfig('production'));
  return kc.makeApiClient(CustomObjectsApi);
}

async function list(f: SimFixture, kind: keyof typeof KINDS): Promise<Flux[]> {
  return ((await api(f).listClusterCustomObject(KINDS[kind])) as { items: Flux[] }).items;
}

async function request(f: SimFixture, kind: keyof typeof KINDS, obj: Flux, body: unknown): Promise<void> {
  await api(f).patchNamespacedCustomObject(
    { ...KINDS[kind], namespace: obj.metadata.namespace, name: obj.metadata.name, body },
    setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
  );
}

const ready = (o: Flux) => o.status.conditions.find((c) => c.type === 'Ready');
const annotate = (token: string) => ({ metadata: { annotations: { 'reconcile.fluxcd.io/requestedAt': token } } });

describe.concurrent('Flux reconcile requests (reconcile.fluxcd.io/requestedAt)', () => {
  it('are handled after a reconcile: a Kustomization goes Unknown and restamps Ready, an in-sync HelmRelease keeps its Ready', async ({
    f,
    expect,
  }) => {
    const [ks] = await list(f, 'Kustomization');
    const [hr] = await list(f, 'HelmRelease');
    const token = '2026-12-05T00:30:00.123456789Z';

    await request(f, 'Kustomization', ks!, annotate(token));
    await request(f, 'HelmRelease', hr!, annotate(token));
    // Read as the API renders them at chosen moments of the reconcile, so no read races the clock.
    const cluster = f.sim.cluster('production');
    const at = (kind: string, t: number): Flux => {
      const obj = cluster.kube.flux.find((o) => o.kind === kind && o.name === (kind === 'HelmRelease' ? hr : ks)!.metadata.name)!;
      return renderFlux(cluster, obj, t) as unknown as Flux;
    };
    const requestedAt = cluster.kube.flux.find((o) => o.name === ks!.metadata.name)!.reconcileRequest!.at;
    const end = requestedAt + f.sim.timing.fluxReconcileMs;
    const during = { ks: at('Kustomization', end - 1), hr: at('HelmRelease', end - 1) };
    const after = { ks: at('Kustomization', end + 1000), hr: at('HelmRelease', end + 1000) };

    expect(during.ks.metadata.annotations).toEqual({ 'reconcile.fluxcd.io/requestedAt': token });
    expect([during.ks.status.lastHandledReconcileAt, during.hr.status.lastHandledReconcileAt]).not.toContain(token);
    expect(ready(during.ks)?.status).toBe('Unknown');
    expect(ready(during.hr)).toEqual(ready(hr!));
    expect([after.ks.status.lastHandledReconcileAt, after.hr.status.lastHandledReconcileAt]).toEqual([token, token]);
    expect(ready(after.ks)?.status).toBe('True');
    expect(Date.parse(ready(after.ks)!.lastTransitionTime)).toBeGreaterThan(Date.parse(ready(ks!)!.lastTransitionTime));
    expect(ready(after.hr)).toEqual(ready(hr!));
    expect(f.sim.events.filter((e) => e.kind === 'flux-reconcile-requested').map((e) => e.detail)).toEqual([
      `Kustomization ${ks!.metadata.namespace}/${ks!.metadata.name} ${token}`,
      `HelmRelease ${hr!.metadata.namespace}/${hr!.metadata.name} ${token}`,
    ]);
  });

  it('wait for the controllers to run again after an etcd recovery before they are handled', async ({ f, expect }) => {
    const cluster = f.sim.cluster('production');
    // The controllers come back later (as after a restore, once the API serves and they found it).
    cluster.kube.controllersRestartedAt = Date.now() + 60_000;
    const [hr] = await list(f, 'HelmRelease');
    const earlier = hr!.status.lastHandledReconcileAt;

    await request(f, 'HelmRelease', hr!, annotate('token-1'));
    await f.sim.waitFor(
      () => Date.now() > f.sim.events.find((e) => e.kind === 'flux-reconcile-requested')!.at + f.sim.timing.fluxReconcileMs + 100,
      5000,
      'a reconcile later',
    );
    const waiting = (await list(f, 'HelmRelease'))[0]!;
    cluster.kube.controllersRestartedAt = Date.now();
    await f.sim.waitFor(
      () => Date.now() > (cluster.kube.controllersRestartedAt ?? 0) + f.sim.timing.fluxReconcileMs + 100,
      5000,
      'the controllers ran',
    );
    const handled = (await list(f, 'HelmRelease'))[0]!;

    expect(waiting.status.lastHandledReconcileAt).toBe(earlier);
    expect(handled.status.lastHandledReconcileAt).toBe('token-1');
  });

  it('refuses a patch of anything but the annotation, and changes nothing', async ({ f, expect }) => {
    const [ks] = await list(f, 'Kustomization');

    const refused = await request(f, 'Kustomization', ks!, { spec: { suspend: true } }).then(
      () => undefined,
      (error: { code?: number }) => error.code,
    );
    const after = (await list(f, 'Kustomization'))[0]!;

    expect(refused).toBe(422);
    expect(after.metadata.annotations).toBeUndefined();
    expect(f.sim.events.filter((e) => e.kind === 'flux-reconcile-requested')).toEqual([]);
  });
});
