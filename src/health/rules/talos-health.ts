import type { V1Pod } from '@kubernetes/client-node';
import type { HealthReport } from '../../talos/parse-health.ts';
import type { CheckResult } from '../check-result.ts';
import { oneLine, plural } from './format.ts';

const ID = 'talos-health';

/** The checks a ≥ 1.13 server skips when Talos installed no CNI (pkg/cluster/check/default.go, `cniDisabledStatus`). */
export const NODES_READY_CHECK = 'all k8s nodes to report ready';
export const COREDNS_CHECK = 'coredns to report ready';

/** Whether the output shows Talos skipped its CoreDNS check, so the gate must look at CoreDNS itself. */
export function skippedCoreDns(parsed: HealthReport): boolean {
  return parsed.checks.some((c) => c.name === COREDNS_CHECK && c.result === 'SKIP');
}

export interface TalosHealthOptions {
  /**
   * Every pod of the cluster, read through Kubernetes when Talos skipped {@link COREDNS_CHECK}:
   * the gate then asks what Talos did not, that CoreDNS (`kube-system`, `k8s-app=kube-dns`) is ready.
   */
  pods?: readonly V1Pod[];
}

function podReady(pod: V1Pod): boolean {
  return pod.status?.phase === 'Running' && (pod.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** CoreDNS judged as Talos ≤ 1.12 judged it: its pods exist and every one is ready. `undefined` when it is. */
function coreDnsProblem(pods: readonly V1Pod[]): string | undefined {
  const dns = pods.filter((p) => p.metadata?.namespace === 'kube-system' && p.metadata.labels?.['k8s-app'] === 'kube-dns');
  if (dns.length === 0) return 'no CoreDNS pod (kube-system, k8s-app=kube-dns)';
  const ready = dns.filter(podReady).length;
  return ready === dns.length ? undefined : `CoreDNS ready on ${ready} of ${plural(dns.length, 'pod')}`;
}

/**
 * The runbook's `talosctl health` verdict. Failed on a nonzero exit, naming the check it was
 * waiting for and that check's last error; also failed on exit 0 when a check never reported
 * OK/SKIP or no check ran, so truncated output can never pass. From 1.13 a server whose Talos
 * installed no CNI (a Cilium install) skips node readiness and CoreDNS: the gate judges nodes in
 * its own Kubernetes check, and CoreDNS here, from `options.pods`.
 */
export function evaluateTalosHealth(parsed: HealthReport, exitCode: number, options: TalosHealthOptions = {}): CheckResult {
  const title = 'talosctl health';
  const ok = parsed.checks.filter((c) => c.result === 'OK');
  const skipped = parsed.checks.filter((c) => c.result === 'SKIP');
  const pending = parsed.checks.filter((c) => c.result === 'pending');
  const evidence: string[] = [];
  if (parsed.discoveredNodes !== undefined) evidence.push(`discovered nodes: ${parsed.discoveredNodes.join(', ')}`);
  evidence.push(`${plural(ok.length, 'check')} OK${skipped.length > 0 ? `, skipped: ${skipped.map((c) => c.name).join(', ')}` : ''}`);
  for (const check of pending) {
    evidence.push(`waiting for ${check.name}: ${check.lastError === undefined ? 'no error reported' : oneLine(check.lastError)}`);
  }
  if (parsed.finalError !== undefined) evidence.push(`talosctl: ${oneLine(parsed.finalError)}`);
  const skippedNames = new Set(skipped.map((c) => c.name));
  if (skippedNames.has(NODES_READY_CHECK))
    evidence.push(
      `Talos skipped "${NODES_READY_CHECK}" (no CNI installed by Talos): node readiness is judged by the Kubernetes nodes check`,
    );
  const dnsProblem = skippedNames.has(COREDNS_CHECK) && options.pods !== undefined ? coreDnsProblem(options.pods) : undefined;
  if (skippedNames.has(COREDNS_CHECK) && options.pods !== undefined) {
    evidence.push(`Talos skipped "${COREDNS_CHECK}" (no CNI installed by Talos); through Kubernetes: ${dnsProblem ?? 'CoreDNS ready'}`);
  }
  const timedOut = parsed.finalErrorCode === 'DeadlineExceeded' ? ' (its --wait-timeout ran out)' : '';

  const stuck = pending[0];
  if (exitCode !== 0) {
    const summary =
      stuck === undefined
        ? `talosctl health exited with ${exitCode}: ${parsed.finalError === undefined ? 'no error text' : oneLine(parsed.finalErrorCause ?? parsed.finalError)}`
        : `talosctl health failed waiting for ${stuck.name}${stuck.lastError === undefined ? '' : `: ${oneLine(stuck.lastError)}`}${timedOut}`;
    return { id: ID, title, status: 'failed', summary, evidence };
  }
  if (stuck !== undefined) {
    return { id: ID, title, status: 'failed', summary: `talosctl health exited 0 but ${stuck.name} never reported OK`, evidence };
  }
  if (parsed.checks.length === 0) {
    return { id: ID, title, status: 'failed', summary: 'talosctl health exited 0 without reporting any check', evidence };
  }
  if (parsed.finalError !== undefined) {
    // On success talosctl ends with its last check; anything after it is an error or cut-off output.
    const tail = oneLine(parsed.finalError);
    const shown = tail.length > 200 ? `${tail.slice(0, 200)}…` : tail;
    return {
      id: ID,
      title,
      status: 'failed',
      summary: `talosctl health exited 0 but ended with text that is no check result, so its output cannot be trusted: ${shown}`,
      evidence,
    };
  }
  if (dnsProblem !== undefined) {
    return {
      id: ID,
      title,
      status: 'failed',
      summary: `talosctl health skipped its CoreDNS check, and CoreDNS is not ready: ${dnsProblem}`,
      evidence,
    };
  }
  const summary = `all ${plural(ok.length + skipped.length, 'check')} passed${skipped.length > 0 ? ` (${skipped.length} skipped)` : ''}`;
  return { id: ID, title, status: 'passed', summary, evidence };
}
