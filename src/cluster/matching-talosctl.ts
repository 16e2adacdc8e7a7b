import type { Talosctl } from '../talos/talosctl.ts';
import { runningTalosVersion } from '../talos/running-version.ts';
import type { ClusterSession } from './cluster-session.ts';

/** talosctl of the running Talos version, or the closest one available, for read-only work such as the gate. */
export async function matchingTalosctl(session: ClusterSession, timeoutMs: number, signal?: AbortSignal): Promise<Talosctl> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const running = await runningTalosVersion(session.kube, signal ? AbortSignal.any([signal, timeout]) : timeout);
  if (running !== undefined) {
    try {
      return await session.talosctl(running, { closest: true });
    } catch {
      // No binary of that version: the version check of the gate reports the mismatch.
    }
  }
  return session.talosctl();
}
