import type { ClusterConfig } from '../config/inventory.ts';
import type { Logger } from '../log/logger.ts';
import type { ChannelMembers } from '../port/channel-members.ts';

export interface HomeAudienceDeps {
  /** Whether `user` is in a list of user ids and user-group ids (the authorizer's `isMember`). */
  isListed(user: string, allowed: readonly string[]): Promise<boolean>;
  channelMembers: ChannelMembers;
  logger: Logger;
}

/**
 * The clusters whose detail (versions, lock holder, approvals waiting, the gate's stop reasons)
 * `user` may see on the Home tab: those they operate or approve, and those whose channel they
 * are in. Every other cluster is shown as `/talos status` shows it outside its channel. A check
 * that fails counts as no: it is logged, and the cluster is withheld rather than shown.
 */
export async function clustersInDetail(user: string, clusters: readonly ClusterConfig[], deps: HomeAudienceDeps): Promise<Set<string>> {
  const failed = (cluster: ClusterConfig, what: string) => (error: unknown) => {
    deps.logger.warn(
      { user, cluster: cluster.name, channel: cluster.channel, err: (error as Error).message },
      `home tab: ${what} could not be checked, so the cluster's detail is withheld`,
    );
    return false;
  };
  const allowed = await Promise.all(
    clusters.map(async (cluster) => {
      const listed = await deps
        .isListed(user, [...cluster.operators, ...cluster.approvers])
        .catch(failed(cluster, 'operators and approvers'));
      if (listed) return true;
      return deps.channelMembers.isMember(cluster.channel, user).catch(failed(cluster, 'channel membership'));
    }),
  );
  return new Set(clusters.filter((_, i) => allowed[i] === true).map((c) => c.name));
}

/**
 * Of the clusters `user` sees in detail, those they operate: their sections carry the operators'
 * buttons. A check that fails counts as no (the buttons are left out, the click is checked
 * again anyway). Group lookups are the authorizer's, cached, so a redraw asks Slack little.
 */
export async function clustersOperated(user: string, clusters: readonly ClusterConfig[], deps: HomeAudienceDeps): Promise<Set<string>> {
  const operated = await Promise.all(
    clusters.map((cluster) =>
      deps.isListed(user, cluster.operators).catch((error: unknown) => {
        deps.logger.warn(
          { user, cluster: cluster.name, err: (error as Error).message },
          "home tab: operators could not be checked, so the cluster's buttons are left out",
        );
        return false;
      }),
    ),
  );
  return new Set(clusters.filter((_, i) => operated[i] === true).map((c) => c.name));
}
