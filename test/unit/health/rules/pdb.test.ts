import type { V1Node, V1NodeSystemInfo, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { LonghornReplica, LonghornView } from '../../../../src/health/rules/longhorn.ts';
import { evaluateDisruptionBudgets, selects, type DrainView } from '../../../../src/health/rules/pdb.ts';

function pdb(
  namespace: string,
  name: string,
  status: V1PodDisruptionBudget['status'],
  options: { generation?: number; matchLabels?: Record<string, string> } = {},
): V1PodDisruptionBudget {
  return {
    metadata: { namespace, name, generation: options.generation ?? 1 },
    spec: { minAvailable: 1, selector: { matchLabels: options.matchLabels ?? { app: name } } },
    status,
  };
}

const HEALTHY = { currentHealthy: 3, desiredHealthy: 2, disruptionsAllowed: 1, expectedPods: 3, observedGeneration: 1 };
const AT_ZERO = { currentHealthy: 1, desiredHealthy: 1, disruptionsAllowed: 0, expectedPods: 1, observedGeneration: 1 };

const NODES = ['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3'];
const ADDRESS: Record<string, string> = { 'talos-prd-cp-1': '10.0.30.11', 'talos-prd-cp-2': '10.0.30.12', 'talos-prd-cp-3': '10.0.30.13' };

function node(name: string, options: { ready?: boolean; cordoned?: boolean } = {}): V1Node {
  return {
    metadata: { name },
    spec: { unschedulable: options.cordoned },
    status: {
      addresses: [{ type: 'InternalIP', address: ADDRESS[name]! }],
      conditions: [{ type: 'Ready', status: options.ready === false ? 'False' : 'True' }],
    },
  };
}

function pod(
  namespace: string,
  name: string,
  nodeName: string,
  labels: Record<string, string>,
  owner = 'ReplicaSet',
  annotations?: Record<string, string>,
): V1Pod {
  return {
    metadata: {
      namespace,
      name,
      labels,
      annotations,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: owner, name: `${name}-owner`, uid: 'u', controller: true }],
    },
    spec: { nodeName, containers: [] },
    status: { phase: 'Running' },
  };
}

/** The drain of `drain` (node names) in a three-node cluster running `pods`. */
function view(drain: string[], pods: V1Pod[] = [], extra: Partial<DrainView> = {}): DrainView {
  return { drain: drain.map((name) => ({ name, address: ADDRESS[name]! })), pods, nodes: NODES.map((n) => node(n)), ...extra };
}

const IM_LABELS = (n: string): Record<string, string> => ({
  'longhorn.io/component': 'instance-manager',
  'longhorn.io/instance-manager-type': 'aio',
  'longhorn.io/node': n,
});

/** Longhorn's budget for the instance manager on `n`: one pod, so 0 disruptions at rest. */
function imPdb(n: string): V1PodDisruptionBudget {
  return pdb('longhorn-system', `instance-manager-${n.slice(-1)}`, AT_ZERO, { matchLabels: IM_LABELS(n) });
}

function replica(
  volume: string,
  nodeID: string,
  options: { healthy?: boolean; failed?: boolean; stopped?: boolean } = {},
): LonghornReplica {
  return {
    metadata: { name: `${volume}-r-${nodeID.slice(-1)}` },
    spec: {
      nodeID,
      volumeName: volume,
      desireState: options.stopped ? 'stopped' : 'running',
      healthyAt: options.healthy === false ? '' : '2026-11-01T00:00:00Z',
      failedAt: options.failed ? '2026-11-30T11:59:00Z' : '',
    },
    status: { currentState: options.stopped ? 'stopped' : options.failed ? 'error' : 'running' },
  };
}

function longhorn(replicas: LonghornReplica[], drainPolicy = 'block-if-contains-last-replica'): LonghornView {
  return {
    volumes: [
      {
        metadata: { name: 'pvc-1' },
        status: { state: 'attached', robustness: 'healthy', kubernetesStatus: { namespace: 'apps', pvcName: 'postgres-1' } },
      },
    ],
    replicas,
    drainPolicy,
  };
}

const THREE_REPLICAS = NODES.map((n) => replica('pvc-1', n));
const IM_BUDGETS = NODES.map(imPdb);

