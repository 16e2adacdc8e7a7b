import type { App, BlockAction, ButtonAction, SlashCommand } from '@slack/bolt';
import { GATE_AGAIN_ACTION, parseGateAgainValue, STATUS_ACTION } from '../src/chat/buttons.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import { clusterClickRefusal } from './action-permissions.ts';
import { ephemeral } from './operation-actions.ts';
import type { Command } from './parse-command.ts';
import { runAsCommand, type CommandDeps } from './talos-command.ts';

const OP_ID = /^op-[a-z0-9]{4,40}$/;

/** What a click needs of the slash command it stands for: who, where, and an id a redelivered click repeats. */
function asSlashCommand(body: BlockAction, clickId: string): SlashCommand {
  const command = { user_id: body.user.id, channel_id: body.channel?.id ?? '', trigger_id: clickId, text: '', command: '/talos' };
  return command as SlashCommand;
}

/**
 * The buttons that stand for a `/talos` command: [Run the gate again] on a failed gate, and
 * Cancel and Record on the entries of `/talos status`. A click is the command, typed by whoever
 * clicked in the channel the button is in: the same permission, read limit and once-only enqueue.
 */
export function registerCommandButtons(app: App, deps: CommandDeps): void {
  const clusterOfChannel = (channel: string | undefined): ClusterConfig | undefined =>
    deps.inventory.clusters.find((c) => c.channel === channel);

  app.action<BlockAction<ButtonAction>>(GATE_AGAIN_ACTION, async ({ ack, body, action, respond }) => {
    await ack();
    const say = ephemeral(respond);
    const target = parseGateAgainValue(action.value);
    const cluster = clusterOfChannel(body.channel?.id);
    if (target === undefined || cluster === undefined || cluster.name !== target.cluster)
      return say('That button belongs to no health gate of this channel. Nothing was run.');
    const refusal = await clusterClickRefusal(deps.authorizer, cluster, GATE_AGAIN_ACTION, body.user.id);
    if (refusal !== undefined) return say(refusal);
    const slack = asSlashCommand(body, `gate-again-${target.gateJob}`);
    const limited = deps.readLimiter?.refusal({ kind: 'health', cluster: cluster.name }, slack);
    if (limited !== undefined) return say(limited);
    // One run again per failed verdict: a second click, or a click on a verdict already run again, is told where the newer one is.
    if (!(await deps.dedupe.claim(`gate-again-${target.gateJob}`)))
      return say(
        `This gate of *${cluster.name}* was already run again; its verdict is the newer health gate message in <#${cluster.channel}>. Nothing was run. \`/talos health\` runs another.`,
      );
    // The limit was spent above: the command runs without spending a second token.
    await runAsCommand({ kind: 'health', cluster: cluster.name }, slack, { ...deps, readLimiter: undefined }, say);
  });

  const operationButton = (actionId: string, command: (op: string) => Command) =>
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action, respond }) => {
      await ack();
      const say = ephemeral(respond);
      const op = action.value ?? '';
      const cluster = clusterOfChannel(body.channel?.id);
      if (!OP_ID.test(op) || cluster === undefined) return say('That button belongs to no operation of this channel. Nothing changed.');
      const refusal = await clusterClickRefusal(deps.authorizer, cluster, actionId, body.user.id);
      if (refusal !== undefined) return say(refusal);
      // A redelivered click carries the same action_ts, so it maps to the same job.
      await runAsCommand(command(op), asSlashCommand(body, `${actionId}-${op}-${action.action_ts}`), deps, say);
    });
  operationButton(STATUS_ACTION.cancel, (op) => ({ kind: 'cancel', op }));
  operationButton(STATUS_ACTION.record, (op) => ({ kind: 'record', op }));
  // A link button: Slack opens the thread itself and sends the click all the same, which must be acked.
  app.action(STATUS_ACTION.open, async ({ ack }) => {
    await ack();
  });
}
