import { observeEtcdStatus, type EtcdStatusObservation } from '../talos/observe.ts';
import type { Talosctl } from '../talos/talosctl.ts';
import type { CheckResult } from './check-result.ts';
import { evaluateEtcdStatus } from './rules/etcd-status.ts';

/** etcd quorum and a single agreed leader across every control plane, as the gate judges it. */
export async function checkEtcdQuorum(
  talosctl: Talosctl,
  controlPlanes: string[],
  signal?: AbortSignal,
  endpoints?: string[],
): Promise<CheckResult> {
  return judgeEtcdQuorum(await observeEtcdStatus(talosctl, controlPlanes, signal, endpoints), controlPlanes);
}

/** The same verdict on an `etcd status` already read, for a caller that needs the rows too and reads them once. */
export function judgeEtcdQuorum(observation: EtcdStatusObservation, controlPlanes: string[]): CheckResult {
  return evaluateEtcdStatus(observation.rows, controlPlanes, observation.nodeErrors);
}
