import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText } from '../../../src/chat/error-text.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { PostedOperation } from '../../engine/playbook.ts';
import { planDirOf } from './plan-dir.ts';

/** The file the whole plan text goes to (`tofu show`, sensitive values hidden), attached in the operation's thread. */
export function planFileName(opId: string): string {
  return `${opId}-tofu-plan.txt`;
}

/** The reviewed plan's text (`tofu show -no-color`, sensitive values hidden) attached in the operation's thread; a failed upload is logged. */
export async function attachPlanText(deps: PlaybookDeps, op: PostedOperation): Promise<void> {
  const content = await readFile(join(planDirOf(deps, op.id), 'tfplan.txt'), 'utf8').catch(() => undefined);
  if (content === undefined) return;
  await deps.chat
    .upload(op.channel, op.rootTs, {
      filename: planFileName(op.id),
      title: `tofu show of the plan of ${op.id} (${op.cluster})`,
      content,
    })
    .catch((error: unknown) => deps.logger.warn({ op: op.id, err: errorText(error) }, 'plan text not attached'));
}
