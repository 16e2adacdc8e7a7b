import type { ActionDeps } from './operation-actions.ts';
import type { App, ViewSubmitAction } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import { ACTION } from '../src/chat/buttons.ts';
import { parseStopReasonMetadata, STOP_REASON, stopReasonView } from '../src/chat/stop-reason-view.ts';
import type { Logger } from '../src/log/logger.ts';
import type { LifecyclePolicy } from '../jobs/engine/lifecycle/deps.ts';
import type { OperationClick } from '../jobs/engine/lifecycle/start.ts';
import { clickRefusal } from './action-permissions.ts';
import { slackError } from './authorize.ts';

/** The buttons that stop at an approval request, and so ask for a reason first. */
export const STOPS: ReadonlySet<string> = new Set([ACTION.stop, ACTION.cancelApply]);

/**
 * Opens the Stop's reason modal with the click's trigger; false when it cannot (Slack's 3 s trigger
 * expired, Slack failed, the request is no longer waiting): then the caller stops at once, without
 * a reason. The stop never depends on the modal.
 */
export async function openStopReason(
  client: WebClient,
  policy: LifecyclePolicy,
  triggerId: string | undefined,
  click: OperationClick,
  logger: Logger,
): Promise<boolean> {
  const approval = click.op.approvals.find((a) => a.nonce === click.nonce);
  if (triggerId === undefined || approval?.state !== 'pending' || click.op.state !== 'awaiting-approval') return false;
  const step = click.op.steps.find((s) => s.id === approval.step);
  const view = stopReasonView(click.op, step, policy.presentation(click.op.kind), {
    value: `${click.op.id}.${click.nonce}`,
    ...(click.messageTs === undefined ? {} : { ts: click.messageTs }),
  });
  try {
    await client.views.open({ trigger_id: triggerId, view: view as unknown as Parameters<WebClient['views']['open']>[0]['view'] });
    return true;
  } catch (error) {
    logger.warn({ op: click.op.id, err: slackError(error) }, 'the stop reason modal did not open; stopping without a reason');
    return false;
  }
}

type StopReasonDeps = ActionDeps;

/** A decision button's value: the operation and the nonce of the request it decides. */
export const VALUE = /^(op-[a-z0-9]{4,40})\.([a-z0-9]{4,40})$/;

/**
 * The Stop modal's Submit: the same checks as the click (who may stop, the request still waiting),
 * then the stop with the reason, which the audit and the operation keep. The person is answered
 * privately in the operation's channel.
 */
export function registerStopReason(app: App, deps: StopReasonDeps): void {
  app.view<ViewSubmitAction>(STOP_REASON.callbackId, async ({ ack, body, view, client }) => {
    await ack();
    const user = body.user.id;
    const metadata = parseStopReasonMetadata(view.private_metadata);
    const match = VALUE.exec(metadata?.value ?? '');
    const op = match === null ? undefined : await deps.store.get(match[1]!);
    if (match === null || op === undefined) {
      deps.logger.warn({ user }, 'a stop reason modal named no known operation');
      return;
    }
    const say = async (text: string): Promise<void> => {
      await client.chat.postEphemeral({ channel: op.channel, user, text }).catch((error: unknown) => {
        deps.logger.warn({ op: op.id, err: slackError(error) }, 'could not answer the stop');
      });
    };
    const cluster = deps.inventory.clusters.find((c) => c.name === op.cluster);
    const refusal = await clickRefusal(deps.authorizer, deps.lifecycle.policy, cluster, ACTION.stop, op, user);
    if (refusal !== undefined) return say(refusal);
    const reason = view.state.values[STOP_REASON.block]?.[STOP_REASON.action]?.value ?? undefined;
    deps.logger.info({ op: op.id, cluster: op.cluster, user, reason: reason !== undefined }, 'stop submitted');
    const result = await deps.lifecycle.decide({ op, nonce: match[2]!, user, messageTs: metadata?.ts }, 'stopped', reason);
    if (!result.ok) return say(result.message);
    if (result.reply !== undefined) await say(result.reply);
    await result.followUp?.();
  });
}
