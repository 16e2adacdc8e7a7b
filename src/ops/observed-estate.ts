import { isIP } from 'node:net';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { Estate } from '../cluster/estate.ts';

const Address = z.string().refine((a) => isIP(a) !== 0, 'not an IP address');
/** A Kubernetes Node name (a DNS subdomain) or an etcd member's hostname. */
const NodeName = z.string().regex(/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/);

/** What the last look at a cluster saw of its nodes, and when. */
export const ObservedEstateRecord = z.strictObject({
  controlPlanes: z.array(Address).max(500),
  workers: z.array(Address).max(5000),
  nodeNames: z.record(Address, NodeName),
  observedAt: z.iso.datetime(),
});
export type ObservedEstateRecord = z.infer<typeof ObservedEstateRecord>;

/**
 * The nodes of each cluster as the last job that reached it observed them, one Redis key per
 * cluster, overwritten by every observation. A command that names a node by the name Kubernetes
 * shows resolves it here; the preflight looks again before anything is done. Redis is a store,
 * not the authority: a record that does not parse is ignored and logged, never trusted.
 */
export interface ObservedEstates {
  read(cluster: string): Promise<ObservedEstateRecord | undefined>;
  write(cluster: string, record: ObservedEstateRecord): Promise<void>;
}

const key = (cluster: string): string => `talos:observed-estate:${cluster}`;

/** Where an ignored record is said: the bot's logger. */
export interface RecordLog {
  warn(fields: object, message: string): void;
}

export function createObservedEstates(redis: Redis, logger: RecordLog): ObservedEstates {
  return {
    async read(cluster) {
      const raw = await redis.get(key(cluster));
      if (raw === null) return undefined;
      let parsed: unknown;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = undefined;
      }
      const record = ObservedEstateRecord.safeParse(parsed);
      if (record.success) return record.data;
      logger.warn(
        { cluster, key: key(cluster) },
        'the recorded observation of the cluster is not one the bot writes (edited or corrupt): ignored, as if none were recorded',
      );
      return undefined;
    },
    async write(cluster, record) {
      await redis.set(key(cluster), JSON.stringify(ObservedEstateRecord.parse(record)));
    },
  };
}

/**
 * What an observation saw, as the record keeps it: the observed nodes and the names the cluster
 * itself gives them (a Kubernetes Node's, else an etcd member's), never one the inventory gave.
 * Undefined when neither etcd nor Kubernetes answered: nothing was seen, and the last record stays.
 */
export function observedRecord(estate: Estate, at: Date): ObservedEstateRecord | undefined {
  const { kube, etcd } = estate.observation;
  if (!kube.ok && !etcd.ok) return undefined;
  const nodeNames: Record<string, string> = {};
  for (const member of etcd.ok ? etcd.value : []) {
    if (member.address !== undefined && member.hostname !== '') nodeNames[member.address] = member.hostname;
  }
  for (const node of kube.ok ? kube.value : []) if (node.address !== undefined) nodeNames[node.address] = node.name;
  const valid = Object.fromEntries(Object.entries(nodeNames).filter(([a, n]) => isIP(a) !== 0 && NodeName.safeParse(n).success));
  return { controlPlanes: estate.controlPlanes, workers: estate.workers, nodeNames: valid, observedAt: at.toISOString() };
}
