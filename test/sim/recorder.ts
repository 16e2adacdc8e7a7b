/** What tests assert invariants on: every CLI invocation, every node-level event, control-plane downtime. */
import type { CallBin, CallRecord, SimCluster, SimEvent } from './types.ts';

export class Recorder {
  readonly calls: CallRecord[] = [];
  readonly events: SimEvent[] = [];
  readonly #maxCpDown = new Map<string, number>();
  #nextCallId = 1;

  startCall(bin: CallBin, argv: string[], cwd: string, clientVersion: string | undefined): CallRecord {
    const call: CallRecord = {
      id: this.#nextCallId++,
      bin,
      argv: [...argv],
      cwd,
      ...(clientVersion ? { clientVersion } : {}),
      startedAt: Date.now(),
    };
    this.calls.push(call);
    return call;
  }

  event(event: Omit<SimEvent, 'at'>): void {
    this.events.push({ at: Date.now(), ...event });
  }

  /**
   * Re-counts control planes that are not in service; call after every stage change. A node reset
   * out of the cluster no longer counts: it left etcd and discovery on purpose.
   */
  noteControlPlanes(cluster: SimCluster): void {
    const down = cluster.nodes.filter(
      (n) => n.role === 'controlplane' && n.discoveryMember && (n.stage !== 'running' || n.servicesStopped),
    ).length;
    this.#maxCpDown.set(cluster.name, Math.max(this.#maxCpDown.get(cluster.name) ?? 0, down));
  }

  maxControlPlanesDownAtOnce(cluster: string): number {
    return this.#maxCpDown.get(cluster) ?? 0;
  }

  /**
   * Bootstrap API calls that reached a node of the cluster (`etcd-bootstrap`), refused ones included
   * unless `accepted`; only one node's with `node` (an address).
   */
  bootstrapCount(cluster: string, options: { node?: string; accepted?: boolean } = {}): number {
    return this.events.filter(
      (e) =>
        e.cluster === cluster &&
        e.kind === 'etcd-bootstrap' &&
        (options.node === undefined || e.node === options.node) &&
        (!options.accepted || e.error === undefined),
    ).length;
  }

  /** Upgrades the node accepted (rejected requests do not count). */
  upgradeCount(cluster: string, node: string): number {
    return this.events.filter((e) => e.cluster === cluster && e.kind === 'upgrade-start' && e.node === node).length;
  }
}
