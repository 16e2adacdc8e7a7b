import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { ClusterConfig } from '../../src/config/inventory.ts';
import { runHealthGate } from '../../src/health/health-gate.ts';
import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { probeSignals, type OpsJobDeps } from './job-context.ts';
import { talosctlClientCheck } from './talosctl-client.ts';
import { heldByRefusal } from './held-by.ts';
import type { CommonCheckInput } from './playbook.ts';

/**
 * The refusals most playbooks share, declared rather than written in each preflight. The engine
 * adds them after the playbook's own, in this order: the talosctl client, the health gate, the
 * maintenance window, the cluster lock.
 */
export interface PreflightChecks {
  /** `talosctl version --client` against the Talos the nodes run (`common.running`). */
  talosctlClient?: boolean;
  /** The health gate must pass. `announce`: a passed gate's announcements (switchovers, rebuilds) go into the plan's notes. */
  healthGate?: { announce?: boolean };
  /** Production's maintenance window must be open. */
  window?: boolean;
  /** No other operation may hold the cluster (`common.lockFrom` may hand its lock over). `wait` says what to do until it ends. */
  lockFree?: { wait?: string };
}

/** What the common checks found, and the lock the operation takes over when it starts. */
export interface CommonCheckOutcome {
  refusals: string[];
  notes: string[];
  takesLockFrom?: string;
}

/** Runs the common checks a playbook declared, with what its preflight handed over. */
export async function runCommonChecks(
  deps: OpsJobDeps,
  cluster: ClusterConfig,
  session: ClusterSession,
  checks: PreflightChecks,
  input: CommonCheckInput,
  signal?: AbortSignal,
): Promise<CommonCheckOutcome> {
  const refusals: string[] = [];
  const notes: string[] = [];
  const probe = probeSignals(deps.timeouts.probeMs, signal);
  const talosctl = input.talosctl ?? (await session.talosctl(input.running, { closest: true }));
  if (checks.talosctlClient === true) {
    const client = input.clientRefusal ?? (await talosctlClientCheck(talosctl, input.running, probe(), input.where));
    if (client !== undefined) refusals.push(client);
  }
  if (checks.healthGate !== undefined) {
    const gate = await runHealthGate(cluster, {
      talosctl,
      kube: session.kube,
      probeTimeoutMs: deps.timeouts.probeMs,
      signal,
      ...(input.drainNodes ? { drainNodes: input.drainNodes } : {}),
    });
    if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);
    // What the drains will do that the operator should know before approving: switchovers, Longhorn's rebuilds.
    else if (checks.healthGate.announce === true) notes.push(...gate.checks.flatMap((c) => c.announce ?? []));
  }
  if (checks.window === true) {
    const window = outsideWindowRefusal(cluster, deps.now());
    if (window !== undefined) refusals.push(window);
  }
  let takesLockFrom: string | undefined;
  if (checks.lockFree !== undefined) {
    const holder = await deps.lock.holder(cluster.name);
    // The lock is also what keeps two control-plane rollbacks from ever running at once; a stopped upgrade hands its lock over.
    if (holder !== undefined && holder === input.lockFrom) takesLockFrom = holder;
    else if (holder !== undefined) refusals.push(await heldByRefusal(deps, cluster.name, holder, checks.lockFree.wait));
  }
  return { refusals, notes, takesLockFrom };
}
