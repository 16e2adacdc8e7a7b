import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import { supportFor, supportTable } from '../../../src/talos/compatibility.ts';

const CLUSTERS = `clusters:
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
`;

function problemsOf(text: string): string[] {
  let thrown: unknown;
  try {
    parseInventory(text, '/etc/talos-chatops/clusters.yaml');
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  return (thrown as ConfigError).problems;
}

describe('the inventory talosSupport', () => {
  it('adds a Talos minor the built-in table lacks, as the refusal for it says to write it', () => {
    // Arrange: the lines a refusal for 1.15 gives, pasted at the top level.
    const text = `${CLUSTERS}talosSupport:\n  - talos: "1.15"\n    kubernetesMin: "1.33"\n    kubernetesMax: "1.38"\n    upgradeFromMin: "1.13.0"\n`;

    // Act
    const inventory = parseInventory(text, 'clusters.yaml');

    // Assert
    expect(inventory.talosSupport).toEqual([{ talos: '1.15', kubernetesMin: '1.33', kubernetesMax: '1.38', upgradeFromMin: '1.13.0' }]);
    expect(supportFor('v1.15.0')).toBeUndefined();
    expect(supportFor('v1.15.0', supportTable(inventory))).toEqual(inventory.talosSupport![0]);
    expect(supportFor('v1.14.2', supportTable(inventory))?.kubernetesMax).toBe('1.37');
  });

  it('is optional: without it the table is the built-in one', () => {
    const inventory = parseInventory(CLUSTERS, 'clusters.yaml');

    expect(inventory.talosSupport).toBeUndefined();
    expect(supportTable(inventory).at(-1)?.talos).toBe('1.14');
  });

  it('refuses unquoted minors, saying to quote them since YAML reads 1.10 as 1.1', () => {
    const problems = problemsOf(
      `${CLUSTERS}talosSupport:\n  - talos: 1.15\n    kubernetesMin: "1.33"\n    kubernetesMax: 1.40\n    upgradeFromMin: "1.13.0"\n`,
    );

    expect(problems).toEqual([
      'talosSupport.0.talos: must be a Talos minor in quotes, such as "1.15" (unquoted, YAML reads 1.10 as the number 1.1)',
      'talosSupport.0.kubernetesMax: must be a Kubernetes minor in quotes, such as "1.38" (unquoted, YAML reads 1.10 as the number 1.1)',
    ]);
  });

  it('refuses a row whose range is upside down, an upgrade floor that is not an earlier minor, a minor listed twice and a misspelt key', () => {
    const row = (talos: string, min: string, max: string, from: string, extra = ''): string =>
      `  - talos: "${talos}"\n    kubernetesMin: "${min}"\n    kubernetesMax: "${max}"\n    upgradeFromMin: "${from}"\n${extra}`;
    const text = `${CLUSTERS}talosSupport:\n${row('1.15', '1.38', '1.33', '1.13.0')}${row('1.16', '1.34', '1.39', '1.16.0')}${row('1.16', '1.34', '1.39', '1.14.0', '    kubernetesMinimum: "1.34"\n')}`;

    const problems = problemsOf(text);

    expect(problems).toEqual([
      'talosSupport.0.kubernetesMin: kubernetesMin is above kubernetesMax: the lowest supported Kubernetes minor comes first',
      'talosSupport.1.upgradeFromMin: upgradeFromMin must be a version of an earlier Talos minor than the row’s own',
      'talosSupport.2: Unrecognized key: "kubernetesMinimum" (did you mean kubernetesMin? Otherwise remove it)',
      'talosSupport.2.talos: Talos 1.16 is listed twice: keep one row per minor',
    ]);
  });

  it('refuses a minor listed twice', () => {
    const row = `  - talos: "1.15"\n    kubernetesMin: "1.33"\n    kubernetesMax: "1.38"\n    upgradeFromMin: "1.13.0"\n`;

    expect(problemsOf(`${CLUSTERS}talosSupport:\n${row}${row}`)).toEqual([
      'talosSupport.1.talos: Talos 1.15 is listed twice: keep one row per minor',
    ]);
  });
});
