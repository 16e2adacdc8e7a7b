import type { ClusterConfig } from '../config/inventory.ts';
import type { ProcessRunner } from '../exec/process-runner.ts';
import { createKubeApi, type KubeApi } from '../kube/kube-api.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import { createTalosctl, type Talosctl } from '../talos/talosctl.ts';
import type { TalosctlBinaries } from '../talos/talosctl-binary.ts';
import { withClusterCredentials, type ClusterCredentials } from './credentials.ts';
import { terraformOutputs, type TerraformOutputs } from './terraform-outputs.ts';
import type { Tofu } from './tofu.ts';

/** Everything a job needs to reach one cluster, alive only while the job runs. */
export interface ClusterSession {
  cluster: ClusterConfig;
  credentials: ClusterCredentials;
  /** The cluster's Terraform outputs, read once for the whole job (`tofu output -json`). */
  outputs: TerraformOutputs;
  kube: KubeApi;
  /** talosctl matching `runningVersion` (when `TALOSCTL_BIN` is a directory of versioned binaries); `closest` accepts the same minor. */
  talosctl(runningVersion?: string, options?: { closest?: boolean }): Promise<Talosctl>;
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
  /** Default timeout of one talosctl call, in ms. */
  talosctlTimeoutMs: number;
}

export function createClusterAccess(deps: ClusterAccessDeps): ClusterAccess {
  return {
    withSession(cluster, signal, work) {
      const outputs = terraformOutputs({ tofu: deps.tofu, scrubber: deps.scrubber }, cluster);
      return withClusterCredentials({ outputs, baseDir: deps.credentialsDir }, signal, async (credentials) => {
        const kube = createKubeApi(credentials.kubeconfig);
        // A downloaded client stays in the cache while the job that asked for it runs.
        const releases: (() => void)[] = [];
        const talosctl = async (runningVersion?: string, options?: { closest?: boolean }): Promise<Talosctl> => {
          const binary = await deps.binaries.forVersion(runningVersion, options);
          if (binary.release !== undefined) releases.push(binary.release);
          return createTalosctl({
            runner: deps.runner,
            binary: binary.path,
            talosconfigPath: credentials.talosconfigPath,
            endpoints: cluster.controlPlanes,
            env: deps.childEnv,
            timeoutMs: deps.talosctlTimeoutMs,
          });
        };
        try {
          return await work({ cluster, credentials, outputs, kube, talosctl });
        } finally {
          for (const release of releases) release();
        }
      });
    },
  };
}
