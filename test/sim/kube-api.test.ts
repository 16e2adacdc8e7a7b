import { AppsV1Api, CoreV1Api, CustomObjectsApi, KubeConfig, PolicyV1Api } from '@kubernetes/client-node';
import { describe } from 'vitest';
import { instanceManagerName } from './kube-seed.ts';
import { simTest, type SimFixture } from './sim-fixture.ts';

const it = simTest({ timing: { stepMs: 4, rebootMs: 80, longhornRebuildMs: 150 } });

function client(f: SimFixture, cluster: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromString(f.sim.kubeconfig(cluster));
  return kc;
}

interface FluxObject {
  metadata: { name: string; generation: number };
  spec: { suspend?: boolean; path?: string };
  status: {
    observedGeneration: number;
    conditions: { type: string; status: string; reason: string; message: string; lastTransitionTime: string }[];
    lastAttemptedRevision?: string;
    lastAppliedRevision?: string;
    failures?: number;
    history?: { firstReconciled: string; lastReconciledStatus: string; metadata: Record<string, string> }[];
  };
}

async function flux(f: SimFixture, cluster: string, plural: 'kustomizations' | 'helmreleases'): Promise<FluxObject[]> {
  const group = plural === 'kustomizations' ? 'kustomize.toolkit.fluxcd.io' : 'helm.toolkit.fluxcd.io';
  const version = plural === 'kustomizations' ? 'v1' : 'v2';
  const list = (await client(f, cluster).makeApiClient(CustomObjectsApi).listClusterCustomObject({ group, version, plural })) as {
    items: FluxObject[];
  };
  return list.items;
}

