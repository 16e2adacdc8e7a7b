import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { parseTalosVersionInput } from '../../src/rules/versions.ts';
import { lockHeldReason, newOperation, operatorCluster, type CommandHandler } from './command-context.ts';

export const upgradeTalos: CommandHandler<'upgrade-talos'> = async (command, slack, deps) => {
  const version = parseTalosVersionInput(command.version);
  if (!version.ok) return { reply: `${version.reason}. Nothing was started.` };
  const resolved = await operatorCluster(deps, slack, command.cluster, 'a Talos upgrade');
  if (!resolved.ok) return { reply: resolved.reason };
  const outside = outsideWindowRefusal(resolved.cluster, deps.now());
  if (outside !== undefined) return { reply: `${outside} Nothing was started.` };
  const held = await lockHeldReason(deps, resolved.cluster);
  if (held !== undefined) return { reply: held };
  const op = newOperation(deps, 'talos-upgrade', resolved.cluster, slack, 'preflight', version.version);
  return {
    reply: `Preflight for the Talos upgrade of *${resolved.cluster.name}* to ${version.version} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
    enqueue: () => deps.lifecycle.request(op),
  };
};
