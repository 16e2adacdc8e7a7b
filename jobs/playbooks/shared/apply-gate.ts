import type { ClusterConfig } from '../../../src/config/inventory.ts';
import { alreadyFailingNote } from '../../../src/health/baseline.ts';
import type { Operation } from '../../../src/ops/operation.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { walkGate } from '../../engine/walk.ts';
import { planData } from './plan-data.ts';

/** The standard health gate after the apply; a failure stops with its evidence and reverts nothing. */
export async function gateAfterApply(ctx: WalkContext, op: Operation): Promise<StepResult> {
  // The cluster as it is now: the nodes the apply added count, though the inventory does not list them yet.
  const joined = op.steps.flatMap((s) => (s.joined === undefined ? [] : [s.joined]));
  const cluster: ClusterConfig = {
    ...ctx.cluster,
    // A replaced node comes back at its address: counted once.
    controlPlanes: [...new Set([...ctx.cluster.controlPlanes, ...joined.filter((j) => j.role === 'controlplane').map((j) => j.address)])],
    workers: [...new Set([...ctx.cluster.workers, ...joined.filter((j) => j.role === 'worker').map((j) => j.address)])],
  };
  // The nodes the apply added are new: anything unwell on them stops, as anything that got worse elsewhere.
  const drainNodes = planData(op).terraform?.drainNodes;
  const gate = await walkGate(ctx, cluster, {
    ...(drainNodes === undefined ? {} : { drainNodes }),
    baseline: {
      baseline: op.baseline,
      nodes: op.steps.flatMap((s) => (s.joined === undefined ? [] : [s.joined.address, ...(s.nodeName ? [s.nodeName] : [])])),
    },
  });
  if (!gate.passed) {
    throw new StepFailure(
      "the health gate after the apply failed; nothing was reverted automatically. Fix forward with a new reviewed change (plan, staging, then production), or follow the runbook's recovery; Retry runs the gate again",
      gate.stopReasons,
    );
  }
  const counted = joined.length > 0 ? `, counting ${joined.map((j) => j.address).join(', ')}` : '';
  return {
    event: 'health gate passed',
    detail: `health gate passed after the apply (${gate.checks.length} checks${counted})${alreadyFailingNote(gate)}`,
  };
}
