/**
 * `tofu state list` and the `-replace=<address>` option of `tofu plan`/`apply`, as OpenTofu
 * v1.12.6 handles them (reference/node-replacement.md).
 */
import type { ExecIO } from './exec-io.ts';
import { diagnostic } from './tofu-render.ts';
import type { ResourceInstance, SimCluster } from './types.ts';

/** `type.name`, `type.name["key"]` or `type.name[0]`; `data.` resources are parsed to be refused. */
const ADDRESS = /^(data\.)?([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_-]*)(?:\[("(?:[^"\\]|\\.)*"|[0-9]+)\])?$/;

interface ParsedAddress {
  type: string;
  name: string;
  /** A for_each key, a count index, or undefined for an address without an instance key. */
  key?: string | number;
  /** The address as tofu prints it (`addrs.AbsResourceInstance.String`). */
  canonical: string;
}

function parseAddress(raw: string): ParsedAddress | { error: string } {
  const m = ADDRESS.exec(raw);
  if (!m) {
    // addrs.ParseAbsResourceInstance: the wording of hcl's or addrs' detail is not reproduced word for word.
    return {
      error: raw.includes('.') ? 'Invalid resource instance address.' : 'Resource specification must include a resource type and name.',
    };
  }
  if (m[1]) return { error: 'Only managed resources can be used with the -replace=... option.' };
  const [, , type = '', name = '', rawKey] = m;
  const key = rawKey === undefined ? undefined : rawKey.startsWith('"') ? (JSON.parse(rawKey) as string) : Number(rawKey);
  const suffix = key === undefined ? '' : typeof key === 'number' ? `[${key}]` : `[${JSON.stringify(key)}]`;
  return { type, name, ...(key === undefined ? {} : { key }), canonical: `${type}.${name}${suffix}` };
}

/** Every `-replace=` value, in order (the flag repeats: flags.FlagStringSlice). */
export function replaceFlags(args: readonly string[]): string[] {
  return args.filter((a) => /^--?replace=/.test(a)).map((a) => a.slice(a.indexOf('=') + 1));
}

export interface ReplaceRequest {
  /** Canonical instance addresses to force-replace. */
  addresses: string[];
  /** Error diagnostics (stderr, exit 1): arguments/extended.go `Invalid force-replace address`. */
  errors: string;
  /** Warning diagnostics: node_resource_plan.go `Incompletely-matched force-replace resource instance`. */
  warnings: string;
}

/**
 * Validates the `-replace` addresses against the configuration's instances (`desired`). An address
 * naming an instance key that exists nowhere is silently ignored (nothing in v1.12.6 reports it):
 * the plan simply replaces nothing for it.
 */
export function replaceRequest(raws: readonly string[], desired: Record<string, ResourceInstance>): ReplaceRequest {
  const addresses: string[] = [];
  let errors = '';
  let warnings = '';
  for (const raw of raws) {
    const parsed = parseAddress(raw);
    if ('error' in parsed) {
      errors += diagnostic('Error', `Invalid force-replace address ${JSON.stringify(raw)}`, parsed.error);
      continue;
    }
    addresses.push(parsed.canonical);
    if (parsed.key !== undefined) continue;
    const instances = sortInstances(Object.values(desired).filter((r) => r.type === parsed.type && r.name === parsed.name));
    const keyed = instances.length !== 1 || instances[0]?.index !== undefined;
    if (!keyed) continue;
    const summary = 'Incompletely-matched force-replace resource instance';
    if (instances.length === 0)
      warnings += diagnostic(
        'Warning',
        summary,
        `Your force-replace request for ${parsed.canonical} doesn't match any resource instances because this resource doesn't have any instances.`,
      );
    else if (instances.length === 1)
      warnings += diagnostic(
        'Warning',
        summary,
        `Your force-replace request for ${parsed.canonical} doesn't match any resource instances because it lacks an instance key.\n\nTo force replacement of the single declared instance, use the following option instead:\n  -replace=${JSON.stringify(instances[0]!.address)}`,
      );
    else
      warnings += diagnostic(
        'Warning',
        summary,
        `Your force-replace request for ${parsed.canonical} doesn't match any resource instances because it lacks an instance key.\n\nTo force replacement of particular instances, use one or more of the following options instead:${instances.map((r) => `\n  -replace=${JSON.stringify(r.address)}`).join('')}`,
      );
  }
  return { addresses, errors, warnings };
}

/** addrs.AbsResourceInstance.Less: by resource type, name, then instance key. */
function sortInstances(list: ResourceInstance[]): ResourceInstance[] {
  const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  return [...list].sort((a, b) => cmp(a.type, b.type) || cmp(a.name, b.name) || cmp(a.index ?? '', b.index ?? ''));
}

/**
 * `tofu state list [address...]` (internal/command/state_list.go v1.12.6): one instance address
 * per line, sorted; arguments filter by resource (`type.name`) or instance address.
 */
export function stateList(cluster: SimCluster | undefined, args: readonly string[], io: ExecIO): number {
  if (!cluster) {
    io.err(
      diagnostic(
        'Error',
        'No state file was found',
        'State management commands require a state file. Run this command in a directory where OpenTofu has been run or use the -state flag to point the command to a specific state location.',
      ),
    );
    return 1;
  }
  let instances = sortInstances(Object.values(cluster.terraform.state.resources));
  if (args.length > 0) {
    const wanted = args.map((a) => parseAddress(a));
    const bad = args.find((_, i) => 'error' in wanted[i]!);
    if (bad !== undefined) {
      io.err(
        diagnostic(
          'Error',
          `Error parsing instance address: ${bad}`,
          'This command requires that the address references one specific instance.',
        ),
      );
      return 1;
    }
    instances = instances.filter((r) =>
      wanted.some((w) => !('error' in w) && (w.key === undefined ? r.type === w.type && r.name === w.name : r.address === w.canonical)),
    );
  }
  io.out(instances.map((r) => `${r.address}\n`).join(''));
  return 0;
}
