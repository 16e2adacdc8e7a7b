import type { CommandHandler } from './command-context.ts';
import { nodeCommand } from './node-command.ts';

export const rollback: CommandHandler<'rollback'> = (command, slack, deps) =>
  nodeCommand({ node: command.node, cluster: command.cluster, kind: 'node-rollback', what: 'a node rollback' }, slack, deps);
