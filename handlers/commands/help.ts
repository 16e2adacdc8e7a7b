import type { PlaybookCommand } from '../../jobs/engine/playbook.ts';
import { PLAYBOOK_COMMANDS } from '../../jobs/playbooks/index.ts';
import type { ClusterConfig, Inventory } from '../../src/config/inventory.ts';
import { usage } from '../parse-command.ts';
import type { ImmediateHandler } from './command-context.ts';

/** A playbook's help line, with its form when the argument may be left out. */
function line(c: PlaybookCommand): string {
  const form = c.form === undefined || c.argument.kind === 'none' ? '' : ` (leave out the ${c.argument.kind} for a form)`;
  return `• \`${usage(c)}\` — ${c.help}${form}`;
}

/**
 * One cluster's role for this user, from the inventory alone (help is answered in the ack, before
 * any Slack call): listed by id, or possibly through a user group the bot cannot read here.
 */
function roleOn(cluster: ClusterConfig, user: string): { text: string; operator: boolean } {
  const role = (ids: readonly string[], name: string): string | undefined => {
    if (ids.includes(user)) return name;
    const groups = ids.filter((id) => id.startsWith('S'));
    return groups.length === 0 ? undefined : `${name} if you are in ${groups.map((g) => `<!subteam^${g}>`).join(' or ')}`;
  };
  const operator = role(cluster.operators, 'operator');
  const approver = role(cluster.approvers, 'approver');
  const roles = [operator, approver].filter((r): r is string => r !== undefined);
  const text = roles.length === 0 ? 'neither operator nor approver: you can look' : roles.join('; ');
  return { text: `• *${cluster.name}* (<#${cluster.channel}>): ${text}`, operator: cluster.operators.includes(user) };
}

/** `/talos help` for `user`: the commands grouped by intent, their role on each cluster, and two commands to try now. */
export function helpFor(inventory: Inventory, user: string, commands: readonly PlaybookCommand[] = PLAYBOOK_COMMANDS): string {
  const roles = inventory.clusters.map((c) => roleOn(c, user));
  const operated = inventory.clusters.find((_, i) => roles[i]!.operator);
  const first = inventory.clusters[0];
  const versionForm = commands.find((c) => c.form !== undefined && c.argument.kind === 'version');
  const examples = [
    first === undefined ? '`/talos status`' : `\`/talos health ${first.name}\` (in <#${first.channel}>)`,
    operated === undefined || versionForm === undefined
      ? '`/talos status`'
      : `\`/talos ${versionForm.words.join(' ')}\` (in <#${operated.channel}>: a form with the releases)`,
  ];
  return [
    "*`/talos` commands* (the cluster defaults to this channel's cluster)",
    '*Look* (anyone):',
    '• `/talos health [cluster]` — run the standard health gate',
    '• `/talos gates [cluster]` — production-readiness report',
    '• `/talos status` — running and recent operations',
    '• `/talos record <op>` — the maintenance record of an operation',
    '*Change* (operators, in the cluster channel; approvers approve each step):',
    ...commands.filter((c) => c.group === 'change').map(line),
    '*Manage*:',
    ...commands.filter((c) => c.group === 'manage').map(line),
    '• `/talos cancel <op>` — stop an operation between steps',
    '• `/talos help` — this list',
    '*You*:',
    ...roles.map((r) => r.text),
    `*Try*: ${examples.join(' or ')}`,
  ].join('\n');
}

export const help: ImmediateHandler<'help'> = (_command, slack, deps) => ({ reply: helpFor(deps.inventory, slack.user_id) });
