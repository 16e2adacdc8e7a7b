import { isIP } from 'node:net';
import type { Document } from 'yaml';

/** A JSON Schema node, as much of it as the key suggestions walk. */
export interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  additionalProperties?: SchemaNode | boolean;
  items?: SchemaNode;
  anyOf?: SchemaNode[];
  allOf?: SchemaNode[];
}

/** The keys the schema allows at `path` (cluster names and list indexes stepped over), or none when it is not an object there. */
export function knownKeysAt(schema: SchemaNode, path: readonly PropertyKey[]): string[] {
  let node: SchemaNode | undefined = schema;
  for (const segment of path) {
    if (node === undefined) return [];
    node = step(node, segment);
  }
  return node === undefined ? [] : keysOf(node);
}

function step(node: SchemaNode, segment: PropertyKey): SchemaNode | undefined {
  for (const branch of [...(node.anyOf ?? []), ...(node.allOf ?? [])]) {
    const found = step(branch, segment);
    if (found !== undefined) return found;
  }
  if (typeof segment === 'number') return node.items;
  const named = node.properties?.[String(segment)];
  if (named !== undefined) return named;
  return typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined;
}

function keysOf(node: SchemaNode): string[] {
  return [...Object.keys(node.properties ?? {}), ...[...(node.anyOf ?? []), ...(node.allOf ?? [])].flatMap(keysOf)];
}

/** Edit distance, for "did you mean": small keys, so the plain table is enough. */
function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length]!;
}

/** The fix for an unknown key: the known key it most likely misspells, else remove it. */
export function unknownKeyFix(key: string, known: readonly string[]): string {
  const lower = key.toLowerCase();
  const ranked = known
    .map((k) => ({ k, d: k.toLowerCase() === lower ? 0 : distance(lower, k.toLowerCase()) }))
    .filter((x) => x.d <= Math.max(1, Math.floor(key.length / 3)))
    .sort((a, b) => a.d - b.d);
  return ranked[0] === undefined
    ? 'remove it; the keys allowed here are in docs/configuring.md'
    : `did you mean ${ranked[0].k}? Otherwise remove it`;
}

/**
 * Keys a YAML mapping gives twice (a cluster or a field declared twice), one line each with its
 * place and fix. The parser keeps the last of them, so the rest of the file can still be checked.
 */
export function duplicateKeyProblems(doc: Document, text: string): string[] {
  return doc.errors
    .filter((e) => e.code === 'DUPLICATE_KEY')
    .map((e) => {
      const line = e.linePos?.[0].line;
      const key = /^\s*("[^"\n]*"|'[^'\n]*'|[^:#\n]+?)\s*:/.exec(text.slice(e.pos[0]))?.[1] ?? 'a key';
      const shown = JSON.stringify(key.replace(/^["']|["']$/g, '').slice(0, 60));
      return `line ${line ?? '?'}: ${shown} is given twice in the same mapping (a cluster or a field declared twice); keep one of them`;
    });
}

/** What the conflicts between clusters are read from: the raw file, so a cluster with other faults still counts. */
interface RawCluster {
  name: string;
  addresses: string[];
  channel: string | undefined;
  defaultForChannel: unknown;
}

const NAME = /^[a-z][a-z0-9-]{0,39}$/;
const CHANNEL = /^[CG][A-Z0-9]{2,}$/;

function rawClusters(raw: unknown): RawCluster[] {
  const clusters = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).clusters : undefined;
  if (typeof clusters !== 'object' || clusters === null || Array.isArray(clusters)) return [];
  return Object.entries(clusters as Record<string, unknown>).flatMap(([name, value]) => {
    // Only what the schema would accept is quoted back: a bad name or address is named on its own line.
    if (!NAME.test(name) || typeof value !== 'object' || value === null || Array.isArray(value)) return [];
    const c = value as Record<string, unknown>;
    const list = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && isIP(x) !== 0) : []);
    const channel = typeof c.channel === 'string' && CHANNEL.test(c.channel) ? c.channel : undefined;
    return [{ name, addresses: [...list(c.controlPlanes), ...list(c.workers)], channel, defaultForChannel: c.defaultForChannel }];
  });
}

/**
 * The conflicts between clusters: a node in two clusters, two defaults for one channel. Read
 * from the raw file, so they are named with every other problem of the same file, not only once
 * the rest is fixed.
 */
export function clusterConflicts(raw: unknown): string[] {
  const clusters = rawClusters(raw);
  const problems: string[] = [];
  const byAddress = new Map<string, string>();
  for (const c of clusters) {
    for (const address of new Set(c.addresses)) {
      const other = byAddress.get(address);
      if (other !== undefined && other !== c.name) {
        problems.push(
          `clusters.${c.name}: address ${address} also belongs to ${other}; a node belongs to one cluster, remove it from one of them`,
        );
      }
      if (other === undefined) byAddress.set(address, c.name);
    }
  }
  const defaults = new Map<string, string[]>();
  for (const c of clusters) {
    if (c.defaultForChannel === true && c.channel !== undefined) defaults.set(c.channel, [...(defaults.get(c.channel) ?? []), c.name]);
  }
  for (const [channel, names] of defaults) {
    if (names.length > 1) problems.push(`channel ${channel}: defaultForChannel is set on ${names.join(' and ')}; keep it on one`);
  }
  return problems;
}
