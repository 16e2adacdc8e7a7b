import { join } from 'node:path';
import type { PlaybookDeps } from '../../engine/playbook.ts';

/** The private directory that keeps an operation's reviewed plan until its Apply. */
export function planDirOf(deps: Pick<PlaybookDeps, 'planDir'>, opId: string): string {
  return join(deps.planDir, opId);
}
