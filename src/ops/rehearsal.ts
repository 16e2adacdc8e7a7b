import type { Inventory } from '../config/inventory.ts';
import type { OperationKind } from './operation.ts';
import type { OperationStore } from './operation-store.ts';
import { threadLink, type ThreadLinkDeps } from './thread-link.ts';

/**
 * The runbook tests "the exact target in staging" first. The bot's own records show
 * whether a staging upgrade of the same kind to the same version completed: that
 * operation and the link to its thread, or nothing when there is none.
 */
export async function findStagingRehearsal(
  deps: ThreadLinkDeps & { store: OperationStore; inventory: Inventory },
  kind: OperationKind,
  version: string,
): Promise<{ stagingOp?: string; stagingLink?: string }> {
  for (const staging of deps.inventory.clusters.filter((c) => c.environment === 'staging')) {
    const ops = await deps.store.listForCluster(staging.name, 500);
    const done = ops.find((o) => o.kind === kind && o.state === 'completed' && o.target.version === version);
    if (done === undefined) continue;
    const link = await threadLink(deps, done);
    return link === undefined ? { stagingOp: done.id } : { stagingOp: done.id, stagingLink: link };
  }
  return {};
}
