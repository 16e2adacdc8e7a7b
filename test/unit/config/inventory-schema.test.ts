import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { declaredWindows } from '../../../src/config/maintenance-window.ts';
import { parse as parseYaml } from 'yaml';
import { parseInventory, renderInventorySchema } from '../../../src/config/inventory.ts';
import { knownKeysAt, type SchemaNode } from '../../../src/config/inventory-problems.ts';

const ROOT = join(import.meta.dirname, '..', '..', '..');
const SCHEMA_FILE = join(ROOT, 'docs', 'inventory.schema.json');
const EXAMPLE = join(ROOT, 'manifests', 'base', 'clusters.example.yaml');

/** Every key path of a YAML value, cluster names and list indexes included. */
function keyPaths(value: unknown, path: PropertyKey[] = []): PropertyKey[][] {
  if (Array.isArray(value)) return value.flatMap((item, i) => keyPaths(item, [...path, i]));
  if (value === null || typeof value !== 'object') return [];
  return Object.entries(value).flatMap(([key, item]) => [[...path, key], ...keyPaths(item, [...path, key])]);
}

describe('docs/inventory.schema.json', () => {
  it('is what `npm run docs:schema` writes from the inventory schema today', () => {
    expect(readFileSync(SCHEMA_FILE, 'utf8'), 'docs/inventory.schema.json is stale: run `npm run docs:schema` and commit it').toBe(
      renderInventorySchema(),
    );
  });

  it('knows every key of the example inventory, and the example names it for editors', () => {
    // Arrange
    const text = readFileSync(EXAMPLE, 'utf8');
    const schema = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as SchemaNode & { required?: string[] };

    // Act
    const line = /^# yaml-language-server: \$schema=(\S+)$/m.exec(text);
    const unknown = keyPaths(parseYaml(text))
      .filter((path) => typeof path.at(-1) === 'string' && !(path.length === 2 && path[0] === 'clusters'))
      .filter((path) => !knownKeysAt(schema, path.slice(0, -1)).includes(path.at(-1) as string));

    // Assert
    expect(line).not.toBeNull();
    expect(existsSync(resolve(dirname(EXAMPLE), line![1]!))).toBe(true);
    expect(unknown).toEqual([]);
    expect(schema.required).toEqual(['clusters']);
  });

  it('describes every field with its effect, so an editor shows what a key does', () => {
    // Arrange
    interface Node {
      description?: string;
      properties?: Record<string, Node>;
      items?: Node;
      additionalProperties?: Node | boolean;
      anyOf?: Node[];
    }
    const schema = JSON.parse(renderInventorySchema()) as Node;
    const undescribed: string[] = [];
    const descriptions = new Map<string, string>();
    const walk = (node: Node | boolean | undefined, path: string): void => {
      if (node === undefined || typeof node === 'boolean') return;
      for (const [key, child] of Object.entries(node.properties ?? {})) {
        if (child.description === undefined) undescribed.push(`${path}${key}`);
        else descriptions.set(`${path}${key}`, child.description);
        walk(child, `${path}${key}.`);
      }
      walk(node.items, path);
      walk(node.additionalProperties, path);
      for (const option of node.anyOf ?? []) walk(option, path);
    };

    // Act
    walk(schema, '');

    // Assert
    expect(undescribed).toEqual([]);
    expect(descriptions.size).toBeGreaterThan(40);
    expect(descriptions.get('clusters.hostLabel')).toContain('label naming the physical (Proxmox) host');
    expect(descriptions.get('clusters.hostLabel')).toContain('fails the gate');
    expect(descriptions.get('clusters.nodeNames')).toContain('commands take that name');
    expect(descriptions.get('clusters.snapshotDir')).toContain('creates it (mode 0700)');
    expect(descriptions.get('clusters.channel')).toContain('#maint-production');
    expect(descriptions.get('clusters.operators')).toContain('@handles');
  });

  it('marks the old spelling of a schedule zone deprecated and offers timeZone beside it', () => {
    const snapshot = knownKeysAt(JSON.parse(renderInventorySchema()) as SchemaNode, ['clusters', 'x', 'schedules', 'snapshot']);
    expect(snapshot).toEqual(expect.arrayContaining(['timeZone', 'timezone', 'cron']));
    expect(renderInventorySchema()).toMatch(/"timezone": \{[^}]*"deprecated": true/);
  });
});

describe('the example inventory', () => {
  it('declares maintenance windows and schedules, every zone spelled timeZone, and the bot reads them as written', () => {
    // Act
    const text = readFileSync(EXAMPLE, 'utf8');
    const { clusters } = parseInventory(text, 'clusters.example.yaml');

    // Assert
    expect(text).not.toMatch(/\btimezone\b|\btz\b/);
    const production = clusters.find((c) => c.name === 'production')!;
    expect(declaredWindows(production.maintenanceWindows).map((w) => w.timeZone)).toEqual(['Europe/Berlin', 'Europe/Berlin']);
    expect(production.schedules?.healthGate?.timeZone).toBe('Europe/Berlin');
    expect(production.schedules?.snapshot).toMatchObject({ timeZone: 'UTC', keepLast: 48 });
    expect(clusters.every((c) => c.schedules !== undefined && c.deprecatedKeys === undefined)).toBe(true);
  });
});
