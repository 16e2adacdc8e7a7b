import { errorText } from '../../../src/chat/error-text.ts';
import { checkNodeDrain } from '../../../src/health/cluster-checks.ts';
import { drainVerdict } from '../../../src/health/rules/node-drain.ts';
import type { KubeApi } from '../../../src/kube/kube-api.ts';
import { StepFailure } from '../../engine/job-context.ts';

/** What the check reads through: a node step's or a walk's context. */
export interface DrainCheckContext {
  session: { kube: KubeApi };
  deps: { timeouts: { probeMs: number } };
  signal?: AbortSignal;
}

const UNTOUCHED = { retry: 'nothing was changed by this step; Retry judges the budgets for this node again', nodeUnchanged: true };

/**
 * Judges the disruption budgets for the drain of `node` (an address) just before it: returns a
 * one-line summary when the drain may begin, throws a {@link StepFailure} naming the budget and the
 * pod when it would block, or when the budgets cannot be read. Either stop leaves the node untouched.
 */
export async function checkDrain(ctx: DrainCheckContext, node: string): Promise<string> {
  const timeout = AbortSignal.timeout(ctx.deps.timeouts.probeMs);
  const signal = ctx.signal ? AbortSignal.any([ctx.signal, timeout]) : timeout;
  let check;
  try {
    check = await checkNodeDrain(ctx.session.kube, node, signal);
  } catch (error) {
    if (ctx.signal?.aborted === true) throw error;
    throw new StepFailure(
      `the disruption budgets for the drain of ${node} could not be read, so ${node} was not touched: ${errorText(error)}`,
      [],
      UNTOUCHED,
    );
  }
  const verdict = drainVerdict(node, check);
  if (!verdict.ok) throw new StepFailure(verdict.reason, verdict.evidence, UNTOUCHED);
  return verdict.summary;
}