describe('evaluateDisruptionBudgets', () => {
  it('passes when every budget allows a disruption', () => {
    expect(evaluateDisruptionBudgets([pdb('apps', 'web', HEALTHY)], view(NODES))).toEqual({
      id: 'disruption-budgets',
      title: 'PodDisruptionBudgets',
      status: 'passed',
      summary: '1 PodDisruptionBudget, none blocks the drain',
      evidence: [],
    });
  });

  it('fails on a workload budget at 0 whose pod runs on a node to drain, naming the budget and the node', () => {
    const pods = [pod('apps', 'web-0', 'talos-prd-cp-2', { app: 'web' })];

    const result = evaluateDisruptionBudgets([pdb('apps', 'web', AT_ZERO)], view(NODES, pods));

    expect(result.status).toBe('failed');
    expect(result.evidence).toEqual([
      'PDB apps/web: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1) and apps/web-0 runs on talos-prd-cp-2 (10.0.30.12): draining that node would block',
    ]);
    expect(result.summary).toBe(`a PodDisruptionBudget would block the drain: ${result.evidence[0]}`);
  });

  it('only warns about a budget at 0 whose pods run on nodes this operation does not drain', () => {
    const pods = [pod('apps', 'web-0', 'talos-prd-cp-2', { app: 'web' })];

    const result = evaluateDisruptionBudgets([pdb('apps', 'web', AT_ZERO)], view(['talos-prd-cp-1'], pods));

    expect([result.status, result.evidence]).toEqual([
      'warning',
      [
        'PDB apps/web: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1), but none of its pods runs on a node this operation drains',
      ],
    ]);
  });

  it('ignores pods a drain does not evict: DaemonSet and mirror pods', () => {
    const daemon = pod('kube-system', 'agent-x', 'talos-prd-cp-1', { app: 'agent' }, 'DaemonSet');
    const mirror = pod('kube-system', 'kube-apiserver-cp-1', 'talos-prd-cp-1', { app: 'agent' }, 'Node', {
      'kubernetes.io/config.mirror': 'abc',
    });

    const result = evaluateDisruptionBudgets([pdb('kube-system', 'agent', AT_ZERO)], view(NODES, [daemon, mirror]));

    expect(result.status).toBe('warning');
  });

  it('warns when more pods of a budget run on one node to drain than it lets go', () => {
    const pods = [
      pod('apps', 'web-0', 'talos-prd-cp-1', { app: 'web' }),
      pod('apps', 'web-1', 'talos-prd-cp-1', { app: 'web' }),
      pod('apps', 'web-2', 'talos-prd-cp-2', { app: 'web' }),
    ];

    const result = evaluateDisruptionBudgets([pdb('apps', 'web', HEALTHY)], view(NODES, pods));

    expect([result.status, result.evidence]).toEqual([
      'warning',
      [
        'PDB apps/web: allows 1 disruption but 2 of its pods run on talos-prd-cp-1 (10.0.30.11): that drain waits until replacements are ready on other nodes',
      ],
    ]);
  });

  it('ignores a budget that expects no pods', () => {
    const empty = pdb('apps', 'idle', {
      currentHealthy: 0,
      desiredHealthy: 1,
      disruptionsAllowed: 0,
      expectedPods: 0,
      observedGeneration: 1,
    });

    expect(evaluateDisruptionBudgets([empty], view(NODES)).status).toBe('passed');
  });

  it('warns about a stale status', () => {
    const stale = pdb('apps', 'web', HEALTHY, { generation: 2 });

    const result = evaluateDisruptionBudgets([stale], view(NODES));

    expect([result.status, result.evidence]).toEqual([
      'warning',
      ['PDB apps/web: status is stale (observedGeneration 1 < generation 2): evictions wait for the disruption controller'],
    ]);
  });

  it('warns about a budget whose sync failed', () => {
    const sync = pdb('apps', 'web', {
      ...HEALTHY,
      conditions: [
        {
          type: 'DisruptionAllowed',
          status: 'False',
          reason: 'SyncFailed',
          message: 'Pod apps/web-0 matches multiple PodDisruptionBudgets',
          lastTransitionTime: new Date(0),
        },
      ],
    });

    expect(evaluateDisruptionBudgets([sync], view(NODES)).summary).toBe(
      'PDB apps/web: SyncFailed: Pod apps/web-0 matches multiple PodDisruptionBudgets',
    );
  });

  it('passes with no budgets at all', () => {
    expect(evaluateDisruptionBudgets([], view(NODES)).summary).toBe('no PodDisruptionBudgets');
  });
});

