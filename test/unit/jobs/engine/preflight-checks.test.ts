import { describe, expect, it } from 'vitest';
import type { Disagreement, Estate } from '../../../../src/cluster/estate.ts';
import { estateRefusals } from '../../../../jobs/engine/preflight-checks.ts';
import { withOwnNode } from '../../../../jobs/engine/walk.ts';
import { aboutOwnNode } from '../../../../jobs/playbooks/shared/resolves.ts';
import { applyResolves } from '../../../../jobs/playbooks/terraform-apply/resolves.ts';
import { parseInventory } from '../../../../src/config/inventory.ts';
import { anOperation } from '../../../support/builders.ts';

const UNDECLARED: Disagreement = {
  kind: 'node-undeclared',
  node: { address: '10.0.30.24', name: 'talos-prd-w-4' },
  text: "Kubernetes Node talos-prd-w-4 (10.0.30.24) (worker) is declared by no source: Terraform's state do not name it",
  fix: 'declare it in Terraform and apply, or remove it',
};
const MEMBER: Disagreement = {
  kind: 'etcd-member-without-node',
  node: { address: '10.0.30.13', name: 'talos-prd-cp-3' },
  text: 'etcd member talos-prd-cp-3 (10.0.30.13) has no Kubernetes Node',
  fix: '/talos remove 10.0.30.13',
};

function estate(disagreements: Disagreement[]): Estate {
  const unread = { ok: false, error: 'not read' } as const;
  return {
    observation: { talosconfig: unread, etcd: unread, kube: unread, terraform: unread },
    controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
    workers: ['10.0.30.24'],
    nodeNames: {},
    disagreements,
    unread: [],
  };
}

describe('estateRefusals', () => {
  it('refuses an operation for every disagreement it does not resolve, each named with what to do', () => {
    const upgrade = anOperation({ kind: 'talos-upgrade' });

    expect(estateRefusals(estate([UNDECLARED, MEMBER]), {}, upgrade)).toEqual([
      `the sources disagree on the nodes: ${UNDECLARED.text}. To do: ${UNDECLARED.fix}`,
      `the sources disagree on the nodes: ${MEMBER.text}. To do: ${MEMBER.fix}`,
    ]);
  });

  it('lets the removal of the very node a disagreement names through, and still refuses it for any other node', () => {
    const removal = anOperation({ kind: 'node-remove', target: { node: '10.0.30.13' } });

    expect(estateRefusals(estate([MEMBER]), { resolves: aboutOwnNode }, removal)).toEqual([]);
    expect(estateRefusals(estate([MEMBER, UNDECLARED]), { resolves: aboutOwnNode }, removal)).toHaveLength(1);
  });

  it('lets a reviewed apply through only when its plan changes a resource keyed by the node it would declare', () => {
    const planOf = (address: string, action: string) =>
      anOperation({
        kind: 'terraform-apply',
        data: {
          terraform: { summary: '1 to add', changes: [{ address, action }], listing: [], adds: [], dirty: false },
        },
      });
    const declaring = planOf('proxmox_virtual_environment_vm.talos["talos-prd-w-4"]', 'import');
    const routine = planOf('talos_machine_configuration_apply.this["talos-prd-cp-1"]', 'update');

    expect(estateRefusals(estate([UNDECLARED]), { resolves: applyResolves }, declaring)).toEqual([]);
    expect(estateRefusals(estate([UNDECLARED]), { resolves: applyResolves }, routine)).toHaveLength(1);
    expect(estateRefusals(estate([MEMBER]), { resolves: applyResolves }, declaring)).toHaveLength(1);
  });
});

describe('withOwnNode', () => {
  const cluster = parseInventory(
    'clusters:\n  production:\n    environment: production\n    channel: C0MAINTPRD\n    terraformDir: /srv/tf\n    installerPlatform: nocloud\n    hostLabel: h\n    snapshotDir: /var/b\n    operators: [U0ALICE]\n    approvers: [U0CAROL]\n',
    'x',
  ).clusters[0]!;
  const observed = { ...cluster, controlPlanes: ['10.0.30.11', '10.0.30.12'] };

  it('keeps a removal’s control plane in its role once a step ran and the node left the sources', () => {
    const begun = anOperation({
      kind: 'node-remove',
      target: { node: '10.0.30.13', nodeRole: 'controlplane' },
      steps: [{ id: 'reset', kind: 'reset-node', node: '10.0.30.13', status: 'done' }],
    });

    expect(withOwnNode(observed, begun, { targetLeaves: true }).controlPlanes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
  });

  it('adds nothing before the first step, nor for a playbook whose node never leaves', () => {
    const fresh = anOperation({
      kind: 'node-remove',
      target: { node: '10.0.30.13', nodeRole: 'controlplane' },
      steps: [{ id: 'reset', kind: 'reset-node', node: '10.0.30.13', status: 'pending' }],
    });
    const rollback = { ...fresh, steps: [{ id: 'reset', kind: 'reset-node', node: '10.0.30.13', status: 'done' as const }] };

    expect(withOwnNode(observed, fresh, { targetLeaves: true })).toBe(observed);
    expect(withOwnNode(observed, rollback, {})).toBe(observed);
  });
});
