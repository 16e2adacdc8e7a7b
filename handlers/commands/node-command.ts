import type { SlashCommand } from '@slack/bolt';
import type { OperationKind } from '../../jobs/playbooks/index.ts';
import { allNodes, type ClusterConfig } from '../../src/config/inventory.ts';
import type { Operation } from '../../src/ops/operation.ts';
import { lockHeldReason, newOperation, operatorCluster, type CommandDeps, type Outcome } from './command-context.ts';

interface NodeCommand {
  node: string;
  cluster?: string;
  kind: Extract<OperationKind, 'node-rollback' | 'node-remove'>;
  /** For messages: "a node rollback". */
  what: string;
  /** An inventory-only refusal (no cluster access needed), or undefined. */
  refuse?: (cluster: ClusterConfig, node: string) => string | undefined;
}

/** `/talos rollback|remove <node>`: an operator asks about a node of the inventory; the preflight job does the rest. */
export async function nodeCommand(spec: NodeCommand, slack: SlashCommand, deps: CommandDeps): Promise<Outcome> {
  const resolved = await operatorCluster(deps, slack, spec.cluster, spec.what);
  if (!resolved.ok) return { reply: resolved.reason };
  const { cluster } = resolved;
  if (!allNodes(cluster).includes(spec.node)) {
    return {
      reply: `${spec.node} is not a node of *${cluster.name}*. Known addresses: ${allNodes(cluster).join(', ')}. Nothing was started.`,
    };
  }
  const refusal = spec.refuse?.(cluster, spec.node);
  if (refusal !== undefined) return { reply: `${refusal} Nothing was started.` };
  const held = await lockHeldReason(deps, cluster);
  if (held !== undefined) return { reply: held };
  const created = newOperation(deps, spec.kind, cluster, slack, 'preflight');
  const op: Operation = { ...created, target: { node: spec.node } };
  return {
    reply: `Preflight for ${spec.what} of ${spec.node} on *${cluster.name}* is running (\`${op.id}\`); the plan and the approval request, or the refusal, appear in this channel.`,
    enqueue: () => deps.lifecycle.request(op),
  };
}