describe("Longhorn's instance-manager budgets", () => {
  it('pass at 0 when every volume on the node has a healthy replica elsewhere', () => {
    const result = evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(THREE_REPLICAS) }));

    expect(result.status).toBe('passed');
    expect(result.summary).toBe(
      "3 PodDisruptionBudgets, none blocks the drain; 3 Longhorn instance-manager budgets judged by Longhorn's node-drain-policy block-if-contains-last-replica",
    );
    expect(result.evidence[0]).toBe(
      "PDB longhorn-system/instance-manager-1 (Longhorn's instance manager on talos-prd-cp-1 (10.0.30.11)): the volume with a replica on talos-prd-cp-1 has a healthy replica on another node, so Longhorn lifts it during the drain (node-drain-policy block-if-contains-last-replica)",
    );
  });

  it('fail where the node holds the last healthy replica, naming the volume and the node', () => {
    const replicas = [
      replica('pvc-1', 'talos-prd-cp-1'),
      replica('pvc-1', 'talos-prd-cp-2', { failed: true }),
      replica('pvc-1', 'talos-prd-cp-3', { failed: true }),
    ];

    const result = evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(replicas) }));

    expect(result.status).toBe('failed');
    expect(result.evidence[0]).toBe(
      "PDB longhorn-system/instance-manager-1 (Longhorn's instance manager on talos-prd-cp-1 (10.0.30.11)): talos-prd-cp-1 holds the last healthy replica of apps/postgres-1 (volume pvc-1); under node-drain-policy block-if-contains-last-replica Longhorn keeps this budget: draining that node would block",
    );
  });

  it('are judged only for the nodes to drain', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1'), replica('pvc-1', 'talos-prd-cp-2', { failed: true })];

    const result = evaluateDisruptionBudgets(IM_BUDGETS, view(['talos-prd-cp-2'], [], { longhorn: longhorn(replicas) }));

    expect(result.status).toBe('passed');
  });

  it('do not count a replica elsewhere on a node that is cordoned, NotReady or without its own budget', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1'), replica('pvc-1', 'talos-prd-cp-2')];
    const cordoned = view(['talos-prd-cp-1'], [], {
      longhorn: longhorn(replicas),
      nodes: [node('talos-prd-cp-1'), node('talos-prd-cp-2', { cordoned: true }), node('talos-prd-cp-3')],
    });
    const notReady = view(['talos-prd-cp-1'], [], {
      longhorn: longhorn(replicas),
      nodes: [node('talos-prd-cp-1'), node('talos-prd-cp-2', { ready: false }), node('talos-prd-cp-3')],
    });

    expect(evaluateDisruptionBudgets(IM_BUDGETS, cordoned).status).toBe('failed');
    expect(evaluateDisruptionBudgets(IM_BUDGETS, notReady).status).toBe('failed');
    expect(
      evaluateDisruptionBudgets([imPdb('talos-prd-cp-1')], view(['talos-prd-cp-1'], [], { longhorn: longhorn(replicas) })).status,
    ).toBe('failed');
  });

  it('let a stopped last replica go under allow-if-replica-is-stopped, not under the default', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1', { stopped: true })];

    expect(
      evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(replicas, 'allow-if-replica-is-stopped') })).status,
    ).toBe('passed');
    expect(evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(replicas) })).status).toBe('failed');
  });

  it('pass under always-allow whatever the replicas', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1')];

    expect(evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(replicas, 'always-allow') })).status).toBe('passed');
  });

  it('warn under block-for-eviction that the drain waits while Longhorn rebuilds the replicas elsewhere, without refusing', () => {
    const twoReplicas = [replica('pvc-1', 'talos-prd-cp-1'), replica('pvc-1', 'talos-prd-cp-2')];
    const result = evaluateDisruptionBudgets(
      IM_BUDGETS,
      view(['talos-prd-cp-1'], [], { longhorn: longhorn(twoReplicas, 'block-for-eviction') }),
    );

    expect(result.status).toBe('warning');
    expect(result.summary).toContain(
      'node-drain-policy block-for-eviction: the drain waits while Longhorn rebuilds the 1 replica on talos-prd-cp-1 on other nodes',
    );
  });

  it('warn under block-for-eviction-if-contains-last-replica where the node holds the last healthy replica: Longhorn moves it', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1'), replica('pvc-1', 'talos-prd-cp-2', { failed: true })];

    const result = evaluateDisruptionBudgets(
      IM_BUDGETS,
      view(['talos-prd-cp-1'], [], { longhorn: longhorn(replicas, 'block-for-eviction-if-contains-last-replica') }),
    );

    expect(result.status).toBe('warning');
    expect(result.summary).toContain('the drain waits while Longhorn rebuilds');
    // With a healthy replica elsewhere nothing is evicted, and nothing waits.
    expect(
      evaluateDisruptionBudgets(
        IM_BUDGETS,
        view(['talos-prd-cp-1'], [], { longhorn: longhorn(THREE_REPLICAS, 'block-for-eviction-if-contains-last-replica') }),
      ).status,
    ).toBe('passed');
  });

  it('fail under block-for-eviction where every other Longhorn node already holds a replica of the volume: the eviction never finishes', () => {
    const result = evaluateDisruptionBudgets(
      IM_BUDGETS,
      view(['talos-prd-cp-1'], [], { longhorn: longhorn(THREE_REPLICAS, 'block-for-eviction') }),
    );

    expect(result.status).toBe('failed');
    expect(result.evidence[0]).toContain(
      'Longhorn must move the replica of apps/postgres-1 (volume pvc-1) off talos-prd-cp-1 first, but every other schedulable Longhorn node already holds one',
    );
    // replica-soft-anti-affinity lets Longhorn put a second replica on a node.
    const soft = { ...longhorn(THREE_REPLICAS, 'block-for-eviction'), softAntiAffinity: true };
    expect(evaluateDisruptionBudgets(IM_BUDGETS, view(['talos-prd-cp-1'], [], { longhorn: soft })).status).toBe('warning');
  });

  it('fail, under every policy, where a volume stays attached on the node: used by a DaemonSet pod, or attached with no pod', () => {
    const attached = (podName?: string): LonghornView => ({
      ...longhorn(THREE_REPLICAS, 'always-allow'),
      volumes: [
        {
          metadata: { name: 'pvc-1' },
          status: {
            state: 'attached',
            robustness: 'healthy',
            currentNodeID: 'talos-prd-cp-1',
            kubernetesStatus: { namespace: 'apps', pvcName: 'logs', workloadsStatus: podName ? [{ podName }] : [] },
          },
        },
      ],
    });
    const shipper = pod('apps', 'log-shipper-x1', 'talos-prd-cp-1', { app: 'log-shipper' }, 'DaemonSet');
    const web = pod('apps', 'web-1', 'talos-prd-cp-1', { app: 'web' }, 'StatefulSet');

    const daemon = evaluateDisruptionBudgets(IM_BUDGETS, view(['talos-prd-cp-1'], [shipper], { longhorn: attached('log-shipper-x1') }));
    const manual = evaluateDisruptionBudgets(IM_BUDGETS, view(['talos-prd-cp-1'], [], { longhorn: attached() }));
    const evicted = evaluateDisruptionBudgets(IM_BUDGETS, view(['talos-prd-cp-1'], [web], { longhorn: attached('web-1') }));

    expect(daemon.status).toBe('failed');
    expect(daemon.evidence[0]).toContain('apps/logs (volume pvc-1) stays attached to apps/log-shipper-x1, which the drain does not evict');
    expect(manual.status).toBe('failed');
    expect(manual.evidence[0]).toContain('apps/logs (volume pvc-1) is attached on talos-prd-cp-1 with no pod there that the drain evicts');
    expect(evicted.status).toBe('passed');
  });

  it('ignore a replica that never started', () => {
    const replicas = [replica('pvc-1', 'talos-prd-cp-1', { healthy: false })];

    expect(evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [], { longhorn: longhorn(replicas) })).status).toBe('passed');
  });

  it('are ordinary budgets where Longhorn cannot be read: at 0 with its pod on a node to drain, they block', () => {
    const im = pod('longhorn-system', 'instance-manager-1', 'talos-prd-cp-1', IM_LABELS('talos-prd-cp-1'), 'InstanceManager');

    expect(evaluateDisruptionBudgets(IM_BUDGETS, view(NODES, [im])).status).toBe('failed');
  });
});

