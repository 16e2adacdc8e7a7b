import type { SlashCommand } from '@slack/bolt';
import type { CommandRequest } from '../../jobs/engine/playbook.ts';
import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { resolveNode } from '../../src/rules/node-resolution.ts';
import type { Operation } from '../../src/ops/operation.ts';
import type { OperationKind } from '../../jobs/playbooks/index.ts';
import { lockHeldReason, newOperation, operatorCluster, type CommandDeps, type Outcome } from './command-context.ts';

/** A playbook's command as the parser gives it: its argument, if it takes one, and the cluster named. */
export interface PlaybookRequest {
  version?: string;
  node?: string;
  cluster?: string;
}

/**
 * `/talos <a playbook's command>`: an operator of the cluster, in its channel, asks for the
 * operation. What the inventory and the lock alone decide is refused at once, as the playbook
 * declares; the preflight job checks everything else against the cluster.
 */
export async function requestPlaybook(
  kind: OperationKind,
  request: CommandRequest,
  command: PlaybookRequest,
  slack: SlashCommand,
  deps: CommandDeps,
): Promise<Outcome> {
  let version: string | undefined;
  if (request.version !== undefined) {
    const parsed = request.version(command.version ?? '');
    if (!parsed.ok) return { reply: `${parsed.reason}. Nothing was started.` };
    version = parsed.version;
  }
  const resolved = await operatorCluster(deps, slack, command.cluster, request.what);
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  const clusterRefusal = request.refuseCluster?.(cluster, deps.inventory);
  if (clusterRefusal !== undefined) return { reply: `${clusterRefusal} Nothing was started.` };
  let node: string | undefined;
  let named: Operation['target']['namedAs'];
  let said: string | undefined;
  if (command.node !== undefined) {
    const look = await deps.observedEstates?.read(cluster.name);
    const found = resolveNode(cluster, command.node, look, deps.now());
    if (!found.ok) return { reply: `${found.reason} Nothing was started.` };
    node = found.address;
    named = found.named;
    said = found.said;
    const refusal = request.refuseNode?.(cluster, node);
    if (refusal !== undefined) return { reply: `${refusal} Nothing was started.` };
  }
  if (request.refuseAtOnce.window === true) {
    const outside = outsideWindowRefusal(cluster, deps.now());
    if (outside !== undefined) return { reply: `${outside} Nothing was started.` };
  }
  if (request.refuseAtOnce.lock === true) {
    const held = await lockHeldReason(deps, cluster);
    if (held !== undefined) return { reply: held };
  }
  const created = newOperation(deps, kind, cluster, slack, 'preflight', version);
  const op: Operation = node === undefined ? created : { ...created, target: { node, ...(named ? { namedAs: named } : {}) } };
  const queued = request.queued(op, cluster);
  return { reply: said === undefined ? queued : `${said} ${queued}`, enqueue: () => deps.lifecycle.request(op) };
}
