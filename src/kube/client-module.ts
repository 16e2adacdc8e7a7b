import type * as ClientNode from '@kubernetes/client-node';

/**
 * `@kubernetes/client-node`, loaded on the first cluster session rather than at start: it is the
 * heaviest module the bot uses (about 0.4 s of a 1.3 s start on two cores), and a bot that has only
 * just started, or restarts after a crash, answers Slack before it needs the cluster.
 */
export type KubernetesClient = typeof ClientNode;

let loading: Promise<KubernetesClient> | undefined;

export function kubernetesClient(): Promise<KubernetesClient> {
  loading ??= import('@kubernetes/client-node');
  return loading;
}
