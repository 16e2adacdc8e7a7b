import { join } from 'node:path';
import type { OpsJobDeps } from '../../engine/job-context.ts';

/** The private directory that keeps an operation's reviewed plan until its Apply. */
export function planDirOf(deps: Pick<OpsJobDeps, 'planDir'>, opId: string): string {
  return join(deps.planDir, opId);
}
