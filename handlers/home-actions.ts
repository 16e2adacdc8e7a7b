import type { App, BlockAction, ButtonAction, SlashCommand } from '@slack/bolt';
import { HOME_ACTION } from '../src/chat/buttons.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import type { Block } from '../src/port/chat-port.ts';
import { clusterClickRefusal } from './action-permissions.ts';
import { guidedForm, openGuided, type GuidedDeps } from './guided-commands.ts';
import type { Command } from './parse-command.ts';
import { runAsCommand } from './talos-command.ts';

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The operators' buttons on a cluster of the Home tab. A click from the Home has no channel and no
 * response_url: it runs as the command typed in the cluster's channel, and every answer goes
 * there to the clicker alone.
 * Each click is checked again: the Home drawn for someone else, or a forged payload, changes nothing.
 */
export function registerHomeActions(app: App, deps: GuidedDeps): void {
  /**
   * Tells `user` privately in the cluster's channel. The bot has no other place to answer a Home
   * click (its Messages tab is off); a reply Slack will not show there (the user is not in the
   * channel) is logged, and never throws.
   */
  const tell = (cluster: ClusterConfig | undefined, user: string) => async (text: string, blocks?: Block[]) => {
    if (cluster === undefined) {
      deps.logger.info({ user, reply: text }, 'home button names no cluster; nowhere to answer');
      return;
    }
    await deps.chat.ephemeral(cluster.channel, user, { text, ...(blocks ? { blocks } : {}) }).then(
      () => undefined,
      (error: unknown) => deps.logger.warn({ user, cluster: cluster.name, err: errorText(error) }, 'home button reply not delivered'),
    );
  };

  /** The cluster a click names, when the clicker may act on it; else undefined, the clicker told why. */
  const checked = async (actionId: string, body: BlockAction, value: string | undefined): Promise<ClusterConfig | undefined> => {
    const cluster = deps.inventory.clusters.find((c) => c.name === value);
    const say = tell(cluster, body.user.id);
    if (cluster === undefined) {
      await say('That button belongs to no cluster of the inventory; open the Home tab again. Nothing changed.');
      return undefined;
    }
    const refusal = await clusterClickRefusal(deps.authorizer, cluster, actionId, body.user.id);
    if (refusal !== undefined) {
      deps.logger.info({ user: body.user.id, cluster: cluster.name, button: actionId }, 'home button refused');
      await say(refusal);
      return undefined;
    }
    return cluster;
  };

  /** A click as the command typed in the cluster's channel; a redelivered click carries the same action_ts, so the same job. */
  const asCommand = (actionId: string, command: (cluster: string) => Command) =>
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action }) => {
      await ack();
      const cluster = await checked(actionId, body, action.value);
      if (cluster === undefined) return;
      const slack = {
        user_id: body.user.id,
        channel_id: cluster.channel,
        trigger_id: `${actionId}-${cluster.name}-${action.action_ts}`,
        text: '',
        command: '/talos',
      } as SlashCommand;
      await runAsCommand(command(cluster.name), slack, deps, tell(cluster, body.user.id));
    });
  asCommand(HOME_ACTION.gate, (cluster) => ({ kind: 'health', cluster }));
  asCommand(HOME_ACTION.snapshot, (cluster) => ({ kind: 'snapshot', cluster }));

  /** The guided form, on the click's trigger_id (valid 3 s, so acked first), the cluster chosen. */
  const guided = (actionId: string, kind: 'talos-upgrade' | 'k8s-upgrade') =>
    app.action<BlockAction<ButtonAction>>(actionId, async ({ ack, body, action, client }) => {
      await ack();
      const cluster = await checked(actionId, body, action.value);
      if (cluster === undefined) return;
      const say = tell(cluster, body.user.id);
      try {
        const refusal = await openGuided(client, body.trigger_id, body.user.id, cluster.channel, kind, deps);
        if (refusal !== undefined) await say(refusal);
      } catch (error) {
        deps.logger.warn({ kind, err: errorText(error) }, 'guided form not opened from the home tab');
        await say(
          `The form could not open (${errorText(error)}). Nothing was started; type the command in <#${cluster.channel}> instead, e.g. \`${guidedForm(kind)?.form.typed.replace(/CLUSTER$/, cluster.name) ?? '/talos help'}\`.`,
        );
      }
    });
  guided(HOME_ACTION.upgradeTalos, 'talos-upgrade');
  guided(HOME_ACTION.upgradeK8s, 'k8s-upgrade');
}
