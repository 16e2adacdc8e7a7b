import type { Tofu } from '../cluster/tofu.ts';
import { OpsError } from '../errors.ts';
import { ExecError } from '../exec/process-runner.ts';
import { sanitizeErrorText } from '../exec/sanitize-error-text.ts';
import { tofuErrorLines } from './diagnostics.ts';
import { parsePlanJson, type PlanJson } from './parse-plan.ts';

/**
 * `tofu show -json <planfile>`, read and parsed, and nothing of its stdout kept. OpenTofu writes
 * sensitive values there in plain text (a resource's `before`/`after`, a sensitive output's values;
 * opentofu internal/command/jsonplan/plan.go, v1.12.6), and the bot's scrubber knows only the secrets it
 * read itself. So a failure never carries that stdout on: the error names stderr's diagnostics only,
 * and holds no process result a logger could serialise.
 *
 * @throws {OpsError} `tofu-show-failed` when tofu failed (a cancelled call stays `exec-cancelled`);
 *   `tofu-plan-unparseable` when the output is not a plan in a JSON format the bot reads
 */
export async function showPlanJson(tofu: Tofu, terraformDir: string, planFile: string, signal?: AbortSignal): Promise<PlanJson> {
  let stdout: string;
  try {
    stdout = (await tofu.run(terraformDir, ['show', '-json', planFile], { signal })).stdout;
  } catch (error) {
    if (!(error instanceof ExecError)) throw error;
    if (error.code === 'exec-cancelled') throw new ExecError('exec-cancelled', 'tofu show was cancelled');
    const exit = error.result === undefined ? error.code : `exit ${error.result.exitCode}`;
    const lines = error.code === 'exec-failed' && error.result !== undefined ? tofuErrorLines(error.result.stderr) : [];
    const because = lines.length > 0 ? `: ${lines.map(sanitizeErrorText).join(' ')}` : '';
    throw new OpsError('tofu-show-failed', `tofu show -json of the saved plan failed (${exit})${because}`, {
      hint: 'run `/talos plan` again; if it fails again, run `tofu show` of a plan by hand',
    });
  }
  return parsePlanJson(stdout);
}
