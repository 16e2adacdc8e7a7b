import type { V1Node, V1PodSpec } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ZONE_LABEL } from '../../../../src/rules/readiness/host-placement.ts';
import { withWorkloadSpread, workloadSpread, type Workload } from '../../../../src/rules/readiness/workload-spread.ts';
import type { ReadinessGate } from '../../../../src/rules/gate-result.ts';

const HOST = 'example.org/proxmox-host';
const ok = <T>(value: T) => ({ ok: true as const, value });

function node(name: string, host: string, zone?: string): V1Node {
  const labels: Record<string, string> = { [HOST]: host };
  if (zone !== undefined) labels[ZONE_LABEL] = zone;
  return { metadata: { name, labels } };
}

function workload(
  kind: Workload['kind'],
  namespace: string,
  name: string,
  replicas: number | undefined,
  spec: Partial<V1PodSpec> = {},
): Workload {
  return {
    kind,
    metadata: { namespace, name },
    spec: { replicas, template: { spec: { containers: [], ...spec } } },
  };
}

const spreadOn = (key: string): Partial<V1PodSpec> => ({
  topologySpreadConstraints: [{ topologyKey: key, maxSkew: 1, whenUnsatisfiable: 'DoNotSchedule' }],
});
const antiOn = (key: string): Partial<V1PodSpec> => ({
  affinity: { podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: key }] } },
});

const NODES = [node('cp-1', 'pve1'), node('cp-2', 'pve2'), node('cp-3', 'pve3')];
const PASSED: ReadinessGate = { id: 'host-placement', title: 't', status: 'passed', summary: 'longhorn ok', evidence: ['longhorn'] };

describe('workloadSpread', () => {
  it('passes a spread or an anti-affinity on the host label, and ignores single replicas', () => {
    const result = workloadSpread(HOST, NODES, [
      workload('Deployment', 'apps', 'web', 3, spreadOn(HOST)),
      workload('StatefulSet', 'db', 'pg', 2, antiOn(HOST)),
      workload('Deployment', 'apps', 'single', 1),
      workload('Deployment', 'apps', 'defaulted', undefined),
    ]);
    expect(result.status).toBe('passed');
    expect(result.evidence).toEqual([
      'Deployment apps/web (3 replicas): topologySpreadConstraints example.org/proxmox-host maxSkew=1 DoNotSchedule',
      'StatefulSet db/pg (2 replicas): podAntiAffinity required on example.org/proxmox-host',
    ]);
  });

  it('fails a workload whose replicas may share one host, spread by hostname only', () => {
    const result = workloadSpread(HOST, NODES, [workload('Deployment', 'apps', 'web', 3, spreadOn('kubernetes.io/hostname'))]);
    expect(result.status).toBe('failed');
    expect(result.failing).toEqual(['Deployment apps/web']);
  });

  it('accepts the zone label only when the zones are the hosts', () => {
    const zoned = [node('cp-1', 'pve1', 'pve1'), node('cp-2', 'pve2', 'pve2')];
    const mixed = [node('cp-1', 'pve1', 'a'), node('cp-2', 'pve2', 'a')];
    const web = [workload('Deployment', 'apps', 'web', 2, spreadOn(ZONE_LABEL))];
    expect(workloadSpread(HOST, zoned, web).status).toBe('passed');
    expect(workloadSpread(HOST, mixed, web).status).toBe('failed');
  });

  it('only warns for kube-system, which Talos renders', () => {
    const result = workloadSpread(HOST, NODES, [workload('Deployment', 'kube-system', 'coredns', 2)]);
    expect(result.status).toBe('passed');
    expect(result.evidence[0]).toMatch(/^warning: Deployment kube-system\/coredns/);
  });
});

describe('withWorkloadSpread', () => {
  it("fails the host placement gate and keeps Longhorn's evidence", () => {
    const gate = withWorkloadSpread(PASSED, HOST, ok(NODES), ok([workload('StatefulSet', 'apps', 'queue', 3)]));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('StatefulSet apps/queue can put every replica on one host');
    expect(gate.evidence[0]).toBe('longhorn');
  });

  it('fails when the workloads cannot be read, and keeps a passing gate passing otherwise', () => {
    expect(withWorkloadSpread(PASSED, HOST, ok(NODES), { ok: false, error: 'forbidden' }).status).toBe('failed');
    expect(withWorkloadSpread(PASSED, HOST, ok(NODES), ok([])).status).toBe('passed');
  });
});