describe.concurrent('Kubernetes API', () => {
  it('lists nodes with roles, host labels and the Talos OS image', async ({ f, expect }) => {
    const nodes = await client(f, 'production').makeApiClient(CoreV1Api).listNode();

    expect(nodes.items.map((n) => n.metadata?.name)).toEqual(['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3']);
    const first = nodes.items[0];
    expect(first?.metadata?.labels).toMatchObject({
      'kubernetes.io/hostname': 'talos-prd-cp-1',
      'node-role.kubernetes.io/control-plane': '',
      'example.org/proxmox-host': 'pve1',
    });
    expect(first?.status?.nodeInfo).toMatchObject({ osImage: 'Talos (v1.11.6)', kubeletVersion: 'v1.34.1' });
    expect(first?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    expect(first?.spec?.taints).toBeUndefined();
  });

  it('answers 401 without the bearer token and 404 with a Status for unknown paths', async ({ f, expect }) => {
    const url = f.sim.kubeApiUrl('production');
    const anonymous = await fetch(`${url}/api/v1/nodes`);
    const unknown = await fetch(`${url}/apis/example.org/v1/widgets`, {
      headers: { authorization: `Bearer ${f.sim.cluster('production').credentials.token}` },
    });

    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toMatchObject({ kind: 'Status', reason: 'Unauthorized', code: 401 });
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toMatchObject({ kind: 'Status', reason: 'NotFound', code: 404 });
  });

  it('shows cordoned, NotReady and unreachable nodes the way the node controller does', async ({ f, expect }) => {
    f.sim.faults.set('production', { nodeCordoned: ['10.0.30.11'], nodeNotReady: ['talos-prd-cp-2'], nodeUnreachable: ['10.0.30.13'] });

    const nodes = (await client(f, 'production').makeApiClient(CoreV1Api).listNode()).items;

    const ready = nodes.map((n) => n.status?.conditions?.find((c) => c.type === 'Ready')?.status);
    expect(ready).toEqual(['True', 'False', 'Unknown']);
    expect(nodes[0]?.spec?.unschedulable).toBe(true);
    expect(nodes.map((n) => n.spec?.taints?.map((t) => `${t.key}:${t.effect}`))).toEqual([
      ['node.kubernetes.io/unschedulable:NoSchedule'],
      ['node.kubernetes.io/not-ready:NoSchedule', 'node.kubernetes.io/not-ready:NoExecute'],
      ['node.kubernetes.io/unreachable:NoSchedule', 'node.kubernetes.io/unreachable:NoExecute'],
    ]);
  });

  it('lists pods, optionally by node, and namespaces with the Longhorn Pod Security label', async ({ f, expect }) => {
    const core = client(f, 'production').makeApiClient(CoreV1Api);

    const all = await core.listPodForAllNamespaces();
    const onCp2 = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=talos-prd-cp-2' });
    const namespace = await core.readNamespace({ name: 'longhorn-system' });

    expect(new Set(all.items.map((p) => p.metadata?.namespace))).toEqual(
      new Set(['kube-system', 'flux-system', 'apps', 'longhorn-system']),
    );
    expect(onCp2.items.length).toBeGreaterThan(0);
    expect(onCp2.items.every((p) => p.spec?.nodeName === 'talos-prd-cp-2')).toBe(true);
    expect(namespace.metadata?.labels?.['pod-security.kubernetes.io/enforce']).toBe('privileged');
  });

  it('reports PodDisruptionBudgets, including one that allows no disruption', async ({ f, expect }) => {
    const policy = client(f, 'production').makeApiClient(PolicyV1Api);

    const healthy = await policy.listPodDisruptionBudgetForAllNamespaces();
    f.sim.faults.set('production', { pdbBlocked: ['postgres'] });
    const blocked = await policy.listPodDisruptionBudgetForAllNamespaces();

    expect(healthy.items.map((p) => [p.metadata?.name, p.status?.disruptionsAllowed])).toEqual([
      ['podinfo', 1],
      ['postgres', 1],
      ...['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'].map((n) => [instanceManagerName('production', n), 0]),
    ]);
    const im = healthy.items.find((p) => p.metadata?.namespace === 'longhorn-system');
    expect(im?.spec?.selector?.matchLabels).toMatchObject({
      'longhorn.io/component': 'instance-manager',
      'longhorn.io/node': 'talos-prd-cp-1',
    });
    expect(im?.status).toMatchObject({ disruptionsAllowed: 0, currentHealthy: 1, desiredHealthy: 1, expectedPods: 1 });
    const postgres = blocked.items.find((p) => p.metadata?.name === 'postgres');
    expect(postgres?.status).toMatchObject({ disruptionsAllowed: 0, currentHealthy: 2, desiredHealthy: 2, expectedPods: 3 });
    expect(postgres?.status?.conditions?.[0]).toMatchObject({ type: 'DisruptionAllowed', status: 'False', reason: 'InsufficientPods' });
  });

  it('reports Flux objects ready, stalled for the current generation, and suspended with a stale Ready', async ({ f, expect }) => {
    const healthy = await flux(f, 'production', 'kustomizations');
    f.sim.faults.set('production', { fluxStalled: ['apps'], fluxSuspended: ['flux-system', 'podinfo'] });
    const faulty = await flux(f, 'production', 'kustomizations');
    const releases = await flux(f, 'production', 'helmreleases');

    expect(healthy.map((k) => [k.metadata.name, k.spec.path, k.status.conditions[0]?.status])).toEqual([
      ['flux-system', './clusters/production', 'True'],
      ['apps', './clusters/production/apps', 'True'],
    ]);
    const apps = faulty.find((k) => k.metadata.name === 'apps');
    // fluxcd/pkg conditions/setter.go sorts Stalled, Reconciling, Ready first.
    expect(apps?.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Stalled', 'True', 'AccessDenied'],
      ['Ready', 'False', 'AccessDenied'],
    ]);
    expect(apps?.status.observedGeneration).toBe(apps?.metadata.generation);
    const suspended = faulty.find((k) => k.metadata.name === 'flux-system');
    expect(suspended?.spec.suspend).toBe(true);
    expect(suspended?.status.conditions[0]).toMatchObject({ type: 'Ready', status: 'True' });
    // kustomize-controller's deferred finalizeStatus still records the generation while the stale Ready is True.
    expect(suspended?.status.observedGeneration).toBe(suspended?.metadata.generation);
    expect(releases.find((r) => r.metadata.name === 'podinfo')?.spec.suspend).toBe(true);
    expect(releases.map((r) => r.metadata.name)).toEqual(['cilium', 'podinfo', 'longhorn']);
  });

  it('degrades Longhorn volumes while a replica node reboots and heals after the rebuild', async ({ f, expect }) => {
    const robustness = async (): Promise<string[]> => {
      const list = (await client(f, 'production')
        .makeApiClient(CustomObjectsApi)
        .listClusterCustomObject({ group: 'longhorn.io', version: 'v1beta2', plural: 'volumes' })) as {
        items: { status: { robustness: string } }[];
      };
      return list.items.map((v) => v.status.robustness);
    };
    const before = await robustness();
    const image = `factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.defaultSchematic}:v1.11.6`;
    const upgrade = f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);
    await f.sim.waitFor(() => f.sim.node('production', '10.0.30.13').stage === 'rebooting', 5000, 'the reboot');
    const during = await robustness();
    await upgrade;
    await f.sim.waitFor(
      () => Date.now() - f.sim.node('production', '10.0.30.13').lastUpAt > f.sim.timing.longhornRebuildMs,
      5000,
      'the rebuild',
    );
    const after = await robustness();

    // The fourth volume is detached: Longhorn cannot know its health, and says `unknown`.
    expect(before).toEqual(['healthy', 'healthy', 'healthy', 'unknown']);
    expect(during).toEqual(['degraded', 'degraded', 'degraded', 'unknown']);
    expect(after).toEqual(['healthy', 'healthy', 'healthy', 'unknown']);
    // Longhorn lifted the node's instance-manager budget for the drain and put it back after the boot.
    const budget = `longhorn-system/${instanceManagerName('production', 'talos-prd-cp-3')}`;
    expect(
      f.sim.events
        .filter((e) => e.kind.startsWith('longhorn-pdb') || e.kind === 'drain-blocked')
        .map((e) => [e.kind, e.node, e.detail?.split(' ')[0]]),
    ).toEqual([
      ['longhorn-pdb-deleted', '10.0.30.13', budget],
      ['longhorn-pdb-created', '10.0.30.13', budget],
    ]);
  });

  it('keeps the instance-manager budget through the drain when the node holds the last healthy replica', async ({ f, expect }) => {
    f.sim.faults.set('production', { longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] } });
    const image = `factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.defaultSchematic}:v1.11.6`;

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);

    const kinds = f.sim.events
      .filter((e) => e.kind.startsWith('longhorn-pdb') || e.kind === 'drain-blocked')
      .map((e) => [e.kind, e.detail]);
    expect(kinds).toEqual([['drain-blocked', `longhorn-system/${instanceManagerName('production', 'talos-prd-cp-3')}`]]);
  });

  it('keeps the budget even under node-drain-policy always-allow while a workload budget at 0 keeps its pod, and so its volume, on the node', async ({
    f,
    expect,
  }) => {
    f.sim.faults.set('production', {
      longhornDrainPolicy: 'always-allow',
      longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] },
      pdbBlocked: ['postgres'],
    });
    const image = `factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.defaultSchematic}:v1.11.6`;

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);

    const events = f.sim.events
      .filter((e) => e.kind.startsWith('longhorn-pdb') || e.kind === 'drain-blocked')
      .map((e) => [e.kind, e.detail?.split(' ')[0]]);
    const budget = `longhorn-system/${instanceManagerName('production', 'talos-prd-cp-3')}`;
    // canDeleteInstanceManagerPDB waits for every volume attached on the node to detach before it looks at the policy.
    expect(events).toEqual([
      ['drain-blocked', 'apps/postgres'],
      ['drain-blocked', budget],
    ]);
    expect(f.sim.cluster('production').kube.pods.find((p) => p.name === 'postgres-3')?.nodeName).toBe('talos-prd-cp-3');
  });

  it('lifts the budget under always-allow once the workloads are gone, whatever the replicas', async ({ f, expect }) => {
    f.sim.faults.set('production', {
      longhornDrainPolicy: 'always-allow',
      longhornReplicaFailed: { 'postgres-1': ['talos-prd-cp-1', 'talos-prd-cp-2'] },
    });
    const image = `factory.talos.dev/nocloud-installer/${f.sim.cluster('production').terraform.longhornSchematic}:v1.11.6`;

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);

    const events = f.sim.events.filter((e) => e.kind.startsWith('longhorn-pdb') || e.kind === 'drain-blocked').map((e) => e.kind);
    expect(events).toEqual(['longhorn-pdb-deleted', 'longhorn-pdb-created']);
  });

  it('answers an eviction as kube-apiserver does: 429 naming the budget while it allows no disruption, 201 and the pod recreated elsewhere once it does', async ({
    f,
    expect,
  }) => {
    const core = client(f, 'production').makeApiClient(CoreV1Api);
    const cluster = f.sim.cluster('production');
    const pod = cluster.kube.pods.find((p) => p.labels['app'] === 'podinfo')!;
    const from = pod.nodeName;
    const eviction = (name: string) => ({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name, namespace: 'apps' } });
    f.sim.faults.set('production', { pdbBlocked: ['podinfo'] });

    const refused = await core
      .createNamespacedPodEviction({ name: pod.name, namespace: 'apps', body: eviction(pod.name) })
      .catch((e: unknown) => e);

    expect((refused as { code?: number }).code).toBe(429);
    expect(JSON.parse((refused as { body: string }).body)).toMatchObject({
      reason: 'TooManyRequests',
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: {
        causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget podinfo needs 1 healthy pods and has 1 currently' }],
      },
    });
    expect(pod.nodeName).toBe(from);

    f.sim.faults.set('production', { pdbBlocked: [] });
    await core.createNamespacedPodEviction({ name: pod.name, namespace: 'apps', body: eviction(pod.name) });
    expect(pod.nodeName).not.toBe(from);
    expect(f.sim.events.filter((e) => e.kind === 'pod-evicted' || e.kind === 'eviction-refused').map((e) => e.kind)).toEqual([
      'eviction-refused',
      'pod-evicted',
    ]);
  });

  it('cordons and uncordons a node through a merge patch of spec.unschedulable, and refuses a patch of anything else', async ({
    f,
    expect,
  }) => {
    const core = client(f, 'production').makeApiClient(CoreV1Api);
    const { PatchStrategy, setHeaderOptions } = await import('@kubernetes/client-node');
    const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

    const cordoned = await core.patchNode({ name: 'talos-prd-cp-2', body: { spec: { unschedulable: true } } }, merge);
    expect([cordoned.spec?.unschedulable, f.sim.node('production', '10.0.30.12').cordoned]).toEqual([true, true]);
    await core.patchNode({ name: 'talos-prd-cp-2', body: { spec: { unschedulable: null } } }, merge);
    expect(f.sim.node('production', '10.0.30.12').cordoned).toBe(false);
    const refused = await core
      .patchNode({ name: 'talos-prd-cp-2', body: { metadata: { labels: { a: 'b' } } } }, merge)
      .catch((e: unknown) => e);
    expect((refused as { code?: number }).code).toBe(422);
  });

  it('under block-for-eviction rebuilds the replicas of a cordoned node elsewhere, then lifts its budget', async ({ f, expect }) => {
    f.sim.faults.set('production', { longhornDrainPolicy: 'block-for-eviction' });
    const cluster = f.sim.cluster('production');
    for (const volume of cluster.kube.volumes) volume.replicas = ['talos-prd-cp-2', 'talos-prd-cp-3'];
    const image = `factory.talos.dev/nocloud-installer/${cluster.terraform.longhornSchematic}:v1.11.6`;

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);

    const events = f.sim.events.filter((e) => e.kind.startsWith('longhorn-') || e.kind === 'drain-blocked').map((e) => e.kind);
    expect(events.filter((k) => k === 'longhorn-replica-evicted')).toHaveLength(cluster.kube.volumes.length);
    expect(events.slice(-2)).toEqual(['longhorn-pdb-deleted', 'longhorn-pdb-created']);
    expect(cluster.kube.volumes.every((v) => !v.replicas.includes('talos-prd-cp-3') && v.replicas.includes('talos-prd-cp-1'))).toBe(true);
  });

  it('keeps the budget of a node where a DaemonSet pod keeps a volume attached, though its replicas are healthy elsewhere', async ({
    f,
    expect,
  }) => {
    const cluster = f.sim.cluster('production');
    cluster.kube.pods.push({
      name: 'log-shipper-q7x2m',
      namespace: 'apps',
      nodeName: 'talos-prd-cp-3',
      labels: { app: 'log-shipper' },
      owner: { kind: 'DaemonSet', name: 'log-shipper' },
      image: 'fluent/fluent-bit:4.0',
      createdAt: Date.now(),
    });
    cluster.kube.volumes.push({
      name: 'pvc-logs-3',
      pvcName: 'logs-talos-prd-cp-3',
      namespace: 'apps',
      replicas: ['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'],
      sizeBytes: 1024 ** 3,
      attachedTo: 'talos-prd-cp-3',
      podName: 'log-shipper-q7x2m',
    });
    const image = `factory.talos.dev/nocloud-installer/${cluster.terraform.longhornSchematic}:v1.11.6`;

    await f.talosctl('production', ['upgrade', '-n', '10.0.30.13', '-e', '10.0.30.11', '-i', image]);

    const events = f.sim.events
      .filter((e) => e.kind.startsWith('longhorn-pdb') || e.kind === 'drain-blocked')
      .map((e) => [e.kind, e.detail]);
    expect(events).toEqual([['drain-blocked', `longhorn-system/${instanceManagerName('production', 'talos-prd-cp-3')}`]]);
  });

  it('lists replicas per node and the node-drain-policy setting; a cluster without Longhorn answers 404 for them', async ({
    f,
    expect,
  }) => {
    const custom = client(f, 'production').makeApiClient(CustomObjectsApi);
    f.sim.faults.set('production', { longhornReplicaFailed: { 'postgres-2': ['10.0.30.12'] } });

    const replicas = (await custom.listClusterCustomObject({ group: 'longhorn.io', version: 'v1beta2', plural: 'replicas' })) as {
      items: {
        spec: { nodeID: string; volumeName: string; healthyAt: string; failedAt: string; desireState: string };
        status: { currentState: string };
      }[];
    };
    const settings = (await custom.listClusterCustomObject({ group: 'longhorn.io', version: 'v1beta2', plural: 'settings' })) as {
      items: { metadata: { name: string }; value: string }[];
    };
    const staging = await client(f, 'staging')
      .makeApiClient(CustomObjectsApi)
      .listClusterCustomObject({ group: 'longhorn.io', version: 'v1beta2', plural: 'volumes' })
      .catch((e: unknown) => e);

    expect(replicas.items).toHaveLength(12);
    expect(new Set(replicas.items.map((r) => r.spec.nodeID))).toEqual(new Set(['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3']));
    const failed = replicas.items.filter((r) => r.spec.failedAt !== '');
    expect(failed.map((r) => [r.spec.nodeID, r.status.currentState])).toEqual([['talos-prd-cp-2', 'error']]);
    expect(replicas.items.filter((r) => r.spec.desireState === 'stopped').map((r) => r.status.currentState)).toEqual([
      'stopped',
      'stopped',
      'stopped',
    ]);
    expect(settings.items.find((s) => s.metadata.name === 'node-drain-policy')?.value).toBe('block-if-contains-last-replica');
    expect((staging as { code?: number }).code).toBe(404);
  });

  it('renders the Cilium agent DaemonSet and operator Deployment from their pods, and their faults', async ({ f, expect }) => {
    const apps = client(f, 'production').makeApiClient(AppsV1Api);

    const healthyAgent = await apps.readNamespacedDaemonSet({ namespace: 'kube-system', name: 'cilium' });
    const healthyOperator = await apps.readNamespacedDeployment({ namespace: 'kube-system', name: 'cilium-operator' });
    f.sim.faults.set('production', { ciliumAgentNotReady: ['10.0.30.12'], podsNotReady: ['cilium-operator'] });
    const agent = await apps.readNamespacedDaemonSet({ namespace: 'kube-system', name: 'cilium' });
    const operator = await apps.readNamespacedDeployment({ namespace: 'kube-system', name: 'cilium-operator' });

    expect(healthyAgent.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 3, numberAvailable: 3, updatedNumberScheduled: 3 });
    expect(healthyOperator.status?.conditions?.find((c) => c.type === 'Available')?.status).toBe('True');
    expect(agent.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 2, numberUnavailable: 1 });
    expect(operator.status?.conditions?.find((c) => c.type === 'Available')).toMatchObject({
      status: 'False',
      reason: 'MinimumReplicasUnavailable',
    });
  });

  it("runs Cilium 1.18's envoy DaemonSet on every node, labelled k8s-app=cilium-envoy", async ({ f, expect }) => {
    const apps = client(f, 'production').makeApiClient(AppsV1Api);

    const healthy = await apps.readNamespacedDaemonSet({ namespace: 'kube-system', name: 'cilium-envoy' });
    f.sim.faults.set('production', { ciliumEnvoyNotReady: ['10.0.30.12'] });
    const faulty = await apps.readNamespacedDaemonSet({ namespace: 'kube-system', name: 'cilium-envoy' });
    const listed = await apps.listNamespacedDaemonSet({ namespace: 'kube-system', labelSelector: 'k8s-app=cilium-envoy' });

    expect(healthy.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 3 });
    expect(faulty.status).toMatchObject({ desiredNumberScheduled: 3, numberReady: 2, numberUnavailable: 1 });
    expect(listed.items.map((d) => d.metadata?.name)).toEqual(['cilium-envoy']);
  });

  it('shows a first apply in progress, and failures with a fresh Ready transition between retries and at the start of one', async ({
    f,
    expect,
  }) => {
    f.sim.faults.set('production', { fluxReconciling: ['apps'], fluxNotReady: ['flux-system'] });
    const progressing = await flux(f, 'production', 'kustomizations');
    f.sim.faults.clear('production');
    f.sim.faults.set('production', { fluxRetrying: ['flux-system'] });
    const retrying = await flux(f, 'production', 'kustomizations');
    const age = (c: { lastTransitionTime: string }): number => Date.now() - Date.parse(c.lastTransitionTime);

    const apps = progressing.find((k) => k.metadata.name === 'apps')!;
    expect(apps.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Reconciling', 'True', 'Progressing'],
      ['Ready', 'Unknown', 'Progressing'],
    ]);
    expect(apps.status.lastAttemptedRevision).not.toBe(apps.status.lastAppliedRevision);
    expect(apps.status.history?.map((h) => h.lastReconciledStatus)).toEqual(['ReconciliationSucceeded']);

    // Failing for an hour: the failure's transition is no older than the last attempt.
    const failed = progressing.find((k) => k.metadata.name === 'flux-system')!;
    expect(failed.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Reconciling', 'True', 'ProgressingWithRetry'],
      ['Ready', 'False', 'HealthCheckFailed'],
      ['Healthy', 'False', 'HealthCheckFailed'],
    ]);
    expect(age(failed.status.conditions.find((c) => c.type === 'Ready')!)).toBeLessThan(120_000);
    expect(failed.status.observedGeneration).toBe(failed.metadata.generation);
    expect(failed.status.history?.[0]).toMatchObject({
      lastReconciledStatus: 'HealthCheckFailed',
      metadata: { revision: failed.status.lastAttemptedRevision },
    });
    expect(Date.now() - Date.parse(failed.status.history![0]!.firstReconciled)).toBeGreaterThanOrEqual(3_600_000);

    const retry = retrying.find((k) => k.metadata.name === 'flux-system')!;
    expect(retry.status.conditions.map((c) => [c.type, c.status, c.reason, c.message])).toEqual([
      [
        'Reconciling',
        'True',
        'Progressing',
        `Running health checks for revision ${retry.status.lastAttemptedRevision} with a timeout of 5m0s`,
      ],
      ['Ready', 'Unknown', 'Progressing', 'Reconciliation in progress'],
      [
        'Healthy',
        'Unknown',
        'Progressing',
        `Running health checks for revision ${retry.status.lastAttemptedRevision} with a timeout of 5m0s`,
      ],
    ]);
    expect(age(retry.status.conditions.find((c) => c.type === 'Ready')!)).toBeLessThan(60_000);
  });

  it('stalls a HelmRelease only on RetriesExceeded, and counts the failures of one that retries', async ({ f, expect }) => {
    f.sim.faults.set('production', { fluxStalled: ['cilium'], fluxRetrying: ['podinfo'] });

    const releases = await flux(f, 'production', 'helmreleases');

    const stalled = releases.find((r) => r.metadata.name === 'cilium')!;
    expect(stalled.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Stalled', 'True', 'RetriesExceeded'],
      ['Ready', 'False', 'UpgradeFailed'],
      ['Released', 'False', 'UpgradeFailed'],
    ]);
    const retrying = releases.find((r) => r.metadata.name === 'podinfo')!;
    expect(retrying.status.conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Reconciling', 'True', 'Progressing'],
      ['Ready', 'Unknown', 'Progressing'],
      ['Released', 'False', 'UpgradeFailed'],
    ]);
    expect(retrying.status.failures).toBeGreaterThan(1);
    expect(retrying.status.conditions.some((c) => c.type === 'Stalled')).toBe(false);
  });

  it('deletes a Node and garbage-collects its pods; a reset machine stays gone', async ({ f, expect }) => {
    await f.talosctl('staging', ['reset', '-n', '10.0.20.205']);
    const core = client(f, 'staging').makeApiClient(CoreV1Api);

    await core.deleteNode({ name: 'talos-stg-w-1' });

    const nodes = await core.listNode();
    const pods = await core.listPodForAllNamespaces({ fieldSelector: 'spec.nodeName=talos-stg-w-1' });
    expect(nodes.items.map((n) => n.metadata?.name)).toEqual(['talos-stg-cp-1']);
    expect(pods.items).toEqual([]);
    expect(f.sim.events.some((e) => e.kind === 'node-deleted' && e.node === '10.0.20.205')).toBe(true);
  });

  it('answers 500 or never for the probes a fault names', async ({ f, expect }) => {
    f.sim.faults.set('production', { kubeFail: ['/apis/policy'], kubeHang: ['/apis/kustomize.toolkit.fluxcd.io'] });
    const url = f.sim.kubeApiUrl('production');
    const headers = { authorization: `Bearer ${f.sim.cluster('production').credentials.token}` };

    const failing = await fetch(`${url}/apis/policy/v1/poddisruptionbudgets`, { headers });
    const hanging = await fetch(`${url}/apis/kustomize.toolkit.fluxcd.io/v1/kustomizations`, {
      headers,
      signal: AbortSignal.timeout(200),
    }).catch((e: unknown) => e);

    expect(failing.status).toBe(500);
    expect(hanging).toBeInstanceOf(Error);
  });
});
