import type { V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import type { LonghornReplica, LonghornView } from '../../../../src/health/rules/longhorn.ts';
import { drainVerdict } from '../../../../src/health/rules/node-drain.ts';
import { evaluateDisruptionBudgets, type DrainView } from '../../../../src/health/rules/pdb.ts';

const ADDRESS: Record<string, string> = { 'talos-prd-w-1': '10.0.20.21', 'talos-prd-w-2': '10.0.20.22', 'talos-prd-w-3': '10.0.20.23' };
const NODES = Object.keys(ADDRESS);
const AT_ZERO = { currentHealthy: 1, desiredHealthy: 1, disruptionsAllowed: 0, expectedPods: 1, observedGeneration: 1 };

function pdb(namespace: string, name: string, matchLabels: Record<string, string>, status = AT_ZERO): V1PodDisruptionBudget {
  return { metadata: { namespace, name, generation: 1 }, spec: { minAvailable: 1, selector: { matchLabels } }, status };
}

function node(name: string, cordoned = false): V1Node {
  return {
    metadata: { name },
    spec: { unschedulable: cordoned },
    status: { addresses: [{ type: 'InternalIP', address: ADDRESS[name]! }], conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function pod(namespace: string, name: string, nodeName: string, labels: Record<string, string>, owner = 'ReplicaSet'): V1Pod {
  return {
    metadata: {
      namespace,
      name,
      labels,
      ownerReferences: [{ apiVersion: 'apps/v1', kind: owner, name: `${name}-o`, uid: 'u', controller: true }],
    },
    spec: { nodeName, containers: [] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

/** The budgets as judged for the drain of the one node `drain`, which is what each node step asks before its drain. */
function judge(drain: string, pdbs: V1PodDisruptionBudget[], pods: V1Pod[], extra: Partial<DrainView> = {}) {
  const view: DrainView = { drain: [{ name: drain, address: ADDRESS[drain]! }], pods, nodes: NODES.map((n) => node(n)), ...extra };
  return drainVerdict(ADDRESS[drain]!, evaluateDisruptionBudgets(pdbs, view));
}

function replica(volume: string, nodeID: string): LonghornReplica {
  return {
    metadata: { name: `${volume}-r-${nodeID.slice(-1)}` },
    spec: { nodeID, volumeName: volume, desireState: 'running', healthyAt: '2026-11-01T00:00:00Z', failedAt: '' },
    status: { currentState: 'running' },
  };
}

const IM = (n: string): V1PodDisruptionBudget =>
  pdb('longhorn-system', `instance-manager-${n.slice(-1)}`, { 'longhorn.io/component': 'instance-manager', 'longhorn.io/node': n });

describe('the budgets judged for one node just before its drain', () => {
  const web = [pdb('apps', 'web', { app: 'web' })];
  const webOnTwo = [pod('apps', 'web-0', 'talos-prd-w-2', { app: 'web' })];

  it('stops before the drain of the node whose pod a budget at 0 protects, naming the budget, the pod and the node', () => {
    const verdict = judge('talos-prd-w-2', web, webOnTwo);

    expect(verdict).toEqual({
      ok: false,
      reason: expect.stringMatching(/^the drain of 10\.0\.20\.22 would block, so 10\.0\.20\.22 was not touched: /),
      evidence: expect.any(Array),
    });
    expect(verdict.ok === false && verdict.evidence).toEqual([
      'PDB apps/web: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1) and apps/web-0 runs on talos-prd-w-2 (10.0.20.22): draining that node would block',
    ]);
  });

  it('lets the drain of another node begin: the same budget does not hold a node none of its pods runs on', () => {
    const verdict = judge('talos-prd-w-1', web, webOnTwo);

    expect(verdict.ok).toBe(true);
  });

  it("judges a node already drained by what runs there now: once its pod moved on, that node's budget no longer holds it", () => {
    const moved = [pod('apps', 'web-0', 'talos-prd-w-3', { app: 'web' })];

    expect(judge('talos-prd-w-2', web, moved).ok).toBe(true);
    expect(judge('talos-prd-w-3', web, moved).ok).toBe(false);
  });

  it("judges Longhorn's instance-manager budget by its node-drain policy: the node with the last healthy replica is stopped", () => {
    const volumes = [{ metadata: { name: 'pvc-1' }, status: { state: 'attached', robustness: 'degraded' } }];
    const longhorn: LonghornView = {
      volumes,
      replicas: [replica('pvc-1', 'talos-prd-w-3')],
      drainPolicy: 'block-if-contains-last-replica',
    };

    const blocked = judge('talos-prd-w-3', NODES.map(IM), [], { longhorn });
    const free = judge('talos-prd-w-1', NODES.map(IM), [], { longhorn });

    expect(blocked).toEqual({
      ok: false,
      reason: expect.stringContaining('the drain of 10.0.20.23 would block'),
      evidence: [expect.stringContaining('talos-prd-w-3 holds the last healthy replica of volume pvc-1')],
    });
    expect(free.ok).toBe(true);
  });

  it('lets the drain begin under always-allow, whatever the replicas', () => {
    const volumes = [{ metadata: { name: 'pvc-1' }, status: { state: 'detached' } }];
    const longhorn: LonghornView = { volumes, replicas: [replica('pvc-1', 'talos-prd-w-3')], drainPolicy: 'always-allow' };

    expect(judge('talos-prd-w-3', NODES.map(IM), [], { longhorn }).ok).toBe(true);
  });

  it("judges CloudNativePG's primary budget by its switchover: a single instance on the node stops the drain, a ready replica elsewhere lets it go", () => {
    const primaryBudget = [pdb('apps', 'db-primary', { 'cnpg.io/cluster': 'db', 'cnpg.io/instanceRole': 'primary' })];
    const instance = (n: number, nodeName: string, role: string): V1Pod =>
      pod('apps', `db-${n}`, nodeName, { 'cnpg.io/cluster': 'db', 'cnpg.io/instanceRole': role }, 'Cluster');

    const single = judge('talos-prd-w-1', primaryBudget, [instance(1, 'talos-prd-w-1', 'primary')]);
    const withReplica = judge('talos-prd-w-1', primaryBudget, [
      instance(1, 'talos-prd-w-1', 'primary'),
      instance(2, 'talos-prd-w-2', 'replica'),
    ]);

    expect(single).toEqual({
      ok: false,
      reason: expect.stringContaining('single-instance CloudNativePG Cluster'),
      evidence: expect.any(Array),
    });
    expect(withReplica).toEqual({ ok: true, summary: expect.stringContaining('the primary of apps/db moves to db-2') });
  });

  it('says a drain that will wait for replacements, and lets it begin', () => {
    const twoAllowedOne = { currentHealthy: 3, desiredHealthy: 2, disruptionsAllowed: 1, expectedPods: 3, observedGeneration: 1 };
    const pods = [pod('apps', 'api-0', 'talos-prd-w-1', { app: 'api' }), pod('apps', 'api-1', 'talos-prd-w-1', { app: 'api' })];

    const verdict = judge('talos-prd-w-1', [pdb('apps', 'api', { app: 'api' }, twoAllowedOne)], pods);

    expect(verdict).toEqual({
      ok: true,
      summary: expect.stringMatching(
        /^budgets for the drain of 10\.0\.20\.21: the drain may wait: .*allows 1 disruption but 2 of its pods/,
      ),
    });
  });

  it('has nothing to judge for an address Kubernetes has no Node for', () => {
    expect(drainVerdict('10.0.20.99', undefined)).toEqual({ ok: true, summary: 'Kubernetes has no Node for 10.0.20.99: nothing to drain' });
  });
});

describe('the final verification after a node (no drain judged)', () => {
  it('shows a budget at 0 as a warning, never as a stop: the next drain is judged before it', () => {
    const result = evaluateDisruptionBudgets([pdb('apps', 'web', { app: 'web' })], {
      drain: [],
      pods: [pod('apps', 'web-0', 'talos-prd-w-2', { app: 'web' })],
      nodes: NODES.map((n) => node(n)),
    });

    expect([result.status, result.evidence]).toEqual([
      'warning',
      [
        'PDB apps/web: disruptionsAllowed=0 (currentHealthy 1 / desiredHealthy 1); a drain of a node with its pods would block, and is judged before that drain',
      ],
    ]);
  });
});
