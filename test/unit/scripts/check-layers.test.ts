import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ALLOWED, checkLayers, withLayerOverrides, type Override } from '../../../scripts/check-layers.ts';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'check-layers-test-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Writes a fixture tree: repository path → file text. */
function tree(files: Record<string, string>): void {
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
}

/** The patterns of an override's `no-restricted-imports`; none where it turns the rule off. */
function patterns(override: Override): { group: string[]; message: string }[] {
  const rule = override.rules['no-restricted-imports'];
  return Array.isArray(rule) ? (rule[1] as { patterns: { group: string[]; message: string }[] }).patterns : [];
}

/** A tree whose every import runs down the layers: config < rules < messages < engine < playbooks < handlers < main. */
const CLEAN = {
  'src/config/inventory.ts': 'export const inventory = 1;\n',
  'src/errors.ts': 'export class OpsError extends Error {}\n',
  'src/rules/window.ts':
    "import { inventory } from '../config/inventory.ts';\nimport { OpsError } from '../errors.ts';\nexport const window = [inventory, OpsError];\n",
  'src/chat/blocks.ts': "import type { window } from '../rules/window.ts';\nexport type Shown = typeof window;\nexport const blocks = 1;\n",
  'jobs/engine/walk.ts': "export { blocks } from '../../src/chat/blocks.ts';\n",
  'jobs/playbooks/upgrade.ts': "import {\n  blocks,\n} from '../engine/walk.ts';\nexport const upgrade = blocks;\n",
  'handlers/upgrade.ts': "export const load = () => import('../jobs/playbooks/upgrade.ts');\n",
  'src/main.ts': "import './config/inventory.ts';\nimport { load } from '../handlers/upgrade.ts';\nvoid load;\n",
};

/** Two playbooks that share a step through shared/, each with its own texts, and the registry that gathers them. */
const PEERS = {
  'jobs/playbooks/shared/snapshot-step.ts': "import { blocks } from '../../engine/walk.ts';\nexport const snapshotStep = blocks;\n",
  'jobs/playbooks/talos-upgrade/texts.ts': 'export const label = 1;\n',
  'jobs/playbooks/talos-upgrade/index.ts':
    "import { label } from './texts.ts';\nimport { snapshotStep } from '../shared/snapshot-step.ts';\nexport const upgrade = [label, snapshotStep];\n",
  'jobs/playbooks/node-replace/index.ts':
    "import { snapshotStep } from '../shared/snapshot-step.ts';\nexport const replace = snapshotStep;\n",
  'jobs/playbooks/index.ts':
    "import { upgrade } from './talos-upgrade/index.ts';\nimport { replace } from './node-replace/index.ts';\nexport const playbooks = [upgrade, replace];\n",
};

