import type { ClusterConfig, Inventory } from './inventory.ts';
import type { TalosMinorSupport } from './talos-support.ts';

/** How many operations' clusters are remembered: far more than ever run at once. */
const MAX_PINS = 1000;

/**
 * The inventory in force, replaced whole when the file is reloaded. It reads as an `Inventory`
 * (its `clusters` are always the current ones), so whatever holds it sees a reload at its next
 * read; `current()` gives one consistent snapshot for a caller that reads several times.
 */
export class InventoryHolder implements Inventory {
  #current: Inventory;
  #generation = 0;
  readonly #pins = new Map<string, ClusterConfig>();

  constructor(initial: Inventory) {
    this.#current = initial;
  }

  current(): Inventory {
    return this.#current;
  }

  get clusters(): ClusterConfig[] {
    return this.#current.clusters;
  }

  /** The support table rows of the file as it is now: a minor added by an edit counts for the next preflight. */
  get talosSupport(): TalosMinorSupport[] | undefined {
    return this.#current.talosSupport;
  }

  /** How many times the inventory was replaced since start. */
  get generation(): number {
    return this.#generation;
  }

  replace(next: Inventory): void {
    this.#current = next;
    this.#generation += 1;
  }

  /**
   * The cluster definition an operation runs with: the one this process first gave it, so an
   * edit of the file reaches new operations and leaves a running one as it started.
   */
  forOperation(op: { id: string; cluster: string }): ClusterConfig | undefined {
    const pinned = this.#pins.get(op.id);
    if (pinned !== undefined) return pinned;
    const cluster = this.#current.clusters.find((c) => c.name === op.cluster);
    if (cluster === undefined) return undefined;
    if (this.#pins.size >= MAX_PINS) this.#pins.delete(this.#pins.keys().next().value!);
    this.#pins.set(op.id, cluster);
    return cluster;
  }
}

/** The cluster of an operation: its pinned definition when `inventory` is the reloadable holder, else by name. */
export function clusterForOperation(inventory: Inventory, op: { id: string; cluster: string }): ClusterConfig | undefined {
  if (inventory instanceof InventoryHolder) return inventory.forOperation(op);
  return inventory.clusters.find((c) => c.name === op.cluster);
}
