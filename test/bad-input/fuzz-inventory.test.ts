import { isIP } from 'node:net';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { ConfigError } from '../../src/config/config-error.ts';
import { parseInventory, type Inventory } from '../../src/config/inventory.ts';
import { VALID_INVENTORY } from './inventory-fixture.ts';

const RUNS = 500;

/** Keys of the inventory, prototype names, and odd ones. */
const key = fc.oneof(
  fc.constantFrom(
    'clusters',
    'production',
    'staging',
    'edge-1',
    'environment',
    'channel',
    'terraformDir',
    'controlPlanes',
    'workers',
    'installerPlatform',
  ),
  fc.constantFrom(
    'hostLabel',
    'snapshotDir',
    'operators',
    'approvers',
    'defaultForChannel',
    'kubernetesEndpoint',
    'longhornNodes',
    'longhorn',
    'fluxPath',
  ),
  fc.constantFrom('requireDistinctApprover', 'maintenanceWindows', 'allowOutsideWindows', 'start', 'durationMinutes', 'timeZone'),
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '<<',
    '',
    ' ',
    'Production',
    'prod\nuction',
    'pr\u043eduction',
  ),
  fc.string({ maxLength: 12 }),
);

/** Values an inventory holds, and values of the wrong kind. */
const leaf = fc.oneof(
  fc.constantFrom(
    'production',
    'staging',
    'C0MAINTPRD',
    '#maint',
    'U0ALICE',
    'S0SRE',
    'alice',
    'nocloud',
    'installer',
    '/srv/infra/terraform/production',
    'backups',
    '--force',
  ),
  fc.constantFrom(
    '10.0.30.11',
    '10.0.30.12',
    'fd00::11',
    '10.0.30.11 --force',
    '$(id)',
    '10.0.30.11\n10.0.30.12',
    '999.1.1.1',
    '0 22 * * 2',
    'Europe/Berlin',
    'Mars/Olympus',
  ),
  fc.ipV4(),
  fc.string({ maxLength: 20 }),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
);

/** Nested mappings and lists of those: what a YAML file of any shape parses to. */
const { tree } = fc.letrec<{ tree: unknown }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.array(tie('tree'), { maxLength: 4 }),
    fc.dictionary(key, tie('tree'), { maxKeys: 6 }),
  ),
}));

const VALID = parseYaml(VALID_INVENTORY) as { clusters: Record<string, Record<string, unknown>> };

/** One change to the valid inventory: a field dropped, retyped or replaced, a cluster copied or renamed. */
type Edit =
  | { kind: 'drop'; cluster: string; field: string }
  | { kind: 'set'; cluster: string; field: string; value: unknown }
  | { kind: 'copy'; cluster: string; as: string };
const edit: fc.Arbitrary<Edit> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), cluster: fc.constantFrom('production', 'staging'), field: key }),
  fc.record({ kind: fc.constant('set' as const), cluster: fc.constantFrom('production', 'staging'), field: key, value: tree }),
  fc.record({ kind: fc.constant('copy' as const), cluster: fc.constantFrom('production', 'staging'), as: key }),
);

function applyEdits(edits: Edit[]): unknown {
  const doc = structuredClone(VALID);
  for (const e of edits) {
    const cluster = doc.clusters[e.cluster];
    if (cluster === undefined) continue;
    if (e.kind === 'drop') delete cluster[e.field];
    if (e.kind === 'set') Object.defineProperty(cluster, e.field, { value: e.value, enumerable: true, writable: true, configurable: true });
    if (e.kind === 'copy')
      Object.defineProperty(doc.clusters, e.as, { value: structuredClone(cluster), enumerable: true, writable: true, configurable: true });
  }
  return doc;
}

function attempt(text: string): { ok: true; inventory: Inventory } | { ok: false; error: unknown } {
  try {
    return { ok: true, inventory: parseInventory(text, 'fuzz.yaml') };
  } catch (error) {
    return { ok: false, error };
  }
}

/** A refusal is a ConfigError naming the file, one short line per problem. */
function expectCleanRefusal(error: unknown): void {
  expect(error).toBeInstanceOf(ConfigError);
  const { message, problems } = error as ConfigError;
  expect(message.startsWith('The cluster inventory fuzz.yaml is invalid:\n')).toBe(true);
  expect(problems.length).toBeGreaterThan(0);
  for (const problem of problems) {
    expect(problem).not.toContain('\n');
    expect(problem.length).toBeLessThan(400);
  }
}

/** What every accepted inventory guarantees the rest of the bot. */
function expectSound(inventory: Inventory): void {
  expect(inventory.clusters.length).toBeGreaterThan(0);
  const owners = new Map<string, string>();
  for (const c of inventory.clusters) {
    expect(c.name).toMatch(/^[a-z][a-z0-9-]{0,39}$/);
    expect(c.channel).toMatch(/^[CG][A-Z0-9]{2,}$/);
    // Node lists are optional; a list given is never empty of control planes.
    expect(c.declared?.controlPlanes === undefined || c.declared.controlPlanes.length > 0).toBe(true);
    expect(c.controlPlanes).toEqual(c.declared?.controlPlanes ?? []);
    for (const address of [...c.controlPlanes, ...c.workers]) {
      expect(isIP(address)).not.toBe(0);
      expect(owners.get(address)).toBeUndefined();
      owners.set(address, c.name);
    }
    // eslint-disable-next-line no-control-regex
    for (const path of [c.terraformDir, c.snapshotDir]) expect(path).toMatch(/^\/[^\u0000-\u001f\u007f]*$/);
    expect(c.operators.length).toBeGreaterThan(0);
    expect(c.approvers.length).toBeGreaterThan(0);
  }
}

function expectInventoryOrRefusal(text: string): void {
  const result = attempt(text);
  if (result.ok) expectSound(result.inventory);
  else expectCleanRefusal(result.error);
}

describe('parseInventory under fuzzing', () => {
  it('accepts the valid inventory the edits start from', () => {
    expect(attempt(VALID_INVENTORY)).toMatchObject({ ok: true });
  });

  it('answers arbitrary text with an inventory or a ConfigError, nothing else', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ unit: 'binary', maxLength: 300 }), fc.string({ maxLength: 200 })), expectInventoryOrRefusal),
      { numRuns: RUNS },
    );
  });

  it('answers YAML of any shape with a sound inventory or a ConfigError of short lines', () => {
    fc.assert(
      fc.property(tree, (doc) => expectInventoryOrRefusal(stringify(doc))),
      { numRuns: RUNS },
    );
  });

  it('answers YAML with a clusters mapping of any shape the same way', () => {
    fc.assert(
      fc.property(fc.dictionary(key, tree, { maxKeys: 4 }), (clusters) => expectInventoryOrRefusal(stringify({ clusters }))),
      { numRuns: RUNS },
    );
  });

  it('answers edits of the valid inventory (fields dropped, retyped, clusters copied) the same way', () => {
    fc.assert(
      fc.property(fc.array(edit, { minLength: 1, maxLength: 4 }), (edits) => expectInventoryOrRefusal(stringify(applyEdits(edits)))),
      { numRuns: RUNS },
    );
  });
});
