import { outsideWindowRefusal } from '../../src/chat/window-refusal.ts';
import { parseKubernetesVersionInput } from '../../src/rules/versions.ts';
import { lockHeldReason, newOperation, operatorCluster, type CommandHandler } from './command-context.ts';

export const upgradeK8s: CommandHandler<'upgrade-k8s'> = async (command, slack, deps) => {
  const version = parseKubernetesVersionInput(command.version);
  if (!version.ok) return { reply: `${version.reason}. Nothing was started.` };
  const resolved = await operatorCluster(deps, slack, command.cluster, 'a Kubernetes upgrade');
  if (!resolved.ok) return { reply: resolved.reason };
  const outside = outsideWindowRefusal(resolved.cluster, deps.now());
  if (outside !== undefined) return { reply: `${outside} Nothing was started.` };
  const held = await lockHeldReason(deps, resolved.cluster);
  if (held !== undefined) return { reply: held };
  // Stored as talosctl takes it (no leading v); the plan shows Terraform's form beside it.
  const op = newOperation(deps, 'k8s-upgrade', resolved.cluster, slack, 'preflight', version.version);
  return {
    reply: `Preflight for the Kubernetes upgrade of *${resolved.cluster.name}* to ${version.version} is running (\`${op.id}\`); the plan or the refusal appears in this channel.`,
    enqueue: () => deps.lifecycle.request(op),
  };
};
