import { declaredNodes, type ClusterConfig } from '../config/inventory.ts';
import type { ProcessRunner } from '../exec/process-runner.ts';
import { createKubeApi, type KubeApi } from '../kube/kube-api.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import { createTalosctl, type Talosctl } from '../talos/talosctl.ts';
import type { TalosctlBinaries, TalosctlChoice } from '../talos/talosctl-binary.ts';
import { withClusterCredentials, type ClusterCredentials } from './credentials.ts';
import { observeEstate, type Estate, type JudgeEstate, type SourceRead } from './estate.ts';
import { terraformOutputs, type TerraformOutputs } from './terraform-outputs.ts';
import type { Tofu } from './tofu.ts';

/** Everything a job needs to reach one cluster, alive only while the job runs. */
export interface ClusterSession {
  /**
   * The cluster as observed when the session opened: the inventory's entry with `controlPlanes`,
   * `workers` and `nodeNames` replaced by the nodes the sources show (see `estate`); what the
   * inventory itself said stays in `cluster.declared`.
   */
  cluster: ClusterConfig;
  /** What each source said of the nodes, and every disagreement between them. */
  estate: Estate;
  credentials: ClusterCredentials;
  /** The cluster's Terraform outputs, read once for the whole job (`tofu output -json`). */
  outputs: TerraformOutputs;
  kube: KubeApi;
  /** talosctl matching `runningVersion` (when `TALOSCTL_BIN` is a directory of versioned binaries); `closest` accepts the same minor. */
  talosctl(runningVersion?: string, options?: TalosctlChoice): Promise<Talosctl>;
}

export interface ClusterAccess {
  withSession<T>(cluster: ClusterConfig, signal: AbortSignal | undefined, work: (session: ClusterSession) => Promise<T>): Promise<T>;
}

export interface ClusterAccessDeps {
  runner: ProcessRunner;
  tofu: Tofu;
  binaries: TalosctlBinaries;
  scrubber: SecretScrubber;
  credentialsDir: string | undefined;
  childEnv: Record<string, string>;
  /** Default timeout of one talosctl call, in ms; also the bound of each read of the estate. */
  talosctlTimeoutMs: number;
  /** The rule that compares the sources (src/rules/estate-agreement.ts). */
  judgeEstate: JudgeEstate;
  /**
   * Told every observation, before the job's work: the composition root records it, so that a command
   * can name a node as the cluster calls it. It never throws (a failed record is the recorder's to log).
   */
  onObserved?: (cluster: ClusterConfig, estate: Estate) => Promise<void>;
}

/** The addresses talosctl reaches the cluster through: the inventory's control planes when it lists them, else the talosconfig's endpoints. */
function reachFirst(cluster: ClusterConfig, talosconfig: SourceRead<string[]>): string[] {
  const listed = declaredNodes(cluster).controlPlanes;
  if (listed !== undefined && listed.length > 0) return listed;
  return talosconfig.ok ? talosconfig.value : [];
}

/** The inventory's cluster with the observed nodes in place of its lists. */
function observedCluster(cluster: ClusterConfig, estate: Estate): ClusterConfig {
  return {
    ...cluster,
    declared: declaredNodes(cluster),
    controlPlanes: estate.controlPlanes,
    workers: estate.workers,
    nodeNames: estate.nodeNames,
  };
}

export function createClusterAccess(deps: ClusterAccessDeps): ClusterAccess {
  return {
    withSession(cluster, signal, work) {
      const outputs = terraformOutputs({ tofu: deps.tofu, scrubber: deps.scrubber }, cluster);
      return withClusterCredentials({ outputs, baseDir: deps.credentialsDir }, signal, async (credentials) => {
        const kube = await createKubeApi(credentials.kubeconfig);
        let endpoints: string[] = [];
        // A downloaded client stays in the cache while the job that asked for it runs.
        const releases: (() => void)[] = [];
        const talosctl = async (runningVersion?: string, options?: TalosctlChoice): Promise<Talosctl> => {
          const binary = await deps.binaries.forVersion(runningVersion, options);
          if (binary.release !== undefined) releases.push(binary.release);
          return createTalosctl({
            runner: deps.runner,
            binary: binary.path,
            talosconfigPath: credentials.talosconfigPath,
            endpoints,
            env: deps.childEnv,
            timeoutMs: deps.talosctlTimeoutMs,
          });
        };
        const observation = await observeEstate(
          {
            kube,
            tofu: deps.tofu,
            talosconfigPath: credentials.talosconfigPath,
            timeoutMs: deps.talosctlTimeoutMs,
            talosctl: async (nodes) => {
              const versions = new Set(nodes.ok ? nodes.value.flatMap((n) => n.talosVersion ?? []) : []);
              const running = versions.size === 1 ? [...versions][0] : undefined;
              // The image's client only: the estate's read downloads nothing and never takes a client from the
              // cache, so the preflight's refusals come before any download and a cached client's check is the job's own.
              return talosctl(running, { closest: true, imageOnly: true }).catch(() => talosctl(undefined, { imageOnly: true }));
            },
          },
          cluster,
          (talosconfig) => (endpoints = reachFirst(cluster, talosconfig)),
          signal,
        );
        const estate = deps.judgeEstate(cluster, observation);
        await deps.onObserved?.(cluster, estate);
        // Where neither the inventory nor the talosconfig names an address, the observed control planes are the way in.
        if (endpoints.length === 0) endpoints = estate.controlPlanes;
        try {
          return await work({ cluster: observedCluster(cluster, estate), estate, credentials, outputs, kube, talosctl });
        } finally {
          for (const release of releases) release();
        }
      });
    },
  };
}
