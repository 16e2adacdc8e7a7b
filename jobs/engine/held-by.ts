import { operationRefById } from '../../src/chat/operation-link.ts';
import type { OpsJobDeps } from './job-context.ts';

/**
 * A preflight's refusal while another operation holds the cluster, naming the holder with a
 * link to its thread: `wait` says what to do until it ends.
 */
export async function heldByRefusal(
  deps: Pick<OpsJobDeps, 'store' | 'chat'>,
  cluster: string,
  holder: string,
  wait = 'wait for it to finish',
): Promise<string> {
  return `operation ${await operationRefById(deps, holder)} holds ${cluster}; ${wait}, or \`/talos cancel ${holder}\``;
}
