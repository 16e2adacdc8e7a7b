import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { chmod, mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { makePrivateDir } from '../cluster/private-dir.ts';
import type { Tofu } from '../cluster/tofu.ts';
import { errorText } from '../errors.ts';
import { ExecError, type RunResult } from '../exec/process-runner.ts';
import { sanitizeErrorText } from '../exec/sanitize-error-text.ts';
import { tofuErrorLines } from './diagnostics.ts';
import { reviewPlan, type PlanReview } from './parse-plan.ts';
import type { DeclaredNames } from './declared-versions.ts';
import { showPlanJson } from './show-plan.ts';

export type FmtOutcome = { status: 'formatted' } | { status: 'unformatted'; files: string[] } | { status: 'error'; lines: string[] };
export type ValidateOutcome = { status: 'valid' } | { status: 'invalid'; lines: string[] };
export type PlanStepOutcome =
  { status: 'skipped'; because: string } | { status: 'error'; lines: string[] } | { status: 'planned'; review: PlanReview };

/** The runbook's checks before a configuration change, in its order. */
export interface PlanOutcome {
  fmt: FmtOutcome;
  validate: ValidateOutcome;
  plan: PlanStepOutcome;
  /** Set when the plan was kept (`saveTo`) and planned. */
  saved?: SavedPlan;
}

export interface PlanOptions {
  signal?: AbortSignal;
  /** Upper bound of `tofu plan`, which refreshes every resource, in ms. */
  planTimeoutMs: number;
  /** Parent of the private directory that holds the plan file; the OS temp dir when unset. */
  tempBase?: string;
  /**
   * A private directory (created 0700) to keep the plan in, for a later `tofu apply` of exactly
   * this plan: the plan is taken with the state lock, and `tfplan` and its human text `tfplan.txt`
   * stay there. Without it the plan is read-only and removed.
   */
  saveTo?: string;
  /** The inventory's names of the outputs that carry the declared versions; the review reads them (default the runbook's variables). */
  declaredNames?: DeclaredNames;
  /** Resource addresses tofu must replace (`-replace=<address>`), as a node replacement plans its VM. */
  replace?: readonly string[];
}

/** A plan kept for apply: where the file is and its hash, to prove at apply time it is the one reviewed. */
export interface SavedPlan {
  file: string;
  sha256: string;
  /** `tofu show -no-color` of the plan: what a person reviews, sensitive values shown as `(sensitive value)`. */
  textFile: string;
}

/** `tofu fmt -check` exits 3 when it lists unformatted files. */
const FMT_UNFORMATTED = 3;
/** `tofu plan -detailed-exitcode`: 0 no changes, 2 changes, 1 error. */
const PLAN_OK = [0, 2];

type Attempt = { ok: true; result: RunResult } | { ok: false; lines: string[] };

/** A tool that failed is an outcome to report; a cancelled job is not, so it stops here. */
async function attempt(run: () => Promise<RunResult>): Promise<Attempt> {
  try {
    return { ok: true, result: await run() };
  } catch (error) {
    if (error instanceof ExecError && error.code === 'exec-cancelled') throw error;
    const lines =
      error instanceof ExecError && error.code === 'exec-failed' && error.result
        ? tofuErrorLines(error.result.stderr, error.result.stdout)
        : [errorText(error)];
    return { ok: false, lines: lines.map(sanitizeErrorText) };
  }
}

function nonEmptyLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '');
}

/**
 * The routine configuration change, read-only: `tofu fmt -check -recursive`, `tofu validate`,
 * `tofu plan` without the state lock into a private file, and `tofu show -json` of it (read, never
 * kept: it holds sensitive values in plain text). It never
 * applies; the plan file is removed whatever happens.
 */
export async function runPlan(tofu: Tofu, terraformDir: string, options: PlanOptions): Promise<PlanOutcome> {
  const { signal } = options;
  const fmtRun = await attempt(() =>
    tofu.run(terraformDir, ['fmt', '-check', '-recursive'], { signal, okExitCodes: [0, FMT_UNFORMATTED] }),
  );
  const fmt: FmtOutcome = !fmtRun.ok
    ? { status: 'error', lines: fmtRun.lines }
    : fmtRun.result.exitCode === FMT_UNFORMATTED
      ? { status: 'unformatted', files: nonEmptyLines(fmtRun.result.stdout).map(sanitizeErrorText) }
      : { status: 'formatted' };

  const validateRun = await attempt(() => tofu.run(terraformDir, ['validate', '-no-color'], { signal }));
  const validate: ValidateOutcome = validateRun.ok ? { status: 'valid' } : { status: 'invalid', lines: validateRun.lines };
  if (!validateRun.ok) return { fmt, validate, plan: { status: 'skipped', because: 'the configuration is not valid' } };

  // The plan file can hold sensitive values: a private directory, removed afterwards unless kept for apply.
  const dir =
    options.saveTo === undefined ? await makePrivateDir(options.tempBase, 'talos-chatops-plan-') : await keptPlanDir(options.saveTo);
  let kept = false;
  try {
    const planFile = join(dir, 'tfplan');
    // A plan kept for apply is taken under the state lock, as tofu's own workflow does; a read-only one never locks.
    const lock = options.saveTo === undefined ? ['-lock=false'] : [];
    const planRun = await attempt(() =>
      tofu.run(
        terraformDir,
        [
          'plan',
          '-detailed-exitcode',
          ...lock,
          '-input=false',
          '-no-color',
          ...(options.replace ?? []).map((address) => `-replace=${address}`),
          `-out=${planFile}`,
        ],
        {
          signal,
          okExitCodes: PLAN_OK,
          timeoutMs: options.planTimeoutMs,
        },
      ),
    );
    if (!planRun.ok) return { fmt, validate, plan: { status: 'error', lines: planRun.lines } };
    let review: PlanReview;
    try {
      // Its stdout holds sensitive values in plain text: read here, never kept, quoted or attached.
      review = reviewPlan(await showPlanJson(tofu, terraformDir, planFile, signal), options.declaredNames);
    } catch (error) {
      if (error instanceof ExecError && error.code === 'exec-cancelled') throw error;
      return { fmt, validate, plan: { status: 'error', lines: [errorText(error)] } };
    }
    if (options.saveTo === undefined) return { fmt, validate, plan: { status: 'planned', review } };
    const textRun = await attempt(() => tofu.run(terraformDir, ['show', '-no-color', planFile], { signal }));
    if (!textRun.ok) return { fmt, validate, plan: { status: 'error', lines: textRun.lines } };
    const textFile = join(dir, 'tfplan.txt');
    await writeFile(textFile, textRun.result.stdout, { mode: 0o600 });
    kept = true;
    return { fmt, validate, plan: { status: 'planned', review }, saved: { file: planFile, sha256: await fileSha256(planFile), textFile } };
  } finally {
    if (!kept) await rm(dir, { recursive: true, force: true });
  }
}

/** The directory a plan kept for apply goes to, private (0700) whatever the umask made of it and its parents. */
async function keptPlanDir(dir: string): Promise<string> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  return dir;
}

/** sha256 of a file, streamed. */
export async function fileSha256(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}
