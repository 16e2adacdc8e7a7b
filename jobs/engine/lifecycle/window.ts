import type { Operation } from '../../../src/ops/operation.ts';
import { outsideWindowRefusal } from '../../../src/chat/window-refusal.ts';
import { clusterOf, type MoveDeps } from './deps.ts';

/** Production's window, checked at every approval and retry, as the engine checks it before every step. */
export function windowRefusalFor(deps: MoveDeps, op: Operation, stepId: string): string | undefined {
  if (!deps.policy.heldByWindows(op.kind) || op.steps.find((s) => s.id === stepId)?.windowOverride !== undefined) return undefined;
  const refusal = outsideWindowRefusal(clusterOf(deps, op), deps.now());
  return refusal === undefined ? undefined : `${refusal} Click again once the window is open. Nothing changed.`;
}
