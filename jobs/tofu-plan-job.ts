import type { Job } from 'bullmq';
import type { ChatPort } from '../src/chat/chat-port.ts';
import { escapeMrkdwn, section } from '../src/chat/blocks.ts';
import { errorText } from '../src/chat/error-text.ts';
import { planChangesMessage, planFmtMessage, planResultMessage, planRunningMessage, planValidateMessage } from '../src/chat/plan-report.ts';
import type { Tofu } from '../src/cluster/tofu.ts';
import type { Inventory } from '../src/config/inventory.ts';
import type { Logger } from '../src/log/logger.ts';
import { PlanJobData } from '../src/queue/job-schemas.ts';
import { runReadOnlyPlan, type PlanOutcome } from '../src/tofu/run-plan.ts';
import { pointRequesterToReport } from './report-pointer.ts';

export interface TofuPlanJobDeps {
  inventory: Inventory;
  tofu: Tofu;
  chat: ChatPort;
  logger: Logger;
  /** Upper bound of `tofu plan`, in ms. */
  planTimeoutMs: number;
  /** Parent of the private plan-file directory; the OS temp dir when unset. */
  tempBase: string | undefined;
}

/** `/talos plan`: the runbook's fmt, validate and plan, read-only, summarised in a root message and three replies. */
export function createTofuPlanJob(deps: TofuPlanJobDeps) {
  return async (job: Job, signal?: AbortSignal): Promise<{ changes: number; dangers: number } | undefined> => {
    const parsed = PlanJobData.parse(job.data);
    const log = deps.logger.child({ op: job.id, cluster: parsed.cluster });
    const cluster = deps.inventory.clusters.find((c) => c.name === parsed.cluster);
    if (!cluster) throw new Error(`cluster ${parsed.cluster} is no longer in the inventory`);
    // The report stays in its cluster's channel, whatever channel the job data names.
    const data = { ...parsed, channel: cluster.channel };

    let rootTs = data.rootTs;
    if (rootTs === undefined) {
      rootTs = (await deps.chat.post(data.channel, planRunningMessage(data), { key: `${job.id}-root`, maybeSent: job.attemptsStarted > 1 })).ts;
      await job.updateData({ ...data, rootTs });
      await pointRequesterToReport(deps.chat, log, data, 'Terraform plan', rootTs);
    }
    log.info({ rootTs }, 'tofu plan started');
    let outcome: PlanOutcome;
    try {
      outcome = await runReadOnlyPlan(deps.tofu, cluster.terraformDir, { signal, planTimeoutMs: deps.planTimeoutMs, tempBase: deps.tempBase });
    } catch (error) {
      log.warn({ err: errorText(error) }, 'tofu plan could not run');
      const text = `❌ tofu plan of ${cluster.name} could not run: ${errorText(error)}`;
      await deps.chat.update(data.channel, rootTs, { text, blocks: [section(escapeMrkdwn(text))] });
      return undefined;
    }
    await deps.chat.update(data.channel, rootTs, planResultMessage(outcome, data));
    const replies = { fmt: planFmtMessage(outcome), validate: planValidateMessage(outcome), changes: planChangesMessage(outcome) };
    for (const [name, message] of Object.entries(replies)) {
      await deps.chat.reply(data.channel, rootTs, message, { key: `${job.id}-${name}` });
    }
    const review = outcome.plan.status === 'planned' ? outcome.plan.review : undefined;
    const result = { changes: review?.changes.length ?? 0, dangers: review?.dangers.length ?? 0 };
    log.info({ fmt: outcome.fmt.status, validate: outcome.validate.status, plan: outcome.plan.status, ...result }, 'tofu plan finished');
    return result;
  };
}
