/**
 * The Terraform repository of the simulated estate: `<simdir>/terraform` is a real git repository
 * (the real `git` binary) holding one root per cluster, so both clusters are planned from one
 * commit with different inputs. Tests edit the declared inputs the way an operator edits
 * `cluster.auto.tfvars.json`, commit them, and play another operator's apply.
 */
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { DeclaredInputs, NodeShape, ResourceLifecycle, SimCluster, SimState } from './types.ts';

/** The file each cluster root reads its declared inputs from (OpenTofu loads `*.auto.tfvars.json` by itself). */
export const DECLARED_INPUTS_FILE = 'cluster.auto.tfvars.json';

const GITIGNORE = '# Saved plans and provider caches never go into the repository.\n*.tfplan\n.terraform/\n';

export function declaredInputsPath(cluster: SimCluster): string {
  return join(cluster.terraformDir, DECLARED_INPUTS_FILE);
}

export async function writeDeclaredInputs(cluster: SimCluster, inputs: DeclaredInputs): Promise<void> {
  await writeFile(declaredInputsPath(cluster), `${JSON.stringify(inputs, null, 2)}\n`);
}

/** Reads a cluster's declared inputs; throws with the file named when it is missing or not JSON. */
export function readDeclaredInputs(cluster: SimCluster): DeclaredInputs {
  const path = declaredInputsPath(cluster);
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as DeclaredInputs;
  } catch (error) {
    throw new Error(
      `cannot read the declared inputs of ${cluster.name} from ${path}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  }
}

export class SimTerraform {
  /** The repository root, `<simdir>/terraform`. */
  readonly root: string;
  readonly #state: SimState;

  constructor(root: string, state: SimState) {
    this.root = root;
    this.#state = state;
  }

  /**
   * Git's environment: no system or global configuration, so the machine's settings (signing,
   * hooks, default branch) never apply and nothing is written outside; the committer comes
   * from the environment, not from a config file.
   */
  #env(): Record<string, string> {
    return {
      PATH: process.env['PATH'] ?? '/usr/bin:/bin',
      HOME: this.root,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
      GIT_AUTHOR_NAME: 'Simulated Operator',
      GIT_AUTHOR_EMAIL: 'operator@example.org',
      GIT_COMMITTER_NAME: 'Simulated Operator',
      GIT_COMMITTER_EMAIL: 'operator@example.org',
      LC_ALL: 'C',
    };
  }

  /** Runs one git command in the repository. */
  async git(args: string[]): Promise<string> {
    const result = await execa('git', args, { cwd: this.root, extendEnv: false, env: this.#env() });
    return result.stdout;
  }

  /**
   * Runs a short sequence of git commands in one shell: each process start costs tens of
   * milliseconds on a busy machine, and every simulator creates a repository. Arguments travel
   * as positional parameters, never inside the script.
   */
  async #gitScript(script: string, ...args: string[]): Promise<string> {
    const result = await execa('sh', ['-c', script, 'sh', ...args], { cwd: this.root, extendEnv: false, env: this.#env() });
    return result.stdout;
  }

  /** `git init`, the declared inputs of every cluster equal to its applied state, one commit. */
  async init(): Promise<void> {
    await writeFile(join(this.root, '.gitignore'), GITIGNORE);
    for (const cluster of Object.values(this.#state.clusters)) await writeDeclaredInputs(cluster, cluster.terraform.applied);
    await this.#gitScript(
      'git init -q -b main && git add -A && git commit -q -m "$1"',
      'Terraform roots and declared inputs of the clusters',
    );
  }

  declared(cluster: string): DeclaredInputs {
    return readDeclaredInputs(this.#cluster(cluster));
  }

  /** Edits the declared inputs in the working tree (no commit). */
  async declare(cluster: string, edit: (inputs: DeclaredInputs) => void): Promise<void> {
    const target = this.#cluster(cluster);
    const inputs = readDeclaredInputs(target);
    edit(inputs);
    await writeDeclaredInputs(target, inputs);
  }

  /** A unique `talos_nodes` entry, as the runbook's "Add a node" asks. */
  addNode(cluster: string, node: NodeShape): Promise<void> {
    return this.declare(cluster, (inputs) => {
      if (inputs.talos_nodes[node.hostname]) throw new Error(`${cluster} already declares ${node.hostname}`);
      inputs.talos_nodes[node.hostname] = {
        address: node.address,
        role: node.role,
        host: node.host,
        longhorn: node.longhorn ?? false,
        ...(node.installer === 'longhorn' ? { longhorn_installer: true } : {}),
        vm_generation: 1,
      };
    });
  }

  removeNode(cluster: string, hostname: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      if (!inputs.talos_nodes[hostname]) throw new Error(`${cluster} declares no node ${hostname}`);
      delete inputs.talos_nodes[hostname];
    });
  }

  setTalosVersion(cluster: string, version: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      inputs.talos_version = version;
    });
  }

  setKubernetesVersion(cluster: string, version: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      inputs.talos_kubernetes_version = version;
    });
  }

  /** A Talos machine-config patch change: every node's configuration apply is updated in place. */
  changePatch(cluster: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      inputs.talos_config_patch_revision += 1;
    });
  }

  /** New cluster secrets: the plan replaces `talos_machine_secrets.this`. */
  replaceSecrets(cluster: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      inputs.talos_secrets_generation += 1;
    });
  }

  /** A change that forces the node's VM to be recreated. */
  replaceVm(cluster: string, hostname: string): Promise<void> {
    return this.declare(cluster, (inputs) => {
      const node = inputs.talos_nodes[hostname];
      if (!node) throw new Error(`${cluster} declares no node ${hostname}`);
      node.vm_generation += 1;
    });
  }

  /**
   * Declares a resource block's `lifecycle` (`type.name`, e.g. `talos_machine_secrets.this`): with
   * `destroy: false` a replacement plans as `["forget","create"]`, with `create_before_destroy` as
   * `["create","delete"]`.
   */
  setLifecycle(cluster: string, block: string, lifecycle: ResourceLifecycle): Promise<void> {
    return this.declare(cluster, (inputs) => {
      inputs.lifecycle = { ...inputs.lifecycle, [block]: lifecycle };
    });
  }

  /** Commits everything in the repository; returns the new commit's sha. */
  async commit(message: string): Promise<string> {
    return (await this.#gitScript('git add -A && git commit -q --allow-empty -m "$1" && git rev-parse HEAD', message)).trim();
  }

  async head(): Promise<string> {
    return (await this.git(['rev-parse', 'HEAD'])).trim();
  }

  /** The state serial: every apply that writes the state bumps it. */
  serial(cluster: string): number {
    return this.#cluster(cluster).terraform.state.serial;
  }

  /** Another operator's apply that changed nothing but the state serial: saved plans become stale. */
  touchState(cluster: string): void {
    this.#cluster(cluster).terraform.state.serial += 1;
  }

  #cluster(name: string): SimCluster {
    const cluster = this.#state.clusters[name];
    if (!cluster) throw new Error(`unknown simulated cluster ${JSON.stringify(name)}`);
    return cluster;
  }
}
