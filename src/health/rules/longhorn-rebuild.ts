import { z } from 'zod';
import { LonghornReplica, LonghornVolume, volumeLabel } from './longhorn.ts';

/**
 * The parts of an `engines.longhorn.io` object that tell a rebuild's progress: the engine reports,
 * per replica address (`tcp://<ip>:<port>`), whether that replica is rebuilding and how far it is
 * (longhorn-manager k8s/pkg/apis/longhorn/v1beta2/engine.go, `RebuildStatus`).
 */
export const LonghornEngine = z.object({
  metadata: z.object({ name: z.string() }),
  spec: z.object({ volumeName: z.string() }),
  status: z
    .object({
      /** Replica name → `<ip>:<port>`. */
      currentReplicaAddressMap: z.record(z.string(), z.string()).nullish(),
      rebuildStatus: z
        .record(
          z.string(),
          z
            .object({
              isRebuilding: z.boolean().optional(),
              progress: z.number().optional(),
              state: z.string().optional(),
              error: z.string().optional(),
            })
            .nullable(),
        )
        .nullish(),
    })
    .optional(),
});
export type LonghornEngine = z.infer<typeof LonghornEngine>;

/** One volume that is not healthy yet, with the rebuilds its engine reports. */
export interface VolumeRebuild {
  /** `pvc-… (namespace/claim)`. */
  volume: string;
  /** The volume's object name (`pvc-…`), which a baseline keys it by; absent when unreadable. */
  name?: string;
  /** Its robustness (`degraded`, `faulted`, …), or what stands in for it. */
  robustness: string;
  /** Each replica being rebuilt: where, and how far. */
  rebuilding: { node: string; progress: number }[];
  /** A rebuild the engine reports as failed. */
  errors: string[];
}

function parsed<T>(schema: z.ZodType<T>, items: readonly unknown[] | undefined): T[] {
  return (items ?? []).flatMap((raw) => {
    const result = schema.safeParse(raw);
    return result.success ? [result.data] : [];
  });
}

/**
 * The volumes that are not healthy (a detached volume, robustness `unknown`, is not degraded), each
 * with the replicas its engine is rebuilding and their progress. A replica is named by its node
 * where the replica objects say which one holds it, else by its address.
 */
export function volumeRebuilds(
  volumes: readonly unknown[],
  engines: readonly unknown[] | undefined,
  replicas: readonly unknown[] | undefined,
): VolumeRebuild[] {
  const knownVolumes = parsed(LonghornVolume, volumes);
  const nodeOf = new Map(parsed(LonghornReplica, replicas).map((r) => [r.metadata.name, r.spec.nodeID ?? r.metadata.name]));
  const parsedEngines = parsed(LonghornEngine, engines);
  return volumes.flatMap((raw, i): VolumeRebuild[] => {
    const volume = LonghornVolume.safeParse(raw);
    if (!volume.success) return [{ volume: `volume #${i + 1}`, robustness: 'unreadable', rebuilding: [], errors: [] }];
    const { state, robustness } = volume.data.status ?? {};
    if (robustness === 'healthy' || state === 'detached') return [];
    const name = volume.data.metadata.name;
    const rebuilding: VolumeRebuild['rebuilding'] = [];
    const errors: string[] = [];
    for (const engine of parsedEngines.filter((e) => e.spec.volumeName === name)) {
      const byAddress = new Map(
        Object.entries(engine.status?.currentReplicaAddressMap ?? {}).map(([replica, address]) => [`tcp://${address}`, replica]),
      );
      for (const [address, status] of Object.entries(engine.status?.rebuildStatus ?? {})) {
        if (status === null) continue;
        const replica = byAddress.get(address);
        const node = replica === undefined ? address : (nodeOf.get(replica) ?? replica);
        if (status.state === 'error' || (status.error ?? '') !== '')
          errors.push(`rebuild of the replica on ${node} failed: ${status.error || 'error'}`);
        else if (status.isRebuilding === true) rebuilding.push({ node, progress: status.progress ?? 0 });
      }
    }
    rebuilding.sort((a, b) => a.node.localeCompare(b.node));
    return [
      {
        volume: volumeLabel(name, knownVolumes),
        name,
        robustness: `${robustness ?? 'no robustness yet'}${state ? ` (${state})` : ''}`,
        rebuilding,
        errors,
      },
    ];
  });
}

/** One line per volume: `pvc-… (apps/db-1): degraded (attached); rebuilding on talos-prd-cp-1: 42%`. */
export function rebuildLine(rebuild: VolumeRebuild): string {
  const parts = [...rebuild.rebuilding.map((r) => `rebuilding on ${r.node}: ${r.progress}%`), ...rebuild.errors];
  return `${rebuild.volume}: ${rebuild.robustness}${parts.length > 0 ? `; ${parts.join(', ')}` : '; no rebuild reported yet'}`;
}
