import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { parseInventory } from '../../../src/config/inventory.ts';
import { inventoryLinesFor } from '../../../src/config/inventory-lines.ts';
import { terraformFollowUpMessage } from '../../../jobs/playbooks/terraform-apply/messages.ts';
import { anOperation } from '../../support/builders.ts';

const FILE = `clusters:
  production:
    environment: production
    channel: C0MAINTPRD
    terraformDir: /srv/infra/terraform/production
    controlPlanes: [10.0.30.11, 10.0.30.12]
    workers: [10.0.30.21]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
`;
const cluster = parseInventory(FILE, 'clusters.yaml').clusters[0]!;

describe('the inventory lines for nodes a Terraform apply added', () => {
  it('gives each node list as it must read afterwards, and pasted over the file they make the inventory the bot then reads', () => {
    // Act
    const lines = inventoryLinesFor(cluster, [
      { address: '10.0.30.13', role: 'controlplane', name: 'talos-prd-cp-3' },
      { address: '10.0.30.22', role: 'worker' },
    ]);

    // Assert
    expect(lines).toEqual([
      'clusters:',
      '  production:',
      '    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]   # added: talos-prd-cp-3 (10.0.30.13)',
      '    workers: [10.0.30.21, 10.0.30.22]   # added: 10.0.30.22',
    ]);
    const edit = parseYaml(lines.join('\n')) as { clusters: { production: Record<string, unknown> } };
    const file = parseYaml(FILE) as { clusters: { production: Record<string, unknown> } };
    Object.assign(file.clusters.production, edit.clusters.production);
    const after = parseInventory(stringify(file), 'clusters.yaml').clusters[0]!;
    expect(after.controlPlanes).toEqual(['10.0.30.11', '10.0.30.12', '10.0.30.13']);
    expect(after.workers).toEqual(['10.0.30.21', '10.0.30.22']);
  });

  it('offers nothing for a node already listed or an address that is not one', () => {
    expect(inventoryLinesFor(cluster, [{ address: '10.0.30.21', role: 'worker' }])).toEqual([]);
    expect(inventoryLinesFor(cluster, [{ address: 'talos-prd-w-9', role: 'worker' }])).toEqual([]);
  });

  it('asks for no edit where the inventory lists no nodes: the bot finds the new one itself', () => {
    const unlisted = parseInventory(
      FILE.replace('    controlPlanes: [10.0.30.11, 10.0.30.12]\n    workers: [10.0.30.21]\n', ''),
      'clusters.yaml',
    ).clusters[0]!;
    const joined = [{ address: '10.0.30.22', role: 'worker' as const, name: 'talos-prd-w-2' }];

    const message = terraformFollowUpMessage(
      anOperation({ kind: 'terraform-apply', cluster: 'production' }),
      unlisted,
      [],
      ['talos-prd-w-2 (10.0.30.22) joined as a worker'],
      joined,
    );

    expect(inventoryLinesFor(unlisted, joined)).toEqual([]);
    expect(message.blocks).toHaveLength(1);
    expect(message.text).toContain("Nothing to edit in this bot's inventory: the next operation includes it.");
    expect(message.text).not.toContain('controlPlanes');
  });

  it('puts the lines in a code block of the follow-up, after the sentence that says where they go', () => {
    // Act
    const message = terraformFollowUpMessage(
      anOperation({ kind: 'terraform-apply', cluster: 'production' }),
      cluster,
      [],
      ['talos-prd-w-2 (10.0.30.22) joined as a worker'],
      [{ address: '10.0.30.22', role: 'worker', name: 'talos-prd-w-2' }],
    );

    // Assert
    const blocks = message.blocks as { type: string; text?: { text: string } }[];
    expect(blocks).toHaveLength(2);
    expect(blocks[0]!.text!.text).toContain('The lines for production in the inventory');
    expect(blocks[1]!.text!.text).toBe(
      '```clusters:\n  production:\n    workers: [10.0.30.21, 10.0.30.22]   # added: talos-prd-w-2 (10.0.30.22)```',
    );
  });
});
