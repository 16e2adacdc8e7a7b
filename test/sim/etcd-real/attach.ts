/**
 * Which simulated clusters run real etcd, and the operations the simulator's machines perform on
 * it as Talos's etcd service would (siderolabs/talos v1.13.9
 * internal/app/machined/pkg/system/services/etcd.go). A cluster without real etcd keeps the
 * in-memory model: every function here then does nothing and answers undefined, so the callers in
 * lifecycle.ts fall through to the model.
 */
import { join } from 'node:path';
import { readFile, rm, writeFile } from 'node:fs/promises';
import type { SimCluster, SimNode } from '../types.ts';
import { RealEtcdCluster } from './etcd-cluster.ts';

const real = new WeakMap<SimCluster, RealEtcdCluster>();
/** etcd's HealthInterval plus a margin for a loaded machine. */
const HEALTH_INTERVAL_MS = 5500;

export function realEtcdOf(cluster: SimCluster): RealEtcdCluster | undefined {
  return real.get(cluster);
}

/**
 * Starts one etcd process per control plane (named for its hostname) as one cluster, and takes the
 * member ids and the leader from etcd: they are random there, as in a real cluster.
 */
export async function attachRealEtcd(cluster: SimCluster, baseDir: string): Promise<RealEtcdCluster> {
  const etcd = await RealEtcdCluster.create({ baseDir });
  const cps = cluster.nodes.filter((n) => n.role === 'controlplane');
  // A start that fails leaves no member running: the caller never gets the cluster to close.
  const members = await etcd
    .bootstrap(cps.map((n) => n.hostname))
    .then(() => etcd.members(cps[0]!.hostname))
    .catch(async (error: unknown) => {
      await etcd.close();
      throw error;
    });
  if ('error' in members) {
    await etcd.close();
    throw new Error(`real etcd of ${cluster.name}: ${members.error}`);
  }
  real.set(cluster, etcd);
  for (const node of cps) {
    const id = members.find((m) => m.name === node.hostname)?.id;
    if (id) node.etcdMemberId = id;
  }
  cluster.etcd.leaderId = await etcd.waitForLeader(cps[0]!.hostname);
  // The fleet has run for days: its members have been connected far longer than etcd's
  // HealthInterval (5 s, etcdserver/server.go v3.4.23 and v3.6.12).
  etcd.agedAfter(HEALTH_INTERVAL_MS);
  return etcd;
}

/** The machine lost power, or its VM was destroyed: etcd dies with it (SIGKILL). */
export function realEtcdKilled(cluster: SimCluster, node: SimNode): Promise<void> | undefined {
  return realEtcdOf(cluster)?.kill(node.hostname);
}

/** Power came back: etcd starts again on the data it had (a removed member's etcd exits by itself). */
export function realEtcdRestarted(cluster: SimCluster, node: SimNode): Promise<string | undefined> | undefined {
  return realEtcdOf(cluster)?.restart(node.hostname);
}

/** A reset stopped the services (SIGTERM); the data directory stays until the wipe. */
export function realEtcdStopped(cluster: SimCluster, node: SimNode): Promise<void> | undefined {
  return realEtcdOf(cluster)?.stop(node.hostname);
}

/** EPHEMERAL wiped: `/var/lib/etcd` is gone. */
export function realEtcdWiped(cluster: SimCluster, node: SimNode): Promise<void> | undefined {
  return realEtcdOf(cluster)?.wipe(node.hostname);
}

/** Removes a member by its `%016x` id through the running members: etcd's refusal text, or undefined. */
export function realEtcdRemove(cluster: SimCluster, id: string): Promise<string | undefined> | undefined {
  return realEtcdOf(cluster)?.removeMember(id);
}

/**
 * `addMember` of Talos's join loop: through a member that has a leader, list the members, remove the
 * one of this machine's name (its previous incarnation), then add this machine as a learner and
 * start its etcd. Each refusal (no leader, "unhealthy cluster" in etcd's first seconds, "too many
 * learner members in cluster" while another learner catches up) is retried, as Talos retries until
 * its join timeout. Resolves to the new member's id, or undefined once `abandoned()` holds.
 */
export async function realEtcdJoin(
  cluster: SimCluster,
  node: SimNode,
  sleep: () => Promise<void>,
  abandoned: () => boolean,
): Promise<string | undefined> {
  const etcd = realEtcdOf(cluster);
  if (!etcd) return undefined;
  while (!abandoned()) {
    const via = cluster.nodes.find((n) => n !== node && n.role === 'controlplane' && etcd.running(n.hostname));
    const members = via ? await etcd.members(via.hostname) : { error: 'no running member' };
    if (!('error' in members)) {
      const own = members.find((m) => m.name === node.hostname);
      const removed = own ? await etcd.removeMember(own.id) : undefined;
      if (removed === undefined) {
        const added = await etcd.addLearner(node.hostname);
        if ('id' in added) return added.id;
      }
    }
    await sleep();
  }
  return undefined;
}

/** Talos's `promoteMember`: retried until etcd accepts (the learner caught up, a leader exists). */
export async function realEtcdPromote(
  cluster: SimCluster,
  id: string,
  sleep: () => Promise<void>,
  abandoned: () => boolean,
): Promise<boolean | undefined> {
  const etcd = realEtcdOf(cluster);
  if (!etcd) return undefined;
  while (!abandoned()) {
    if ((await etcd.promote(id)) === undefined) return true;
    await sleep();
  }
  return false;
}

/**
 * The bootstrap etcd's PreFunc with a recovery: the uploaded snapshot restored into the node's
 * data directory as a cluster of one, etcd's own sha256 check deciding (services/etcd.go
 * `recoverFromSnapshot`, v1.13.9), then etcd started. Without a snapshot, a new cluster of one.
 */
export async function realEtcdBootstrap(
  cluster: SimCluster,
  node: SimNode,
  snapshot: Buffer | undefined,
  skipHashCheck: boolean,
): Promise<{ id: string } | { error: string } | undefined> {
  const etcd = realEtcdOf(cluster);
  if (!etcd) return undefined;
  if (!snapshot) {
    await etcd.wipe(node.hostname);
    await etcd.bootstrap([node.hostname]);
    const status = await etcd.status(node.hostname);
    return 'error' in status ? status : { id: status.memberId };
  }
  const path = join(etcd.baseDir, `${node.hostname}.recover.snapshot`);
  await writeFile(path, snapshot, { mode: 0o600 });
  return etcd.restore(node.hostname, path, skipHashCheck);
}

/** The bytes etcd streams for a snapshot of this member (its database, then the sha256 of it). */
export async function realSnapshotBytes(etcd: RealEtcdCluster, node: SimNode, scratch: string): Promise<Buffer | { error: string }> {
  const refused = await etcd.snapshot(node.hostname, scratch);
  if (refused !== undefined) return { error: `rpc error: code = Unknown desc = ${refused}` };
  try {
    return await readFile(scratch);
  } finally {
    await rm(scratch, { force: true });
  }
}
