import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubernetesClient } from '../kube/client-module.ts';
import { makePrivateDir } from './private-dir.ts';
import type { TerraformOutputs } from './terraform-outputs.ts';

export interface ClusterCredentials {
  /** The private directory (0700) holding both files; removed when the work ends. */
  dir: string;
  talosconfigPath: string;
  kubeconfigPath: string;
  /** The kubeconfig text, for the Kubernetes client; never logged or posted. */
  kubeconfig: string;
}

export interface CredentialDeps {
  /** The cluster's Terraform outputs; reading them registers the credentials with the scrubber. */
  outputs: TerraformOutputs;
  /** Parent directory; the OS temp dir when unset. */
  baseDir: string | undefined;
}

/**
 * The runbook's operator access, done for the bot: fetch the talosconfig and kubeconfig
 * from `tofu output` into a private directory, use them, and remove them afterwards,
 * whether the work succeeded or not.
 */
export async function withClusterCredentials<T>(
  deps: CredentialDeps,
  signal: AbortSignal | undefined,
  work: (credentials: ClusterCredentials) => Promise<T>,
): Promise<T> {
  const [talosconfig, kubeconfig] = await Promise.all([
    deps.outputs.required('talosconfig', signal),
    deps.outputs.required('kubeconfig', signal),
  ]);
  const dir = await makePrivateDir(deps.baseDir, 'talos-chatops-');
  try {
    const talosconfigPath = join(dir, 'talosconfig');
    const kubeconfigPath = join(dir, 'kubeconfig');
    await writeFile(talosconfigPath, talosconfig, { mode: 0o600 });
    await writeFile(kubeconfigPath, kubeconfig, { mode: 0o600 });
    return await work({ dir, talosconfigPath, kubeconfigPath, kubeconfig });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The API server of the kubeconfig's current context (`clusters[].cluster.server`), e.g.
 * `https://10.0.30.10:6443`: what the cluster's Kubernetes endpoint really is. Only this value
 * leaves the file; an unreadable kubeconfig is reported without its text.
 */
export async function kubeconfigServer(kubeconfig: string): Promise<string | undefined> {
  const { KubeConfig } = await kubernetesClient();
  const config = new KubeConfig();
  try {
    config.loadFromString(kubeconfig);
  } catch {
    throw new Error('the kubeconfig of tofu output -raw talos_kubeconfig cannot be read as a kubeconfig');
  }
  return config.getCurrentCluster()?.server;
}
