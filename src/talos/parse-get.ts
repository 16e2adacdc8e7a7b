import { z } from 'zod';
import { ParseError } from './parse-error.ts';
import { parseJsonStream } from './parse-json-stream.ts';

const SOURCE = 'talosctl get -o json';

/** Resource metadata as `talosctl get -o json` prints it; unknown keys are kept. */
export const GetMetadata = z.looseObject({
  namespace: z.string().optional(),
  type: z.string().optional(),
  id: z.string(),
  version: z.union([z.number(), z.string()]).optional(),
  phase: z.string().optional(),
});
export type GetMetadata = z.infer<typeof GetMetadata>;

const GetEnvelope = z.object({
  node: z.string().optional(),
  metadata: GetMetadata,
  spec: z.unknown(),
  event: z.string().optional(),
});

/** One resource from `talosctl get … -o json`. */
export interface GetItem {
  /** The node that returned it; absent or empty with `--insecure`. */
  node?: string;
  metadata: GetMetadata;
  /** Resource-specific; validate it with the schema of the resource type. */
  spec: unknown;
  /** With `-w`: the watch event type. */
  event?: string;
}

/**
 * Parses `talosctl get <resource> -o json`: concatenated, indented JSON objects (not an array),
 * each with `node`, `metadata` and `spec`.
 *
 * @throws {ParseError} on empty output, invalid or truncated JSON, or an object without metadata
 */
export function parseGetJson(stdout: string): GetItem[] {
  return parseJsonStream(stdout, SOURCE).map((value) => {
    const parsed = GetEnvelope.safeParse(value);
    if (!parsed.success) throw new ParseError(SOURCE, 'an object lacks metadata.id', JSON.stringify(value));
    const { node, metadata, spec, event } = parsed.data;
    const item: GetItem = { metadata, spec };
    if (node !== undefined && node !== '') item.node = node;
    if (event !== undefined) item.event = event;
    return item;
  });
}

const ExtensionSpec = z.object({
  image: z.string().optional(),
  metadata: z.object({ name: z.string(), version: z.string() }),
});

/** A system extension installed on a node. */
export interface ExtensionInfo {
  node: string | undefined;
  /** e.g. `iscsi-tools`. */
  name: string;
  version: string;
}

/** Image Factory nodes list their schematic as a pseudo-extension of this name. */
const SCHEMATIC_EXTENSION = 'schematic';

function extensionSpec(item: GetItem): z.infer<typeof ExtensionSpec> {
  const spec = ExtensionSpec.safeParse(item.spec);
  if (!spec.success) {
    throw new ParseError('talosctl get extensions -o json', 'an item has no spec.metadata name and version', JSON.stringify(item));
  }
  return spec.data;
}

/**
 * The system extensions in `talosctl get extensions -o json` items, without the `schematic`
 * pseudo-extension (see {@link schematicsFromGet}).
 *
 * @throws {ParseError} when an item is not an extension status
 */
export function extensionsFromGet(items: GetItem[]): ExtensionInfo[] {
  return items
    .map((item) => ({ node: item.node, ...extensionSpec(item).metadata }))
    .filter((ext) => ext.name !== SCHEMATIC_EXTENSION)
    .map(({ node, name, version }) => ({ node, name, version }));
}

/**
 * Each node's Image Factory schematic ID, read from the `schematic` pseudo-extension that
 * factory-built nodes list. Nodes without one (not built by the factory) are absent.
 *
 * @throws {ParseError} when an item is not an extension status
 */
export function schematicsFromGet(items: GetItem[]): { node: string | undefined; schematic: string }[] {
  return items
    .map((item) => ({ node: item.node, metadata: extensionSpec(item).metadata }))
    .filter(({ metadata }) => metadata.name === SCHEMATIC_EXTENSION)
    .map(({ node, metadata }) => ({ node, schematic: metadata.version }));
}

const MachineStatusSpec = z.object({
  stage: z.string(),
  status: z.object({
    ready: z.boolean(),
    unmetConditions: z.array(z.object({ name: z.string(), reason: z.string().optional() })).nullish(),
  }),
});

/** A node's `machinestatus`: its lifecycle stage and readiness. */
export interface MachineStatusInfo {
  node: string | undefined;
  /** e.g. `running`, `booting`, `upgrading`, `rebooting`. */
  stage: string;
  ready: boolean;
  unmetConditions: { name: string; reason?: string }[];
}

/**
 * Reads `talosctl get machinestatus -o json` items.
 *
 * @throws {ParseError} when an item is not a machine status
 */
export function machineStatusesFromGet(items: GetItem[]): MachineStatusInfo[] {
  return items.map((item) => {
    const spec = MachineStatusSpec.safeParse(item.spec);
    if (!spec.success) {
      throw new ParseError('talosctl get machinestatus -o json', 'an item has no spec.stage and spec.status.ready', JSON.stringify(item));
    }
    return {
      node: item.node,
      stage: spec.data.stage,
      ready: spec.data.status.ready,
      unmetConditions: spec.data.status.unmetConditions ?? [],
    };
  });
}
