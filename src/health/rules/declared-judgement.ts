import semver from 'semver';
import {
  declarationOf,
  KIND_WORDS,
  sourceWords,
  VERSION_KINDS,
  type DeclaredSource,
  type DeclaredVersions,
  type VersionKind,
} from '../../tofu/declared-versions.ts';

/** What one node runs of a kind (by its address or name), or why it is unknown. */
export type RunningVersion = string | { unknown: string };

/** What every node runs: Talos from `talosctl version`, Kubernetes from its Node's kubeletVersion. */
export type RunningVersions = Record<VersionKind, Map<string, RunningVersion>>;

/** How one declared version compares with what runs. */
export type VersionJudgement =
  /** The bot could not read the declared version: the rules that need it are off. */
  | { kind: VersionKind; state: 'off'; why: string }
  /** Some node's version is unknown, so no comparison is made. */
  | { kind: VersionKind; state: 'unknown'; declared: string; why: string[] }
  | { kind: VersionKind; state: 'match'; declared: string }
  | {
      kind: VersionKind;
      state: 'drift';
      declared: string;
      source: DeclaredSource;
      /** Nodes that run a newer version than declared, with it. */
      newer: string[];
      /** Nodes that run an older version than declared, with it. */
      older: string[];
      /** The highest version a node runs. */
      highest: string;
      /** Every node runs one version: the declaration that clears the drift. */
      declaration?: string;
    };

const withV = (version: string): string => (version.startsWith('v') ? version : `v${version}`);
const compare = (a: string, b: string): number => semver.compare(withV(a).slice(1), withV(b).slice(1));

/** Compares each declared version with what every node runs. */
export function judgeDeclared(declared: DeclaredVersions, running: RunningVersions): VersionJudgement[] {
  return VERSION_KINDS.map((kind): VersionJudgement => {
    const d = declared[kind];
    if ('off' in d) return { kind, state: 'off', why: d.off };
    const nodes = [...running[kind]];
    const unknown = nodes.flatMap(([node, v]) => (typeof v === 'string' ? [] : [`${node}: ${v.unknown}`]));
    if (nodes.length === 0) unknown.push(`no node's ${KIND_WORDS[kind]} version was read`);
    if (unknown.length > 0) return { kind, state: 'unknown', declared: d.version, why: unknown };
    const known = nodes.map(([node, v]) => ({ node, version: withV(v as string) }));
    const newer = known.filter((n) => compare(n.version, d.version) > 0).map((n) => `${n.node} runs ${n.version}`);
    const older = known.filter((n) => compare(n.version, d.version) < 0).map((n) => `${n.node} runs ${n.version}`);
    if (newer.length === 0 && older.length === 0) return { kind, state: 'match', declared: d.version };
    const versions = [...new Set(known.map((n) => n.version))].sort(compare);
    const highest = versions[versions.length - 1]!;
    return {
      kind,
      state: 'drift',
      declared: d.version,
      source: d.source,
      newer,
      older,
      highest,
      ...(versions.length === 1 ? { declaration: declarationOf(d.source, highest) } : {}),
    };
  });
}

export const UPGRADE_WORDS: Record<VersionKind, string> = { talos: 'talos', kubernetes: 'k8s' };

/** What drift means and the exact change that clears it, for the gate, the status and the scheduled gate. */
export function driftWords(j: Extract<VersionJudgement, { state: 'drift' }>): { summary: string; evidence: string[]; fix: string } {
  const what = KIND_WORDS[j.kind];
  const summary = `Terraform declares ${what} ${j.declared} (${sourceWords(j.source)}), but ${[...j.newer, ...j.older].length} node(s) run another version (highest ${j.highest})`;
  const fix =
    j.declaration !== undefined
      ? `make the Terraform change \`${j.declaration}\`, commit it and run \`/talos plan\``
      : `finish the upgrade (\`/talos upgrade ${UPGRADE_WORDS[j.kind]} ${j.highest}\`), then make the Terraform change \`${declarationOf(j.source, j.highest)}\``;
  return { summary, evidence: [...j.newer, ...j.older], fix };
}
