import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import type { BotPlacement } from '../../src/config/bot-placement.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import { botOnClusterText, observeBotPlacement } from '../../src/ops/snapshot-placement.ts';
import type { DoctorDeps } from './doctor.ts';

const CHECK = 'Where the bot runs';

/** What the operations that need a snapshot are, named once for every line that refuses them. */
const REFUSED =
  '`/talos snapshot`, the scheduled snapshots and every operation that takes one (Talos and Kubernetes upgrades, replacements, Terraform applies, the restore rehearsal) are refused';

/** `node talos-mgmt-w-1, host IP 10.0.50.21, pod IP 10.244.3.7`: what the deployment said. */
function describePlacement(placement: BotPlacement): string {
  return [
    placement.nodeName === undefined ? '' : `node ${placement.nodeName}`,
    placement.hostIp === undefined ? '' : `host IP ${placement.hostIp}`,
    placement.podIp === undefined ? '' : `pod IP ${placement.podIp}`,
  ]
    .filter((part) => part !== '')
    .join(', ');
}

/** The one line when the deployment says nothing about where the bot runs: a warning, never silence. */
export function placementUnknownFinding(): DoctorFinding {
  return {
    status: 'warn',
    check: CHECK,
    found:
      'BOT_NODE_NAME, BOT_HOST_IP and BOT_POD_IP are unset, so the bot cannot tell whether it runs on a cluster it manages, and takes etcd snapshots without knowing they land off the cluster',
    fix: "set them from the downward API (`spec.nodeName`, `status.hostIP`, `status.podIP`) as manifests/base/deployment.yaml does; on a host without Kubernetes, set BOT_HOST_IP to the host's address",
  };
}

/**
 * Whether the bot runs on a node of `cluster`, as every snapshot checks it: its node name among the
 * Kubernetes Nodes, or its host (or pod) IP among the nodes' addresses. On it is ⛔: what it refuses
 * and why, so an install on the wrong cluster is caught before the first upgrade.
 */
export async function placementCheck(
  deps: Pick<DoctorDeps, 'access' | 'placement'>,
  cluster: ClusterConfig,
  signal: AbortSignal,
): Promise<DoctorFinding[]> {
  const base = { check: CHECK, cluster: cluster.name };
  return deps.access.withSession(cluster, signal, async (session) => {
    const { onCluster, nodesUnread } = await observeBotPlacement(
      session.cluster,
      { placement: deps.placement, kube: session.kube },
      signal,
    );
    if (onCluster.verdict === 'on') {
      return [
        {
          ...base,
          status: 'fail',
          found: `${botOnClusterText(cluster.name, onCluster)}: its etcd snapshots would stay on the cluster they are meant to rescue, so ${REFUSED}`,
          fix: `run the bot outside ${cluster.name}, on a management cluster or host (docs/deploy.md, "Where to run it"); another snapshotDir is not enough: the bot, its Redis and its records go down with ${cluster.name}`,
        },
      ];
    }
    const where = describePlacement(deps.placement);
    const nodes = allNodes(session.cluster).length;
    if (nodesUnread !== undefined) {
      return [
        {
          ...base,
          status: 'warn',
          found: `the bot runs on ${where}, none of the ${nodes} node addresses of ${cluster.name}; its Kubernetes Nodes could not be read (${nodesUnread}), so the node name was not compared`,
          fix: 'run `/talos health` to see why the Kubernetes API does not answer',
        },
      ];
    }
    return [
      {
        ...base,
        status: 'ok',
        found: `the bot runs on ${where}, none of the nodes of ${cluster.name}: its snapshots land off the cluster`,
      },
    ];
  });
}
