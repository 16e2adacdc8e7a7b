import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder layers, lowest first: a file may import its own layer and the ones below it, never
 * one above. Rules and adapters return data, presenters format it, the engine runs operations,
 * playbooks drive the engine, handlers enqueue, and the composition root builds it all. This
 * list is the one place the order is written: `.oxlintrc.json`'s layer overrides are generated
 * from it (`--write-lint`) and checked against it on every `npm run lint`.
 */
export const LAYERS: readonly { name: string; paths: readonly string[] }[] = [
  { name: 'config', paths: ['src/config', 'src/errors.ts'] },
  { name: 'base', paths: ['src/log', 'src/exec', 'src/time', 'src/metrics'] },
  { name: 'adapters', paths: ['src/port', 'src/kube', 'src/talos', 'src/tofu', 'src/cluster', 'src/slack', 'src/http'] },
  { name: 'rules', paths: ['src/rules', 'src/health'] },
  { name: 'operations', paths: ['src/ops', 'src/queue'] },
  { name: 'messages', paths: ['src/chat', 'src/home'] },
  { name: 'engine', paths: ['jobs', 'jobs/engine'] },
  { name: 'playbooks', paths: ['jobs/playbooks'] },
  { name: 'handlers', paths: ['handlers'] },
  { name: 'main', paths: ['src/entry.ts', 'src/main.ts', 'src/shutdown.ts', 'src/bootstrap'] },
];

/** One import: the importing file and the file it imports, as repository paths. */
export interface Edge {
  from: string;
  to: string;
}

/**
 * Imports let through although they run back up the layers or close a cycle between folders:
 * none. An entry would be one exact file → file import, a debt to pay back by moving code; the
 * check fails on an entry that no longer does either, and a folder with an entry is left out of
 * the lint's layer overrides (oxlint cannot let one import through).
 */
export const ALLOWED: readonly Edge[] = [];

/** The folders whose files are checked; each of their files must belong to a layer. */
const ROOTS = ['src', 'handlers', 'jobs'];

/** `import … from`, `export … from`, `import '…'` and `import('…')`, each capturing the specifier. */
const IMPORT_PATTERNS = [
  /^\s*(?:import|export)\s+(?:type\s+)?(?:[\w$]+\s*,?\s*)?(?:\*\s*(?:as\s+[\w$]+\s*)?|\{[^}]*\}\s*)?from\s*['"]([^'"]+)['"]/gm,
  /^\s*import\s*['"]([^'"]+)['"]/gm,
  /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g,
];

/** The start of every layer override's message: how the check tells its overrides from the others in the lint config. */
const LINT_MESSAGE_PREFIX = 'Layer order (scripts/check-layers.ts)';

interface Unit {
  /** A path of {@link LAYERS}: a folder, or a single file. */
  path: string;
  layer: number;
}

const UNITS: Unit[] = LAYERS.flatMap((layer, index) => layer.paths.map((path) => ({ path, layer: index })));

/** The unit a path belongs to: the longest layer path that is it or contains it. */
function unitOf(path: string): Unit | undefined {
  let best: Unit | undefined;
  for (const unit of UNITS) {
    const inside = path === unit.path || path.startsWith(`${unit.path}/`);
    if (inside && (best === undefined || unit.path.length > best.path.length)) best = unit;
  }
  return best;
}

function sourceFiles(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') ? [path] : [];
  });
}

function posix(path: string): string {
  return path.split(sep).join('/');
}

/** Every relative import of the files under {@link ROOTS}, as repository paths, with the files themselves. */
function readImports(root: string): { files: string[]; edges: Edge[] } {
  const files = ROOTS.flatMap((dir) => sourceFiles(join(root, dir)));
  const edges = files.flatMap((file) => {
    const text = readFileSync(file, 'utf8');
    const specifiers = IMPORT_PATTERNS.flatMap((pattern) => [...text.matchAll(pattern)].map((m) => m[1]!));
    return (
      [...new Set(specifiers)]
        .filter((s) => s.startsWith('./') || s.startsWith('../'))
        .map((s) => ({ from: posix(relative(root, file)), to: posix(relative(root, resolve(dirname(file), s))) }))
        // Outside the checked folders (package.json, test support) is not a layer question.
        .filter((e) => ROOTS.some((dir) => e.to.startsWith(`${dir}/`)))
    );
  });
  return { files: files.map((f) => posix(relative(root, f))), edges };
}

