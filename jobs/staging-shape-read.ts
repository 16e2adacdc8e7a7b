import type { ClusterAccess } from '../src/cluster/cluster-session.ts';
import type { Inventory } from '../src/config/inventory.ts';
import type { Observed } from '../src/rules/gate-result.ts';
import { shapeOf, type ClusterShapeSeen } from '../src/rules/readiness/staging-shape.ts';

/**
 * The staging cluster's shape as a second session observes it, for production's report only;
 * `undefined` for any other cluster. Reading it is bounded like every other probe by `observe`.
 */
export async function stagingShapeFor(
  environment: string,
  inventory: Inventory,
  access: ClusterAccess,
  observe: <T>(probe: (s: AbortSignal) => Promise<T>) => Promise<Observed<T>>,
): Promise<{ staging: Observed<ClusterShapeSeen> | undefined } | undefined> {
  if (environment !== 'production') return undefined;
  const staging = inventory.clusters.find((c) => c.environment === 'staging');
  if (staging === undefined) return { staging: undefined };
  const shape = await observe((s) =>
    access.withSession(staging, s, async (session) => {
      const nodes = await session.kube.listNodes(s);
      const settings = await session.kube.listLonghornSettings(s);
      return shapeOf(session.cluster, nodes, settings !== undefined);
    }),
  );
  return { staging: shape };
}
