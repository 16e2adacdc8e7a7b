import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';

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

/** Every object of the rendered kustomization in `dir`; a render error or a YAML problem throws. */
export function render(dir: string): unknown[] {
  const renderer = findRenderer();
  let text: string;
  try {
    text = execFileSync(renderer.command, [...renderer.args, dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? String(error);
    throw new Error(`${renderer.name} ${dir} failed: ${stderr.trim()}`);
  }
  const documents = Array.from(parseAllDocuments(text));
  const problems = documents.flatMap((doc) => [...doc.errors, ...doc.warnings]).map((p) => p.message);
  if (problems.length > 0) throw new Error(`${dir}: ${problems.join('\n')}`);
  return documents.map((doc) => doc.toJS() as unknown).filter((d) => d !== null && d !== undefined);
}

/**
 * Renders the Flux example as kustomize-controller would: the fleet repository's
 * artifact with this project's manifests included at `vendor/talos-chatops`
 * (GitRepository `include`), the site overlay at `apps/talos-chatops` and an
 * inventory of the operator's beside it.
 */
export function renderFluxSite(manifests: string, inventory: string): unknown[] {
  const artifact = mkdtempSync(join(tmpdir(), 'flux-artifact-'));
  try {
    cpSync(manifests, join(artifact, 'vendor', 'talos-chatops'), { recursive: true });
    cpSync(join(manifests, 'flux', 'site'), join(artifact, 'apps', 'talos-chatops'), { recursive: true });
    cpSync(inventory, join(artifact, 'apps', 'talos-chatops', 'clusters.yaml'));
    return render(join(artifact, 'apps', 'talos-chatops'));
  } finally {
    rmSync(artifact, { recursive: true, force: true });
  }
}
