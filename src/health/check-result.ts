/** One check of the health gate, as the runbook names it, with the evidence an operator needs. */
export type CheckStatus = 'passed' | 'failed' | 'warning';

/**
 * One thing the check found unwell, named so that a later gate can tell whether it is the same
 * thing (see `baseline.ts`): a pod, a Flux object, a Longhorn volume.
 */
export interface UnwellItem {
  /** Stable across a drain: a ReplicaSet's pods share their ReplicaSet's key, a DaemonSet's pod is keyed by its node. */
  key: string;
  kind: 'pod' | 'flux' | 'longhorn';
  /** `apps/podinfo-7d9c…`, `Kustomization flux-system/apps`, a volume with its claim. */
  name: string;
  /** The Kubernetes node it runs on, where it has one. */
  node?: string;
  reason: string;
  /** Whether this item alone fails the check in the mode it ran in (a Flux object still reconciling fails only the final verification). */
  stops: boolean;
  /** No baseline tolerates it: what the runbook stops on whenever it is found (a stalled Flux object). */
  neverBaseline?: boolean;
}

export interface CheckResult {
  /** Stable identifier, e.g. `etcd-status`, `nodes`, `flux`. */
  id: string;
  /** What was checked, for the thread reply, e.g. `etcd status (10.0.30.11, 10.0.30.12, 10.0.30.13)`. */
  title: string;
  status: CheckStatus;
  /** One sentence: why it passed or the stop reason. */
  summary: string;
  /** Evidence lines: table rows, the unavailable node, the stalled object and its message. */
  evidence: string[];
  /** Wall time of the probe behind this check, in milliseconds. */
  durationMs?: number;
  /**
   * A failure that waiting may clear (pods starting, Cilium agents coming up, Flux reconciling):
   * the final verification waits for these, up to its settle window, before it stops.
   */
  settling?: boolean;
  /** What the operation will do to the cluster that the operator should hear of in the plan, e.g. `the primary of apps/db moves to db-2 …`. */
  announce?: string[];
  /** What the check found unwell, item by item, where it judges items (pods, Flux objects). */
  unwell?: UnwellItem[];
}
