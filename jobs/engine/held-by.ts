import { operationRef, operationRefById } from '../../src/chat/operation-link.ts';
import type { OpsJobDeps } from './job-context.ts';
import type { PreflightDeps } from './playbook.ts';

/**
 * A preflight's refusal while another operation holds the cluster, naming the holder with a
 * link to its thread: `wait` says what to do until it ends.
 */
export async function heldByRefusal(
  deps: Pick<OpsJobDeps, 'store' | 'chat'> | Pick<PreflightDeps, 'store' | 'link'>,
  cluster: string,
  holder: string,
  wait = 'wait for it to finish',
): Promise<string> {
  // A playbook's preflight links through the engine, which keeps the link on the holder.
  const ref =
    'link' in deps
      ? operationRef(
          holder,
          await deps.store.get(holder).then(
            (op) => (op === undefined ? undefined : deps.link(op)),
            () => undefined,
          ),
        )
      : await operationRefById(deps, holder);
  return `operation ${ref} holds ${cluster}; ${wait}, or \`/talos cancel ${holder}\``;
}