/** A node on Talos 1.13: its upgrade drains from talosctl. */
function TALOS_113(name: string): V1Node {
  const n = node(name);
  n.status!.nodeInfo = { osImage: 'Talos (v1.13.9)' } as V1NodeSystemInfo;
  return n;
}

describe('pods without a controller', () => {
  const bare: V1Pod = {
    metadata: { namespace: 'apps', name: 'debug-shell', labels: {} },
    spec: { nodeName: 'talos-prd-cp-1', containers: [] },
    status: { phase: 'Running' },
  };

  it('are skipped by the drain inside a node below Talos 1.13', () => {
    expect(evaluateDisruptionBudgets([], view(['talos-prd-cp-1'], [bare])).status).toBe('passed');
  });

  it('refuse a drain by talosctl (Talos ≥ 1.13), which deletes them for good, naming the pod and the node', () => {
    const nodes = [TALOS_113('talos-prd-cp-1'), node('talos-prd-cp-2'), node('talos-prd-cp-3')];

    const result = evaluateDisruptionBudgets([], view(['talos-prd-cp-1'], [bare], { nodes }));

    expect(result.status).toBe('failed');
    expect(result.evidence[0]).toBe(
      'pod apps/debug-shell on talos-prd-cp-1 (10.0.30.11) has no controller: the Talos ≥ 1.13 drain deletes it and nothing recreates it. Move it under a Deployment or StatefulSet, or delete it yourself, then retry',
    );
  });

  it('count against their budget on a Talos ≥ 1.13 drain', () => {
    const nodes = [TALOS_113('talos-prd-cp-1'), node('talos-prd-cp-2'), node('talos-prd-cp-3')];
    const held: V1Pod = {
      metadata: { namespace: 'apps', name: 'debug-shell', labels: { app: 'debug-shell' } },
      spec: { nodeName: 'talos-prd-cp-1', containers: [] },
      status: { phase: 'Running' },
    };

    const result = evaluateDisruptionBudgets([pdb('apps', 'debug-shell', AT_ZERO)], view(['talos-prd-cp-1'], [held], { nodes }));

    expect(result.evidence.some((e) => e.startsWith('PDB apps/debug-shell: disruptionsAllowed=0'))).toBe(true);
  });
});

