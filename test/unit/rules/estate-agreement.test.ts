import { describe, expect, it } from 'vitest';
import type { EstateObservation, ObservedEtcdMember, ObservedKubeNode } from '../../../src/cluster/estate.ts';
import { observedEtcdMembers } from '../../../src/cluster/estate.ts';
import { parseInventory, type ClusterConfig } from '../../../src/config/inventory.ts';
import { evaluateEstate } from '../../../src/health/rules/estate.ts';
import { judgeEstate } from '../../../src/rules/estate-agreement.ts';

/** A production cluster as the inventory declares it; `lists` adds node lists (YAML lines under the cluster). */
function cluster(lists = ''): ClusterConfig {
  return parseInventory(
    `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/tf
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
${lists}`,
    'clusters.yaml',
  ).clusters[0]!;
}

const CPS: ObservedKubeNode[] = [
  { name: 'talos-prd-cp-1', address: '10.0.30.11', role: 'controlplane' },
  { name: 'talos-prd-cp-2', address: '10.0.30.12', role: 'controlplane' },
  { name: 'talos-prd-cp-3', address: '10.0.30.13', role: 'controlplane' },
];
const WORKER: ObservedKubeNode = { name: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker' };
const members = (nodes: ObservedKubeNode[]): ObservedEtcdMember[] =>
  nodes.map((n, i) => ({ id: `a${i}`, hostname: n.name, ...(n.address ? { address: n.address } : {}) }));
/** `tofu state list` of the runbook's configuration: each node's VM and configuration apply, keyed by hostname. */
const vms = (names: string[]) =>
  names.flatMap((hostname) => [
    `proxmox_virtual_environment_vm.talos["${hostname}"]`,
    `talos_machine_configuration_apply.this["${hostname}"]`,
  ]);

/** Every source agreeing on three control planes and one worker; `change` edits one source. */
function observation(change: Partial<EstateObservation> = {}): EstateObservation {
  return {
    talosconfig: { ok: true, value: ['10.0.30.11', '10.0.30.12', '10.0.30.13'] },
    etcd: { ok: true, value: members(CPS) },
    kube: { ok: true, value: [...CPS, WORKER] },
    terraform: { ok: true, value: vms([...CPS, WORKER].map((n) => n.name)) },
    ...change,
  };
}

describe('judgeEstate', () => {
  it('finds every node from the sources when the inventory lists none, and agrees', () => {
    const estate = judgeEstate(cluster(), observation());
    expect(estate.controlPlanes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(estate.workers).toEqual(['10.0.30.21']);
    expect(estate.nodeNames['10.0.30.21']).toBe('talos-prd-w-1');
    expect(estate.disagreements).toEqual([]);
    expect(evaluateEstate(estate)).toMatchObject({ id: 'estate', status: 'passed' });
  });

  it('names a control plane etcd and Kubernetes know but the inventory does not list, and still counts it', () => {
    const estate = judgeEstate(cluster('    controlPlanes: [10.0.30.11, 10.0.30.12]\n    workers: [10.0.30.21]\n'), observation());
    expect(estate.controlPlanes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(estate.disagreements).toEqual([
      expect.objectContaining({
        kind: 'inventory-missing-node',
        node: { address: '10.0.30.13', name: 'talos-prd-cp-3' },
        text: "talos-prd-cp-3 (10.0.30.13) is a control plane to etcd and Kubernetes, but the inventory's controlPlanes does not list it, so the bot would leave it out",
      }),
    ]);
    expect(evaluateEstate(estate)).toMatchObject({ status: 'failed' });
  });

  it('names an inventory entry that is gone and one listed in the wrong role', () => {
    const estate = judgeEstate(
      cluster('    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13, 10.0.30.21]\n    workers: [10.0.30.22]\n'),
      observation(),
    );
    expect(estate.disagreements.map((d) => [d.kind, d.node.address])).toEqual([
      ['inventory-role', '10.0.30.21'],
      ['inventory-entry-gone', '10.0.30.22'],
    ]);
    expect(estate.workers).toEqual(['10.0.30.21']);
  });

  it('names an etcd member without a Node, a Node no source declares and a Terraform VM that never joined', () => {
    const stray: ObservedKubeNode = { name: 'stray', address: '10.0.30.99', role: 'worker' };
    const estate = judgeEstate(
      cluster(),
      observation({
        kube: { ok: true, value: [CPS[0]!, CPS[1]!, WORKER, stray] },
        terraform: { ok: true, value: vms(['talos-prd-cp-1', 'talos-prd-cp-2', 'talos-prd-cp-3', 'talos-prd-w-1', 'talos-prd-w-2']) },
      }),
    );
    expect(estate.disagreements.map((d) => [d.kind, d.node.name])).toEqual([
      ['etcd-member-without-node', 'talos-prd-cp-3'],
      ['node-undeclared', 'stray'],
      ['terraform-node-not-joined', 'talos-prd-w-2'],
    ]);
    // etcd's member is a control plane although Kubernetes has no Node for it.
    expect(estate.controlPlanes).toContain('10.0.30.13');
    expect(estate.workers).toEqual(['10.0.30.21', '10.0.30.99']);
  });

  it('names a control plane the talosconfig does not list, reading endpoints given with a port', () => {
    const estate = judgeEstate(
      cluster(),
      observation({ talosconfig: { ok: true, value: ['10.0.30.11:50000', 'https://10.0.30.12:50000'] } }),
    );
    expect(estate.disagreements).toEqual([
      expect.objectContaining({ kind: 'control-plane-not-in-talosconfig', node: { address: '10.0.30.13', name: 'talos-prd-cp-3' } }),
    ]);
  });

  it('reports an unread source as unread, never as no nodes, and concludes nothing from it', () => {
    const estate = judgeEstate(
      cluster('    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]\n'),
      observation({ etcd: { ok: false, error: 'etcdserver: no leader' }, terraform: { ok: false, error: 'state locked' } }),
    );
    expect(estate.controlPlanes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(estate.disagreements).toEqual([]);
    expect(estate.unread).toEqual(['etcd members: etcdserver: no leader', 'Terraform state: state locked']);
    expect(evaluateEstate(estate)).toMatchObject({ status: 'warning' });
  });

  it('keeps the inventory lists when neither etcd nor Kubernetes answers, else the talosconfig endpoints', () => {
    const down = { etcd: { ok: false, error: 'no answer in 20s' }, kube: { ok: false, error: 'connect ECONNREFUSED' } } as const;
    const listed = judgeEstate(cluster('    controlPlanes: [10.0.30.11]\n    workers: [10.0.30.21]\n'), observation(down));
    expect([listed.controlPlanes, listed.workers, listed.disagreements]).toEqual([['10.0.30.11'], ['10.0.30.21'], []]);
    const unlisted = judgeEstate(cluster(), observation(down));
    expect([unlisted.controlPlanes, unlisted.workers]).toEqual([['10.0.30.11', '10.0.30.12', '10.0.30.13'], []]);
  });

  it('does not compare Terraform whose state holds none of the runbook VMs', () => {
    const estate = judgeEstate(cluster(), observation({ terraform: { ok: true, value: [] } }));
    expect(estate.disagreements).toEqual([]);
    expect(estate.unread).toEqual([
      'Terraform state: `tofu state list` names no proxmox_virtual_environment_vm, so Terraform is not compared',
    ]);
  });
});

describe('observedEtcdMembers', () => {
  it('lists each member once across the nodes asked, with the address of its peer URL', () => {
    const stdout = `NODE         ID                 HOSTNAME     PEER URLS                 CLIENT URLS               LEARNER
10.0.30.11   ecebb05b59a776f1   talos-cp-1   https://10.0.30.11:2380   https://10.0.30.11:2379   false
10.0.30.11   91d7fd8bcae7a0e2                https://10.0.30.14:2380                             true
10.0.30.12   ecebb05b59a776f1   talos-cp-1   https://10.0.30.11:2380   https://10.0.30.11:2379   false
`;
    expect(observedEtcdMembers(stdout)).toEqual([
      { id: 'ecebb05b59a776f1', hostname: 'talos-cp-1', address: '10.0.30.11', learner: false },
      { id: '91d7fd8bcae7a0e2', hostname: '', address: '10.0.30.14', learner: true },
    ]);
  });
});
