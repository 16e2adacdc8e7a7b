import { parseInventory, type Inventory } from '../../src/config/inventory.ts';

/** The production estate most tests share: three control planes, and no workers declared. */
export const PRODUCTION_CONTROL_PLANES = ['10.0.30.11', '10.0.30.12', '10.0.30.13'] as const;
/** Staging's three control planes. */
export const STAGING_CONTROL_PLANES = ['10.0.20.11', '10.0.20.12', '10.0.20.13'] as const;

/** A field of a cluster, as YAML: a list is written inline (`[a, b]`), a string as it is (inline YAML is allowed). */
export type FieldValue = string | number | boolean | readonly string[];

const DEFAULTS: Record<string, Record<string, FieldValue>> = {
  production: {
    environment: 'production',
    channel: 'C0MAINTPRD',
    terraformDir: '/srv/infra/terraform/production',
    controlPlanes: PRODUCTION_CONTROL_PLANES,
    installerPlatform: 'nocloud',
    hostLabel: 'example.org/proxmox-host',
    snapshotDir: '/var/backups/talos-etcd',
    operators: ['U0ALICE', 'U0BOB'],
    approvers: ['U0CAROL', 'U0DAVE'],
    // Production takes no change without a declared window: tests not about windows take it at any time.
    maintenanceWindows: 'always',
  },
  staging: {
    environment: 'staging',
    channel: 'C0MAINTSTG',
    terraformDir: '/srv/infra/terraform/staging',
    controlPlanes: STAGING_CONTROL_PLANES,
    installerPlatform: 'nocloud',
    hostLabel: 'example.org/proxmox-host',
    snapshotDir: '/var/backups/talos-etcd-staging',
    operators: ['U0ALICE', 'U0BOB'],
    approvers: ['U0ALICE', 'U0CAROL', 'U0DAVE', 'U0ERIN'],
  },
};

const yamlValue = (value: FieldValue): string => (Array.isArray(value) ? `[${value.join(', ')}]` : String(value));

/**
 * One cluster of an inventory as YAML, indented as under `clusters:`. `production` and `staging` start
 * from the shared estates above; any other name starts empty. A field set to `undefined` is left out.
 */
export function clusterYaml(name: string, fields: Record<string, FieldValue | undefined> = {}): string {
  const merged: Record<string, FieldValue | undefined> = { ...DEFAULTS[name], ...fields };
  const lines = Object.entries(merged)
    .filter((entry): entry is [string, FieldValue] => entry[1] !== undefined)
    .map(([key, value]) => `    ${key}: ${yamlValue(value)}`);
  return `  ${name}:\n${lines.join('\n')}\n`;
}

/** An inventory file's text with the given clusters (each from `clusterYaml`'s defaults plus its fields). */
export function inventoryYaml(clusters: Record<string, Record<string, FieldValue | undefined>> = { production: {} }): string {
  return `clusters:\n${Object.entries(clusters)
    .map(([name, fields]) => clusterYaml(name, fields))
    .join('')}`;
}

/** The parsed inventory of `inventoryYaml(clusters)`. */
export function inventoryOf(clusters: Record<string, Record<string, FieldValue | undefined>> = { production: {} }): Inventory {
  return parseInventory(inventoryYaml(clusters), 'test-inventory.yaml');
}