const CNPG_PRIMARY = (cluster: string): V1PodDisruptionBudget =>
  pdb('apps', `${cluster}-primary`, AT_ZERO, { matchLabels: { 'cnpg.io/cluster': cluster, 'cnpg.io/instanceRole': 'primary' } });

function instance(cluster: string, n: number, nodeName: string, role: 'primary' | 'replica', ready = true): V1Pod {
  const p = pod('apps', `${cluster}-${n}`, nodeName, { 'cnpg.io/cluster': cluster, 'cnpg.io/instanceRole': role, role }, 'Cluster');
  p.status = { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] };
  return p;
}

describe("CloudNativePG's primary budget", () => {
  it('passes with a ready replica on another schedulable node, saying where the primary moves', () => {
    const pods = [instance('db', 1, 'talos-prd-cp-1', 'primary'), instance('db', 2, 'talos-prd-cp-2', 'replica')];

    const result = evaluateDisruptionBudgets([CNPG_PRIMARY('db')], view(['talos-prd-cp-1'], pods));

    expect(result.status).toBe('passed');
    expect(result.summary).toContain('the primary of apps/db moves to db-2 (on talos-prd-cp-2) when talos-prd-cp-1 drains');
  });

  it('passes with nothing to say when the primary runs on no node to drain', () => {
    const pods = [instance('db', 1, 'talos-prd-cp-2', 'primary'), instance('db', 2, 'talos-prd-cp-3', 'replica')];

    expect(evaluateDisruptionBudgets([CNPG_PRIMARY('db')], view(['talos-prd-cp-1'], pods)).status).toBe('passed');
  });

  it('fails for a single-instance Cluster, naming it', () => {
    const result = evaluateDisruptionBudgets(
      [CNPG_PRIMARY('solo')],
      view(['talos-prd-cp-1'], [instance('solo', 1, 'talos-prd-cp-1', 'primary')]),
    );

    expect(result.status).toBe('failed');
    expect(result.summary).toContain('apps/solo is a single-instance CloudNativePG Cluster and its primary solo-1 runs on talos-prd-cp-1');
  });

  it('fails when no replica is ready on another schedulable node', () => {
    const notReady = [instance('db', 1, 'talos-prd-cp-1', 'primary'), instance('db', 2, 'talos-prd-cp-2', 'replica', false)];
    const cordoned = [instance('db', 1, 'talos-prd-cp-1', 'primary'), instance('db', 2, 'talos-prd-cp-2', 'replica')];
    const nodes = [node('talos-prd-cp-1'), node('talos-prd-cp-2', { cordoned: true }), node('talos-prd-cp-3')];

    expect(evaluateDisruptionBudgets([CNPG_PRIMARY('db')], view(['talos-prd-cp-1'], notReady)).summary).toContain(
      'not every instance is ready (db-2)',
    );
    expect(evaluateDisruptionBudgets([CNPG_PRIMARY('db')], view(['talos-prd-cp-1'], cordoned, { nodes })).summary).toContain(
      'no ready replica runs on another schedulable node',
    );
  });
});

describe('selects', () => {
  it('follows matchLabels and matchExpressions; an empty selector selects everything', () => {
    const labels = { app: 'web', tier: 'front' };

    expect(selects({ matchLabels: { app: 'web' } }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] }, labels)).toBe(true);
    expect(selects({ matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['front'] }] }, labels)).toBe(false);
    expect(selects({ matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] }, labels)).toBe(true);
    expect(selects({}, labels)).toBe(true);
    expect(selects(undefined, labels)).toBe(false);
  });
});