function withLayer(path: string): string {
  const unit = unitOf(path);
  return unit === undefined ? path : `${path} (${LAYERS[unit.layer]!.name})`;
}

type FolderGraph = Map<string, Map<string, Edge>>;

/** The layer paths and which import which, each step with one import that makes it. */
function folderGraph(edges: Edge[]): FolderGraph {
  const graph = new Map<string, Map<string, Edge>>();
  for (const edge of edges) {
    const from = unitOf(edge.from)?.path;
    const to = unitOf(edge.to)?.path;
    if (from === undefined || to === undefined || from === to) continue;
    const out = graph.get(from) ?? new Map<string, Edge>();
    if (!out.has(to)) out.set(to, edge);
    graph.set(from, out);
  }
  return graph;
}

/** Tarjan's strongly connected components: a component of more than one folder holds a cycle. */
function folderComponents(graph: FolderGraph): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const components: string[][] = [];
  const connect = (node: string): void => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    for (const next of graph.get(node)?.keys() ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (stack.includes(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return components.filter((c) => c.length > 1);
}

/** Folder cycles: each set of folders that import one another in a ring, with one import for each step of it. */
function folderCycles(edges: Edge[]): string[] {
  const graph = folderGraph(edges);
  return folderComponents(graph).map((component) => {
    // The shortest way round from the component's first folder back to it, breadth first.
    const start = [...component].sort()[0]!;
    const cameFrom = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0 && !cameFrom.has(start)) {
      const node = queue.shift()!;
      for (const next of graph.get(node)?.keys() ?? []) {
        if (!component.includes(next) || cameFrom.has(next)) continue;
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
    const loop = [start];
    for (let node = cameFrom.get(start)!; node !== start; node = cameFrom.get(node)!) loop.unshift(node);
    loop.unshift(start);
    const steps = loop.slice(1).map((to, i) => graph.get(loop[i]!)!.get(to)!);
    return `folder cycle: ${loop.join(' → ')} (${steps.map((e) => `${e.from} imports ${e.to}`).join('; ')})`;
  });
}

/** The playbooks' folder: each folder in it is one playbook, a peer of the others, but `shared/`, which they all may use. */
const PLAYBOOKS = 'jobs/playbooks';
const SHARED = `${PLAYBOOKS}/shared`;
/** The registry: the one file that imports every playbook. */
const REGISTRY = `${PLAYBOOKS}/index.ts`;

/** The folder of jobs/playbooks a path lies in (`jobs/playbooks/<kind>` or `jobs/playbooks/shared`); none for a file directly in it. */
function playbookFolder(path: string): string | undefined {
  if (!path.startsWith(`${PLAYBOOKS}/`)) return undefined;
  const rest = path.slice(PLAYBOOKS.length + 1);
  return rest.includes('/') ? `${PLAYBOOKS}/${rest.slice(0, rest.indexOf('/'))}` : undefined;
}

/** Why a file of jobs/playbooks may not import `to`; none when it may. */
function peerRefusal(from: string, to: string): string | undefined {
  const fromFolder = playbookFolder(from);
  const toFolder = playbookFolder(to);
  const toPlaybook = toFolder !== undefined && toFolder !== SHARED;
  if (from === REGISTRY) return undefined;
  if (fromFolder === SHARED)
    return toPlaybook || to === REGISTRY
      ? `${SHARED}/ imports no playbook: move what it needs into ${SHARED}/ as well, or take it as an argument`
      : undefined;
  if (fromFolder === undefined)
    return toPlaybook ? `only ${REGISTRY}, the registry, imports the playbooks: import the registry` : undefined;
  return to === REGISTRY || (toPlaybook && toFolder !== fromFolder)
    ? `a playbook imports only its own folder, ${SHARED}/ and the layers below: move what both use to ${SHARED}/`
    : undefined;
}

/**
 * Playbooks are peers: a file of jobs/playbooks/<kind>/ imports its own folder, jobs/playbooks/shared/
 * and the layers below, never another playbook nor the registry; shared/ imports no playbook; and
 * the registry is the one file of jobs/playbooks that imports the playbooks. What two playbooks both
 * need lives in shared/. One line for each import that breaks it.
 */
function peerImports(edges: Edge[]): string[] {
  return edges.flatMap((e) => {
    const why = e.from.startsWith(`${PLAYBOOKS}/`) ? peerRefusal(e.from, e.to) : undefined;
    return why === undefined ? [] : [`playbook import: ${e.from} imports ${e.to}: ${why}`];
  });
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
/** An oxlint override: the files it applies to, and their rules. */
export type Override = { files: string[]; rules: Record<string, Json> };
type Pattern = { group: string[]; message: string };

/** How an import specifier names a layer path, as oxlint's gitignore-style patterns match it: by the folder's or file's name. */
function specifierPattern(path: string): string {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return name.endsWith('.ts') ? `**/${name}` : `**/${name}/**`;
}

function filesGlob(path: string): string {
  return path.endsWith('.ts') ? path : `${path}/**`;
}

/**
 * The lint's layer overrides: for each layer, its paths may not import the paths of the layers
 * above. Each override replaces the base `no-restricted-imports` options for its files, so it
 * carries the base patterns too wherever those apply (not where an override turns them off). A
 * path with an allowed back-up import, and the top layer, get none. The overrides go lowest layer
 * first, so where paths nest (jobs/playbooks in jobs) the higher layer's override wins.
 */
export function lintOverrides(config: { rules: Record<string, Json>; overrides?: Override[] }, allowed: readonly Edge[]): Override[] {
  const base = config.rules['no-restricted-imports'];
  const basePatterns = Array.isArray(base) ? ((base[1] as { patterns?: Pattern[] } | undefined)?.patterns ?? []) : [];
  const exempt = (config.overrides ?? []).filter((o) => o.rules['no-restricted-imports'] === 'off').flatMap((o) => o.files);
  const covered = (path: string): boolean =>
    exempt.some((glob) => glob === path || glob === filesGlob(path) || (glob.endsWith('/**') && path.startsWith(glob.slice(0, -2))));
  const waiting = new Set(
    allowed.filter((e) => (unitOf(e.to)?.layer ?? -1) > (unitOf(e.from)?.layer ?? -1)).map((e) => unitOf(e.from)?.path),
  );
  return LAYERS.slice(0, -1).flatMap((layer, index) => {
    const above = LAYERS.slice(index + 1);
    const paths = layer.paths.filter((path) => !waiting.has(path));
    const restriction = (those: string[]): Pattern => ({
      group: above.flatMap((l) => l.paths.map(specifierPattern)),
      message: `${LINT_MESSAGE_PREFIX}: ${those.join(', ')} ${those.length === 1 ? 'is' : 'are'} in the ${layer.name} layer and may not import ${above.map((l) => l.name).join(', ')}. Move the code down to a layer both may import, or the import up`,
    });
    // Paths under the base patterns, then the ones exempt from them (src/slack, handlers).
    return [paths.filter((p) => !covered(p)), paths.filter(covered)]
      .filter((those) => those.length > 0)
      .map((those) => ({
        files: those.map(filesGlob),
        rules: { 'no-restricted-imports': ['error', { patterns: [restriction(those), ...(covered(those[0]!) ? [] : basePatterns)] }] },
      }));
  });
}

function isLayerOverride(override: Override): boolean {
  const rule = override.rules['no-restricted-imports'];
  return (
    Array.isArray(rule) &&
    ((rule[1] as { patterns?: Pattern[] } | undefined)?.patterns ?? []).some((p) => p.message.startsWith(LINT_MESSAGE_PREFIX))
  );
}

/** The lint config with its layer overrides generated anew, after the other overrides. */
export function withLayerOverrides<T extends { rules: Record<string, Json>; overrides?: Override[] }>(
  config: T,
  allowed: readonly Edge[],
): Omit<T, 'overrides'> & { overrides: Override[] } {
  const others = (config.overrides ?? []).filter((o) => !isLayerOverride(o));
  return { ...config, overrides: [...others, ...lintOverrides({ ...config, overrides: others }, allowed)] };
}

/**
 * What no playbook file writes or takes: only the engine writes operations, takes and releases the
 * cluster lock and queues jobs. A playbook records its own fields through `ctx.record`, and the types
 * give it no write; this catches the write reached around them (an import of the store, a cast).
 */
const ENGINE_ONLY: readonly { pattern: RegExp; what: string }[] = [
  { pattern: /\bstore\s*\.\s*(?:update|create|sweep)\b/, what: 'writes an operation through the store (use ctx.record)' },
  { pattern: /\bopsQueue\b|\bOpsQueue\b|queue\/job-schemas\.ts/, what: 'reaches the job queue' },
  { pattern: /\block\s*\.\s*(?:acquire|release|transfer|holds)\b|ops\/cluster-lock\.ts/, what: 'takes or releases the cluster lock' },
  { pattern: /\brunLease\b|ops\/run-lease\.ts/, what: 'reaches the run lease' },
  { pattern: /ops\/operation-store\.ts|ops\/transitions\.ts/, what: 'imports the operation store or its state transitions' },
];

/** Each playbook file's line that does what only the engine does, one problem each. */
function engineOnlyProblems(root: string, files: readonly string[]): string[] {
  return files
    .filter((file) => file.startsWith('jobs/playbooks/'))
    .flatMap((file) =>
      readFileSync(join(root, file), 'utf8')
        .split('\n')
        .flatMap((line, index) =>
          ENGINE_ONLY.filter((rule) => rule.pattern.test(line)).map((rule) => `${file}:${index + 1} ${rule.what}: only the engine may`),
        ),
    );
}

export interface LayerCheck {
  /** The repository: where src/, handlers/ and jobs/ are. */
  root: string;
  allowed: readonly Edge[];
  /** The oxlint config whose layer overrides must be the generated ones; left out, it is not checked. */
  lintConfig?: string;
}

/** Everything that breaks the layer order under `root`, one line each; empty when it holds. */
export function checkLayers({ root, allowed, lintConfig }: LayerCheck): string[] {
  const { files, edges } = readImports(root);
  const problems: string[] = [];
  for (const file of files) {
    if (unitOf(file) === undefined) problems.push(`${file} belongs to no layer: add its folder to LAYERS in scripts/check-layers.ts`);
  }
  const isAllowed = (e: Edge): boolean => allowed.some((a) => a.from === e.from && a.to === e.to);
  const upward = (e: Edge): boolean => {
    const from = unitOf(e.from);
    const to = unitOf(e.to);
    return from !== undefined && to !== undefined && to.layer > from.layer;
  };
  for (const edge of edges) {
    if (upward(edge) && !isAllowed(edge)) problems.push(`back-up import: ${withLayer(edge.from)} imports ${withLayer(edge.to)}`);
  }
  const components = folderComponents(folderGraph(edges));
  const inCycle = (e: Edge): boolean =>
    components.some(
      (c) => c.includes(unitOf(e.from)?.path ?? '') && c.includes(unitOf(e.to)?.path ?? '') && unitOf(e.from) !== unitOf(e.to),
    );
  for (const entry of allowed) {
    if (!edges.some((e) => e.from === entry.from && e.to === entry.to && (upward(e) || inCycle(e)))) {
      problems.push(
        `allowed import ${entry.from} → ${entry.to} no longer runs up the layers or closes a folder cycle: remove it from ALLOWED`,
      );
    }
  }
  problems.push(...folderCycles(edges.filter((e) => !isAllowed(e))));
  problems.push(...peerImports(edges));
  problems.push(...engineOnlyProblems(root, files));
  if (lintConfig !== undefined) {
    const config = JSON.parse(readFileSync(lintConfig, 'utf8')) as { rules: Record<string, Json>; overrides?: Override[] };
    if (JSON.stringify(withLayerOverrides(config, allowed)) !== JSON.stringify(config)) {
      problems.push(
        `${relative(root, lintConfig)}: its layer overrides are not the ones LAYERS and ALLOWED give: run \`node scripts/check-layers.ts --write-lint\``,
      );
    }
  }
  return problems;
}

if (import.meta.main) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const lintConfig = join(root, '.oxlintrc.json');
  if (process.argv.includes('--write-lint')) {
    const config = JSON.parse(readFileSync(lintConfig, 'utf8')) as { rules: Record<string, Json>; overrides?: Override[] };
    writeFileSync(lintConfig, `${JSON.stringify(withLayerOverrides(config, ALLOWED), null, 2)}\n`);
  }
  const problems = checkLayers({ root, allowed: ALLOWED, lintConfig });
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`${problems.length} layer problem(s); the order is LAYERS in scripts/check-layers.ts`);
    process.exitCode = 1;
  }
}
