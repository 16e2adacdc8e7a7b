import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';

// Renders a kustomization the way Flux's kustomize-controller builds it: with
// kustomize v5, either the standalone `kustomize build` or the one inside
// `kubectl kustomize`. scripts/ensure-tools.sh installs one (npm test runs it first, and CI); a machine without either fails
// the manifest tests with the fix, never skips them.

/** The oldest kustomize that builds these overlays as Flux does (components, `patches`). */
const MIN_MAJOR = 5;

export interface Renderer {
  /** What runs, for messages: `kustomize build` or `kubectl kustomize`. */
  name: string;
  command: string;
  args: string[];
  version: string;
}

function output(command: string, args: string[]): string | undefined {
  try {
    return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 30_000 });
  } catch {
    return undefined;
  }
}

function kustomizeVersion(): string | undefined {
  return /v\d+\.\d+\.\d+/.exec(output('kustomize', ['version']) ?? '')?.[0];
}

function kubectlKustomizeVersion(): string | undefined {
  const text = output('kubectl', ['version', '--client', '-o', 'json']);
  if (text === undefined) return undefined;
  return (JSON.parse(text) as { kustomizeVersion?: string }).kustomizeVersion;
}

const major = (version: string): number => Number(/^v(\d+)/.exec(version)?.[1] ?? 0);

let found: Renderer | undefined;

/** The first kustomize v5 on the PATH; throws, naming what was found and the fix, when there is none. */
export function findRenderer(): Renderer {
  if (found !== undefined) return found;
  const candidates = [
    { name: 'kustomize build', command: 'kustomize', args: ['build'], version: kustomizeVersion() },
    { name: 'kubectl kustomize', command: 'kubectl', args: ['kustomize'], version: kubectlKustomizeVersion() },
  ];
  const usable = candidates.find((c) => c.version !== undefined && major(c.version) >= MIN_MAJOR);
  if (usable === undefined) {
    const seen = candidates.filter((c) => c.version !== undefined).map((c) => `${c.name} ${c.version}`);
    throw new Error(
      `no kustomize v${MIN_MAJOR} to render the overlays with (${seen.length > 0 ? `found only ${seen.join(', ')}` : 'neither kustomize nor kubectl is on the PATH'}). ` +
        'Install kubectl 1.27 or later, or kustomize v5; `bash scripts/ensure-tools.sh test` installs kubectl when it is missing.',
    );
  }
  found = { name: usable.name, command: usable.command, args: usable.args, version: usable.version! };
  return found;
}

/** The rendered kustomization in `dir` as text; a render error throws. */
export function renderText(dir: string): string {
  const renderer = findRenderer();
  try {
    return execFileSync(renderer.command, [...renderer.args, dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new Error(`${renderer.name} ${dir} failed: ${stderr.trim()}`);
  }
}

/** Every object of the rendered kustomization in `dir`; a render error or a YAML problem throws. */
export function render(dir: string): unknown[] {
  return parseDocuments(renderText(dir), dir);
}

function parseDocuments(text: string, dir: string): unknown[] {
  const documents = Array.from(parseAllDocuments(text));
  const problems = documents.flatMap((doc) => [...doc.errors, ...doc.warnings]).map((p) => p.message);
  if (problems.length > 0) throw new Error(`${dir}: ${problems.join('\n')}`);
  return documents.map((doc) => doc.toJS() as unknown).filter((d) => d !== null && d !== undefined);
}

/** The fields of a Flux Kustomization (kustomize.toolkit.fluxcd.io/v1) that shape its build. */
export interface FluxKustomizationSpec {
  path: string;
  components?: string[];
  images?: { name: string; newName?: string; newTag?: string }[];
  postBuild?: { substitute?: Record<string, string> };
}

/**
 * Flux's post-build substitution of `${VAR}`, `${VAR:=default}` and `${VAR:-default}`
 * (fluxcd/pkg `envsubst`, as kustomize-controller v1.4 calls it): a variable without a value
 * becomes empty, and `$VAR` without braces is left alone.
 */
export function substitute(text: string, variables: Record<string, string>): string {
  return text.replace(/\$\{([_a-zA-Z][_a-zA-Z0-9]*)(?::[=-]([^}]*))?\}/g, (_, name: string, fallback?: string) => variables[name] ?? fallback ?? '');
}

/** The `${VAR}` names left in a render, for the variables a Flux Kustomization must set. */
export function variablesIn(text: string): string[] {
  return [...new Set([...text.matchAll(/\$\{([_a-zA-Z][_a-zA-Z0-9]*)/g)].map((m) => m[1]!))].sort();
}

/**
 * Builds `spec.path` of the published artifact (the manifests) as kustomize-controller does:
 * `spec.components` and `spec.images` added to the kustomization there, then rendered; the text
 * before `postBuild.substitute` is applied.
 */
export function renderFluxText(manifests: string, spec: FluxKustomizationSpec): string {
  const artifact = mkdtempSync(join(tmpdir(), 'flux-artifact-'));
  try {
    cpSync(manifests, artifact, { recursive: true });
    const file = join(artifact, spec.path, 'kustomization.yaml');
    const kustomization = parse(readFileSync(file, 'utf8')) as { components?: string[]; images?: unknown[] };
    kustomization.components = [...(kustomization.components ?? []), ...(spec.components ?? [])];
    kustomization.images = [...(kustomization.images ?? []), ...(spec.images ?? [])];
    writeFileSync(file, stringify(kustomization));
    return renderText(join(artifact, spec.path));
  } finally {
    rmSync(artifact, { recursive: true, force: true });
  }
}

/**
 * Renders the Flux example as Flux applies it: the site from the fleet repository
 * (`apps/talos-chatops`, with the operator's inventory), then the bot's Kustomization
 * over the published manifests with its variables substituted.
 */
export function renderFluxSite(manifests: string, inventory: string, spec: FluxKustomizationSpec): unknown[] {
  const fleet = mkdtempSync(join(tmpdir(), 'flux-fleet-'));
  try {
    cpSync(join(manifests, 'flux', 'site'), join(fleet, 'apps', 'talos-chatops'), { recursive: true });
    cpSync(inventory, join(fleet, 'apps', 'talos-chatops', 'clusters.yaml'));
    const site = render(join(fleet, 'apps', 'talos-chatops'));
    const app = parseDocuments(substitute(renderFluxText(manifests, spec), spec.postBuild?.substitute ?? {}), spec.path);
    return [...site, ...app];
  } finally {
    rmSync(fleet, { recursive: true, force: true });
  }
}
