import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { shapeOf, stagingShapeGate } from '../../../../src/rules/readiness/staging-shape.ts';

const HOST = 'example.org/proxmox-host';
const ok = <T>(value: T) => ({ ok: true as const, value });

function node(name: string, host: string, controlPlane: boolean): V1Node {
  const labels: Record<string, string> = { [HOST]: host };
  if (controlPlane) labels['node-role.kubernetes.io/control-plane'] = '';
  return { metadata: { name, labels } };
}

const PRODUCTION = shapeOf(
  { name: 'prod', controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'], workers: ['10.0.30.21'], hostLabel: HOST },
  [node('cp-1', 'pve1', true), node('cp-2', 'pve2', true), node('cp-3', 'pve3', true), node('w-1', 'pve1', false)],
  true,
);

describe('shapeOf', () => {
  it('counts control planes, workers, distinct hosts and Longhorn', () => {
    expect(PRODUCTION).toEqual({ cluster: 'prod', controlPlanes: 3, workers: 1, controlPlaneHosts: 3, hosts: 3, longhorn: true });
  });
});

describe('stagingShapeGate', () => {
  it("passes when staging has production's shape, listing both", () => {
    const gate = stagingShapeGate(ok(PRODUCTION), ok({ ...PRODUCTION, cluster: 'staging' }));
    expect(gate.status).toBe('passed');
    expect(gate.evidence).toEqual([
      'production prod: 3 control planes on 3 hosts, 1 worker, 3 hosts in all, Longhorn installed',
      'staging staging: 3 control planes on 3 hosts, 1 worker, 3 hosts in all, Longhorn installed',
    ]);
  });

  it('fails a single-node staging with every change it needs', () => {
    const staging = shapeOf(
      { name: 'staging', controlPlanes: ['10.0.40.11'], workers: [], hostLabel: HOST },
      [node('s-1', 'pve1', true)],
      false,
    );
    const gate = stagingShapeGate(ok(PRODUCTION), ok(staging));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      'staging is not shaped like prod, so its rehearsals do not stand for production: run 3 control planes on staging (it has 1); add a worker to staging, as prod has 1 worker; install Longhorn on staging, as prod runs it',
    );
  });

  it('fails control planes that share a host when production keeps them apart', () => {
    const staging = shapeOf(
      { name: 'staging', controlPlanes: ['a', 'b', 'c'], workers: ['d'], hostLabel: HOST },
      [node('s-1', 'pve1', true), node('s-2', 'pve1', true), node('s-3', 'pve2', true), node('s-4', 'pve2', false)],
      true,
    );
    const gate = stagingShapeGate(ok(PRODUCTION), ok(staging));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain(
      'put each control plane of staging on its own host, as in prod (its 3 control planes carry 2 distinct host labels)',
    );
  });

  it('does not ask for workers or Longhorn that production lacks', () => {
    const production = { ...PRODUCTION, workers: 0, longhorn: false };
    const gate = stagingShapeGate(ok(production), ok({ ...production, cluster: 'staging' }));
    expect(gate.status).toBe('passed');
  });

  it('fails, saying why, when staging cannot be read', () => {
    const gate = stagingShapeGate(ok(PRODUCTION), { ok: false, error: 'connection refused' });
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe("could not read the staging cluster's shape: connection refused. Make staging reachable, then check again");
    expect(gate.evidence).toContain('staging: connection refused');
  });

  it('fails when the inventory has no staging cluster', () => {
    const gate = stagingShapeGate(ok(PRODUCTION), undefined);
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('the inventory has no staging cluster');
  });

  it("fails when production's shape cannot be read", () => {
    const gate = stagingShapeGate({ ok: false, error: 'the Kubernetes nodes: timed out' }, ok(PRODUCTION));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain("could not read production's shape");
  });
});
