import type { Inventory } from '../config/inventory.ts';
import type { OperationKind } from './operation.ts';
import type { OperationStore } from './operation-store.ts';

/**
 * The runbook tests "the exact target in staging" first. The bot's own records show
 * whether a staging upgrade of the same kind to the same version completed; the id of
 * that operation, or undefined when there is none.
 */
export async function findStagingRehearsal(store: OperationStore, inventory: Inventory, kind: OperationKind, version: string): Promise<string | undefined> {
  for (const staging of inventory.clusters.filter((c) => c.environment === 'staging')) {
    const ops = await store.listForCluster(staging.name, 500);
    const done = ops.find((o) => o.kind === kind && o.state === 'completed' && o.target.version === version);
    if (done) return done.id;
  }
  return undefined;
}
