import { isIP } from 'node:net';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import type { NodeClassName } from '../rules/installer-image.ts';

/** A node's installer class as an operation left it: the class, the schematic it installed, the operation and when. */
export const RecordedNodeClass = z.strictObject({
  class: z.enum(['default', 'longhorn']),
  schematic: z.string().regex(/^[0-9a-f]{64}$/),
  op: z.string().min(1).max(100),
  at: z.iso.datetime(),
});
export type RecordedNodeClass = z.infer<typeof RecordedNodeClass> & { class: NodeClassName };

/** What was read back: the valid entries by node address, and the fields that were not and were ignored. */
export interface RecordedNodeClasses {
  byNode: Map<string, RecordedNodeClass>;
  /** Node fields whose value is not a record the bot writes (hand-edited or corrupt); they count as no record. */
  ignored: string[];
}

/**
 * The class of each node when the last operation that installed it completed, one Redis hash per
 * cluster (field: node address). It is evidence for a node that later runs neither Terraform
 * output's schematic (Terraform changed one): what the bot installed there is what it was. Redis
 * is a store, not the authority: every entry is validated when read, and one that does not parse
 * is ignored, never trusted.
 */
export interface NodeClassRecord {
  read(cluster: string): Promise<RecordedNodeClasses>;
  /** Records these nodes' classes; other nodes keep theirs. */
  write(cluster: string, entries: Map<string, RecordedNodeClass>): Promise<void>;
}

const key = (cluster: string): string => `talos:node-class:${cluster}`;

export function createNodeClassRecord(redis: Redis): NodeClassRecord {
  return {
    async read(cluster) {
      const raw = await redis.hgetall(key(cluster));
      const byNode = new Map<string, RecordedNodeClass>();
      const ignored: string[] = [];
      for (const [node, value] of Object.entries(raw)) {
        let parsed: unknown;
        try {
          parsed = JSON.parse(value);
        } catch {
          parsed = undefined;
        }
        const entry = RecordedNodeClass.safeParse(parsed);
        if (isIP(node) === 0 || !entry.success) ignored.push(node);
        else byNode.set(node, entry.data);
      }
      return { byNode, ignored };
    },
    async write(cluster, entries) {
      if (entries.size === 0) return;
      const fields = [...entries].flatMap(([node, entry]) => [node, JSON.stringify(RecordedNodeClass.parse(entry))]);
      await redis.hset(key(cluster), ...fields);
    },
  };
}
