import { observeEtcdStatus } from '../talos/observe.ts';
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
  const { rows, nodeErrors } = await observeEtcdStatus(talosctl, controlPlanes, signal, endpoints);
  return evaluateEtcdStatus(rows, controlPlanes, nodeErrors);
}
