import { doctorReportText } from '../../src/chat/doctor-report.ts';
import { mention } from '../../src/chat/blocks.ts';
import type { CommandHandler } from './command-context.ts';

/**
 * `/talos doctor`: for the operators of at least one cluster, since the report names the bot's
 * directories, Terraform paths and Redis host. Answered privately through the response_url once
 * every check has reported; each check is bounded, so the answer comes within one bound.
 */
export const doctor: CommandHandler<'doctor'> = async (_command, slack, deps) => {
  let allowed = false;
  for (const cluster of deps.inventory.clusters) {
    if (await deps.authorizer.isMember(slack.user_id, cluster.operators)) {
      allowed = true;
      break;
    }
  }
  if (!allowed) {
    const who = deps.inventory.clusters.map((c) => `*${c.name}*: ${c.operators.map(mention).join(', ')}`).join('; ');
    return {
      reply: `Only the operators of a cluster may run \`/talos doctor\` (${who}). Ask one of them, or have yourself added to \`operators\` in the inventory. Nothing was checked.`,
    };
  }
  if (deps.doctor === undefined) return { reply: '`/talos doctor` is not available in this version of the bot.' };
  return { reply: doctorReportText(await deps.doctor()) };
};
