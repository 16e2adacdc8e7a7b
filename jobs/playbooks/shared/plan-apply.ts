import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { errorText } from '../../../src/chat/error-text.ts';
import { terraformWorkDir } from '../../../src/config/terraform-repo.ts';
import { ExecError } from '../../../src/exec/process-runner.ts';
import type { Step } from '../../../src/ops/operation.ts';
import { tofuErrorLines } from '../../../src/tofu/diagnostics.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { PostedOperation, StepResult, WalkContext } from '../../engine/playbook.ts';
import { applyProgressMessage, type ApplyProgress } from './apply-progress.ts';
import { planData } from './plan-data.ts';
import { planDirOf } from './plan-dir.ts';
import { startProgressReply } from './progress-reply.ts';
import { checkReviewed, DEFAULT_AGAIN, type ReviewedApply } from './reviewed-plan.ts';

/** At most one edit of the apply's progress message per this many ms. */
const PROGRESS_EDIT_MS = 2000;

function failureOf(error: unknown, NEW_PLAN: string): StepFailure {
  const result = error instanceof ExecError ? error.result : undefined;
  const output = result ? `${result.stdout}\n${result.stderr}` : '';
  if (/Saved plan is stale/.test(output)) {
    return new StepFailure(
      `tofu refused the saved plan as stale: the Terraform state changed after it was planned, so nothing was applied. ${NEW_PLAN}`,
      tofuErrorLines(result!.stderr, result!.stdout),
    );
  }
  const lines = result ? tofuErrorLines(result.stderr, result.stdout) : [errorText(error)];
  return new StepFailure(
    `tofu apply failed: ${lines[0] ?? errorText(error)}. What it applied before the error stays applied; nothing is reverted automatically. ${NEW_PLAN} to see what is left`,
    lines.slice(0, 15),
  );
}

/** `tofu apply <the reviewed plan file>`: never a fresh plan, never `-auto-approve`; its output in one edited message, the full log attached. */
export async function applyPlan(ctx: WalkContext, op: PostedOperation, step: Step, reviewed: ReviewedApply = {}): Promise<StepResult> {
  const { deps, cluster } = ctx;
  const NEW_PLAN = reviewed.again ?? DEFAULT_AGAIN;
  // A saved plan is applied once: a run resumed after a crash mid-apply cannot tell what tofu did, so it stops rather than guess.
  if (step.issuedAt !== undefined) {
    throw new StepFailure(
      `the bot stopped while \`tofu apply\` ran (started ${step.issuedAt}), so what it applied is unknown; a reviewed plan is never applied twice. ${NEW_PLAN} to see what is left`,
    );
  }
  const dir = planDirOf(deps, op.id);
  const file = join(dir, 'tfplan');
  // A plan that failed its check is never applied later either (the apply is never retried): it goes at once.
  await checkReviewed(ctx, op, file, reviewed).catch(async (error: unknown) => {
    await rm(file, { force: true });
    throw error;
  });
  const issuedAt = deps.now().toISOString();
  await ctx.record({ step: { id: step.id, issuedAt } });
  const started = deps.clock.now().getTime();
  const progress: ApplyProgress = { cluster: cluster.name, outcome: 'running', lines: [], elapsedMs: 0 };
  const view = (): ApplyProgress => ({ ...progress, lines: [...progress.lines], elapsedMs: deps.clock.now().getTime() - started });
  const reply = startProgressReply(deps, op, {
    key: `${op.id}-apply-${Date.parse(issuedAt)}`,
    render: applyProgressMessage,
    minIntervalMs: PROGRESS_EDIT_MS,
    onError: (error) => ctx.log.warn({ err: errorText(error) }, 'apply progress edit failed'),
  });
  await reply.open(view());
  ctx.phase?.(`tofu apply of the reviewed plan on ${cluster.name}`);
  const onLine = (line: string): void => {
    progress.lines.push(line);
    if (line.startsWith('Apply complete!')) progress.summary = line;
    reply.update(view());
  };
  const attachLog = (): Promise<void> =>
    deps.chat
      .upload(op.channel, op.rootTs, {
        filename: `${op.id}-tofu-apply.log`,
        title: `tofu apply of ${op.id} on ${cluster.name}`,
        content: progress.lines.join('\n'),
      })
      .catch((error: unknown) => ctx.log.warn({ err: errorText(error) }, 'apply log not attached'));
  try {
    await deps.tofu.run(terraformWorkDir(cluster), ['apply', '-input=false', '-no-color', file], {
      signal: ctx.signal,
      timeoutMs: reviewed.timeoutMs ?? deps.timeouts.stepMs,
      onStdoutLine: onLine,
      onStderrLine: onLine,
    });
  } catch (error) {
    if (ctx.signal?.aborted) throw error;
    progress.outcome = 'failed';
    await reply.finish(view());
    await attachLog();
    throw failureOf(error, NEW_PLAN);
  } finally {
    // Applied or refused, a saved plan is spent; its text stays for the record until the operation ends.
    await rm(file, { force: true });
  }
  progress.outcome = 'done';
  await reply.finish(view());
  await attachLog();
  return {
    event: 'tofu apply finished',
    detail: `${progress.summary ?? 'applied'} (commit ${planData(op).terraform?.commit?.slice(0, 12) ?? '?'}, plan sha256 ${planData(op).terraform?.planSha256?.slice(0, 12) ?? '?'}…)`,
  };
}
