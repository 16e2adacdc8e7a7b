import type { KubeApi } from '../kube/kube-api.ts';

/**
 * The Talos version the cluster's nodes report through Kubernetes (`Talos (v1.11.5)`),
 * when they agree: it picks the matching talosctl before any talosctl call is made.
 */
export async function runningTalosVersion(kube: KubeApi, signal: AbortSignal): Promise<string | undefined> {
  try {
    const versions = new Set(
      (await kube.listNodes(signal)).map((n) => /\((v[^)]+)\)/.exec(n.status?.nodeInfo?.osImage ?? '')?.[1]).filter((v) => v !== undefined),
    );
    return versions.size === 1 ? [...versions][0] : undefined;
  } catch {
    // The gate's own node probe reports an unreachable API; here it only means "unknown".
    return undefined;
  }
}