describe('checkLayers', () => {
  it('passes a tree whose imports all run down the layers', () => {
    // Arrange
    tree(CLEAN);

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual([]);
  });

  it('fails an import back up the layers, in any of its forms', () => {
    // Arrange: a rule that formats with a presenter, and an engine file that re-exports a playbook.
    tree({
      ...CLEAN,
      'src/rules/refusal.ts': "import {\n  blocks,\n} from '../chat/blocks.ts';\nexport const refusal = blocks;\n",
      'jobs/engine/kinds.ts': "export * from '../playbooks/upgrade.ts';\n",
      'src/config/lazy.ts': "export const later = () => import('../rules/window.ts');\n",
    });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual(
      expect.arrayContaining([
        'back-up import: src/rules/refusal.ts (rules) imports src/chat/blocks.ts (messages)',
        'back-up import: jobs/engine/kinds.ts (engine) imports jobs/playbooks/upgrade.ts (playbooks)',
        'back-up import: src/config/lazy.ts (config) imports src/rules/window.ts (rules)',
      ]),
    );
    expect(problems.filter((p) => p.startsWith('back-up import'))).toHaveLength(3);
  });

  it('fails a cycle between two folders of the same layer, naming an import for each step', () => {
    // Arrange: kube and talos are both adapters, so neither import runs up; together they are a cycle.
    tree({
      ...CLEAN,
      'src/kube/kube-api.ts': "import type { Talosctl } from '../talos/talosctl.ts';\nexport type Kube = Talosctl;\n",
      'src/talos/talosctl.ts': "import type { Kube } from '../kube/kube-api.ts';\nexport type Talosctl = { kube?: Kube };\n",
    });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual([
      'folder cycle: src/kube → src/talos → src/kube (src/kube/kube-api.ts imports src/talos/talosctl.ts; src/talos/talosctl.ts imports src/kube/kube-api.ts)',
    ]);
  });

  it('lets an allowed import through, and fails an allowed import that no longer runs up', () => {
    // Arrange
    tree({ ...CLEAN, 'src/rules/refusal.ts': "import { blocks } from '../chat/blocks.ts';\nexport const refusal = blocks;\n" });
    const allowed = [
      { from: 'src/rules/refusal.ts', to: 'src/chat/blocks.ts' },
      { from: 'src/rules/window.ts', to: 'src/config/inventory.ts' },
    ];

    // Act
    const problems = checkLayers({ root, allowed });

    // Assert
    expect(problems).toEqual([
      'allowed import src/rules/window.ts → src/config/inventory.ts no longer runs up the layers or closes a folder cycle: remove it from ALLOWED',
    ]);
  });

  it('passes playbooks that import only their own folder, shared/ and the layers below, gathered by the registry', () => {
    // Arrange
    tree({ ...CLEAN, ...PEERS });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual([]);
  });

  it('fails a playbook that imports another, shared/ that imports a playbook, and any file but the registry that gathers them', () => {
    // Arrange: the replacement borrows the upgrade's texts, shared/ the upgrade's label, a second registry the playbooks,
    // and the upgrade reaches back into the registry.
    tree({
      ...CLEAN,
      ...PEERS,
      'jobs/playbooks/node-replace/texts.ts': "import { label } from '../talos-upgrade/texts.ts';\nexport const texts = label;\n",
      'jobs/playbooks/shared/progress.ts': "import { label } from '../talos-upgrade/texts.ts';\nexport const progress = label;\n",
      'jobs/playbooks/kinds.ts': "export { replace } from './node-replace/index.ts';\n",
      'jobs/playbooks/talos-upgrade/others.ts': "import { playbooks } from '../index.ts';\nexport const others = playbooks;\n",
    });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual(
      expect.arrayContaining([
        'playbook import: jobs/playbooks/kinds.ts imports jobs/playbooks/node-replace/index.ts: only jobs/playbooks/index.ts, the registry, imports the playbooks: import the registry',
        'playbook import: jobs/playbooks/node-replace/texts.ts imports jobs/playbooks/talos-upgrade/texts.ts: a playbook imports only its own folder, jobs/playbooks/shared/ and the layers below: move what both use to jobs/playbooks/shared/',
        'playbook import: jobs/playbooks/shared/progress.ts imports jobs/playbooks/talos-upgrade/texts.ts: jobs/playbooks/shared/ imports no playbook: move what it needs into jobs/playbooks/shared/ as well, or take it as an argument',
        'playbook import: jobs/playbooks/talos-upgrade/others.ts imports jobs/playbooks/index.ts: a playbook imports only its own folder, jobs/playbooks/shared/ and the layers below: move what both use to jobs/playbooks/shared/',
      ]),
    );
    expect(problems).toHaveLength(4);
  });

  it('fails a file that belongs to no layer', () => {
    // Arrange
    tree({ ...CLEAN, 'src/extra/thing.ts': 'export const thing = 1;\n' });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert
    expect(problems).toEqual(['src/extra/thing.ts belongs to no layer: add its folder to LAYERS in scripts/check-layers.ts']);
  });

  it('fails a playbook file that writes an operation, queues a job or takes the lock, naming the line', () => {
    // Arrange: a step that writes its operation around ctx.record, and one that queues a job and takes the lock.
    tree({
      ...CLEAN,
      'jobs/playbooks/writes.ts':
        "export async function step(ctx) {\n  await ctx.deps.store.update('op-1', (o) => ({ ...o, state: 'completed' }));\n}\n",
      'jobs/playbooks/queues.ts':
        "export async function step(deps) {\n  await deps.opsQueue.add('x', {});\n  await deps.lock.acquire('c', 'op');\n}\n",
      'jobs/playbooks/records.ts':
        "export async function step(ctx) {\n  await ctx.record({ notes: [] });\n  await ctx.deps.store.get('op-1');\n}\n",
    });

    // Act
    const problems = checkLayers({ root, allowed: [] });

    // Assert: the read and the record pass.
    expect(problems).toEqual([
      'jobs/playbooks/queues.ts:2 reaches the job queue: only the engine may',
      'jobs/playbooks/queues.ts:3 takes or releases the cluster lock: only the engine may',
      'jobs/playbooks/writes.ts:2 writes an operation through the store (use ctx.record): only the engine may',
    ]);
  });

  it('passes the repository: no playbook file writes an operation, queues a job or takes the lock', () => {
    // Act
    const problems = checkLayers({ root: process.cwd(), allowed: ALLOWED });

    // Assert
    expect(problems.filter((p) => p.endsWith('only the engine may'))).toEqual([]);
  });

  it('fails a lint config whose layer overrides are not the generated ones', () => {
    // Arrange: the base config as the repository has it, with its layers generated, then one layer dropped.
    tree(CLEAN);
    const base = {
      rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/slack/**'], message: 'no Slack' }] }] },
      overrides: [],
    };
    const generated = withLayerOverrides(base, []);
    writeFileSync(join(root, 'good.json'), JSON.stringify(generated));
    writeFileSync(join(root, 'stale.json'), JSON.stringify({ ...generated, overrides: generated.overrides.slice(1) }));

    // Act
    const good = checkLayers({ root, allowed: [], lintConfig: join(root, 'good.json') });
    const stale = checkLayers({ root, allowed: [], lintConfig: join(root, 'stale.json') });

    // Assert
    expect(good).toEqual([]);
    expect(stale).toEqual([
      'stale.json: its layer overrides are not the ones LAYERS and ALLOWED give: run `node scripts/check-layers.ts --write-lint`',
    ]);
  });
});

describe('withLayerOverrides', () => {
  it('forbids each layer the layers above it, keeping the base patterns where they apply', () => {
    // Arrange
    const base = {
      rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/slack/**'], message: 'no Slack' }] }] },
      overrides: [{ files: ['handlers/**'], rules: { 'no-restricted-imports': 'off' } }],
    };

    // Act
    const overrides = withLayerOverrides(base, []).overrides;

    // Assert
    const rules = patterns(overrides.find((o) => o.files.includes('src/rules/**'))!);
    expect(rules[0]!.group).toContain('**/chat/**');
    expect(rules[0]!.group).not.toContain('**/talos/**');
    expect(rules[1]).toEqual({ group: ['**/slack/**'], message: 'no Slack' });
    const handlers = patterns(overrides.find((o) => o.files.includes('handlers/**') && o.rules['no-restricted-imports'] !== 'off')!);
    expect(handlers).toHaveLength(1);
    expect(overrides.some((o) => o.files.includes('src/main.ts') && o.rules['no-restricted-imports'] !== 'off')).toBe(false);
  });

  it('leaves out a folder with an allowed back-up import', () => {
    // Act
    const overrides = withLayerOverrides({ rules: {}, overrides: [] }, [{ from: 'src/ops/audit.ts', to: 'src/chat/blocks.ts' }]).overrides;

    // Assert
    expect(overrides.flatMap((o) => o.files)).not.toContain('src/ops/**');
    expect(overrides.flatMap((o) => o.files)).toContain('src/queue/**');
  });
});
