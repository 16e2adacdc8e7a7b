import type { App, BlockAction, ButtonAction, ViewSubmitAction } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { parseSignOffValue, SIGN_OFF_ACTION } from '../src/chat/buttons.ts';
import { manualGates } from '../src/rules/readiness-manual.ts';
import { parseSignOffMetadata, SIGN_OFF_VIEW, signOffView } from '../src/chat/sign-off-view.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import { clusterClickRefusal } from './action-permissions.ts';
import { slackError } from './authorize.ts';
import { ephemeral, type ActionDeps } from './operation-actions.ts';

/** A gate's title for the modal, from the gates only a person can judge; the id itself for any other. */
function gateTitle(gate: string): { title: string; summary: string } {
  const known = Object.values(manualGates()).find((g) => g.id === gate);
  if (known !== undefined) return { title: known.title, summary: known.summary };
  return { title: gate, summary: 'confirm by hand what the gate asks, as its reply in the report says' };
}

/**
 * [Sign off] on a by-hand gate of `/talos gates`: an approver of the cluster, in its channel, on the
 * cluster's latest report, opens a modal that asks for the evidence; Submit records the sign-off
 * through the lifecycle after the same checks again. Anything else is refused, and nothing changes.
 */
export function registerSignOffAction(app: App, deps: ActionDeps): void {
  const clusterNamed = (name: string | undefined): ClusterConfig | undefined => deps.inventory.clusters.find((c) => c.name === name);

  /** Undefined when `user` may sign off on `cluster` from `channel`, else the refusal. */
  const refusal = async (cluster: ClusterConfig | undefined, channel: string | undefined, user: string): Promise<string | undefined> => {
    if (cluster === undefined) return 'That button belongs to no cluster the bot knows. Nothing changed.';
    if (channel !== cluster.channel) return `*${cluster.name}*'s gates are signed off only in <#${cluster.channel}>. Nothing changed.`;
    return clusterClickRefusal(deps.authorizer, cluster, SIGN_OFF_ACTION, user);
  };

  app.action<BlockAction<ButtonAction>>(SIGN_OFF_ACTION, async ({ ack, body, action, respond, client }) => {
    await ack();
    const say = ephemeral(respond);
    const target = parseSignOffValue(action.value);
    if (target === undefined) return say('That button belongs to no gate the bot knows. Nothing changed.');
    const cluster = clusterNamed(target.cluster);
    const refused = await refusal(cluster, body.channel?.id, body.user.id);
    if (refused !== undefined) return say(refused);
    const click = { ...target, user: body.user.id };
    const stale = await deps.lifecycle.signOffRefusal(click);
    if (stale !== undefined && !stale.ok) return say(stale.message);
    const { title, summary } = gateTitle(target.gate);
    const view = signOffView({ cluster: target.cluster, title, summary, value: action.value ?? '', channel: cluster!.channel });
    try {
      await client.views.open({ trigger_id: body.trigger_id, view: view as unknown as Parameters<WebClient['views']['open']>[0]['view'] });
    } catch (error) {
      deps.logger.warn({ cluster: target.cluster, gate: target.gate, err: slackError(error) }, 'the sign-off modal did not open');
      return say('Slack did not open the sign-off form. Click [Sign off] again. Nothing changed.');
    }
  });

  app.view<ViewSubmitAction>(SIGN_OFF_VIEW.callbackId, async ({ ack, body, view, client }) => {
    const user = body.user.id;
    const metadata = parseSignOffMetadata(view.private_metadata);
    const target = parseSignOffValue(metadata?.value);
    const cluster = clusterNamed(target?.cluster);
    const evidence = view.state.values[SIGN_OFF_VIEW.block]?.[SIGN_OFF_VIEW.action]?.value ?? undefined;
    if (evidence === undefined || evidence.trim() === '') {
      await ack({
        response_action: 'errors',
        errors: { [SIGN_OFF_VIEW.block]: 'Paste a link or write a note that shows the gate holds.' },
      });
      return;
    }
    await ack();
    if (metadata === undefined || target === undefined || cluster === undefined) {
      deps.logger.warn({ user }, 'a sign-off modal named no known gate');
      return;
    }
    const say = async (text: string): Promise<void> => {
      await client.chat.postEphemeral({ channel: cluster.channel, user, text }).catch((error: unknown) => {
        deps.logger.warn({ cluster: cluster.name, err: slackError(error) }, 'could not answer the sign-off');
      });
    };
    const refused = await refusal(cluster, metadata.channel, user);
    if (refused !== undefined) return say(refused);
    const result = await deps.lifecycle.signOff({ ...target, user }, evidence);
    deps.logger.info({ cluster: cluster.name, gate: target.gate, user, ok: result.ok }, 'gate sign-off submitted');
    return say(result.ok ? result.reply : result.message);
  });
}
