import type { V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { hostPlacementGate, ZONE_LABEL } from '../../../../src/rules/readiness/host-placement.ts';

const HOST = 'example.org/proxmox-host';
const ok = <T>(value: T) => ({ ok: true as const, value });

function node(name: string, host: string | undefined, zone?: string): V1Node {
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name };
  if (host !== undefined) labels[HOST] = host;
  if (zone !== undefined) labels[ZONE_LABEL] = zone;
  return { metadata: { name, labels } };
}

function setting(name: string, value: string) {
  return { apiVersion: 'longhorn.io/v1beta2', kind: 'Setting', metadata: { name, namespace: 'longhorn-system' }, value };
}

const DEFAULTS = [setting('replica-soft-anti-affinity', 'false'), setting('replica-zone-soft-anti-affinity', 'true')];
const ONE_PER_HOST = [node('cp-1', 'pve1'), node('cp-2', 'pve2'), node('cp-3', 'pve3')];
const SHARED = [...ONE_PER_HOST, node('worker-1', 'pve1')];

describe('hostPlacementGate', () => {
  it("passes on Longhorn's defaults when every node is a host of its own", () => {
    const gate = hostPlacementGate(HOST, ok(ONE_PER_HOST), ok(DEFAULTS));
    expect(gate.status).toBe('passed');
    expect(gate.summary).toContain('replica-soft-anti-affinity is false and every node is on a host of its own (pve1, pve2, pve3)');
    expect(gate.evidence).toContain('cp-1  example.org/proxmox-host=pve1  topology.kubernetes.io/zone=<unset>');
  });

  it('reads an absent setting as its Longhorn default, and says so', () => {
    const gate = hostPlacementGate(HOST, ok(ONE_PER_HOST), ok([]));
    expect(gate.status).toBe('passed');
    expect(gate.evidence[0]).toBe("replica-soft-anti-affinity: false (not set: Longhorn's default)");
  });

  it('fails soft node anti-affinity with the setting to change', () => {
    const gate = hostPlacementGate(HOST, ok(ONE_PER_HOST), ok([setting('replica-soft-anti-affinity', 'true')]));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('replica-soft-anti-affinity is true: Longhorn may put two replicas of a volume on one node');
    expect(gate.summary).toContain(
      `kubectl -n longhorn-system patch settings.longhorn.io replica-soft-anti-affinity --type merge -p '{"value":"false"}'`,
    );
  });

  it('fails nodes that share a host when replicas are kept apart by node only', () => {
    const gate = hostPlacementGate(HOST, ok(SHARED), ok(DEFAULTS));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('cp-1 and worker-1 share pve1: replica-zone-soft-anti-affinity is true');
    expect(gate.summary).toContain('set replica-zone-soft-anti-affinity to false');
    expect(gate.summary).toContain('label each node topology.kubernetes.io/zone=<its example.org/proxmox-host> through machine.nodeLabels');
  });

  it('passes shared hosts when zone anti-affinity is hard and the zones are the hosts', () => {
    const zoned = SHARED.map((n) => node(n.metadata!.name!, n.metadata!.labels![HOST], n.metadata!.labels![HOST]));
    const gate = hostPlacementGate(HOST, ok(zoned), ok([setting('replica-zone-soft-anti-affinity', 'false')]));
    expect(gate.status).toBe('passed');
    expect(gate.summary).toContain("each node's topology.kubernetes.io/zone is its host");
  });

  it('fails hard zone anti-affinity whose zones are not the hosts, naming the mismatch and not the setting', () => {
    const nodes = [node('cp-1', 'pve1', 'a'), node('worker-1', 'pve1', 'b'), node('cp-2', 'pve2', 'b'), node('cp-3', 'pve3')];
    const gate = hostPlacementGate(HOST, ok(nodes), ok([setting('replica-zone-soft-anti-affinity', 'false')]));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('cp-3 has no topology.kubernetes.io/zone');
    expect(gate.summary).toContain('host pve1 spans the zones a, b');
    expect(gate.summary).toContain('zone b spans the hosts pve1, pve2');
    expect(gate.summary).not.toContain('set replica-zone-soft-anti-affinity');
  });

  it('fails a node without the host label, and without Longhorn, and on unread input', () => {
    expect(hostPlacementGate(HOST, ok([node('cp-1', undefined)]), ok(DEFAULTS)).summary).toContain(
      'cp-1 has no example.org/proxmox-host label',
    );
    expect(hostPlacementGate(HOST, ok(ONE_PER_HOST), ok(undefined)).summary).toContain('Longhorn is not installed');
    expect(hostPlacementGate(HOST, { ok: false, error: 'timed out' }, ok(DEFAULTS)).status).toBe('failed');
    expect(hostPlacementGate(HOST, ok(ONE_PER_HOST), { ok: false, error: 'forbidden' }).summary).toContain(
      "could not read Longhorn's settings: forbidden",
    );
  });
});
