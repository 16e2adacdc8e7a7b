import type { ProcessRunner, RunResult } from '../exec/process-runner.ts';

export interface TofuOptions {
  runner: ProcessRunner;
  bin: string;
  env: Record<string, string>;
  /** Upper bound of one tofu call, in ms. */
  timeoutMs: number;
}

/** `tofu`, run in a cluster's Terraform directory: the source of credentials and of the image schematic. */
export interface Tofu {
  /** `tofu output -raw <name>`: the bare value, never logged. */
  outputRaw(terraformDir: string, name: string, signal?: AbortSignal): Promise<string>;
  /** `timeoutMs` overrides the default bound of one call, for a `plan` that refreshes every resource. */
  run(
    terraformDir: string,
    args: string[],
    options?: { signal?: AbortSignal; okExitCodes?: number[]; timeoutMs?: number; onStdoutLine?: (line: string) => void; onStderrLine?: (line: string) => void },
  ): Promise<RunResult>;
}

export function createTofu(options: TofuOptions): Tofu {
  const run: Tofu['run'] = (terraformDir, args, runOptions = {}) =>
    options.runner.run(options.bin, args, {
      cwd: terraformDir,
      env: { ...options.env, TF_IN_AUTOMATION: '1' },
      timeoutMs: runOptions.timeoutMs ?? options.timeoutMs,
      signal: runOptions.signal,
      okExitCodes: runOptions.okExitCodes,
      onStdoutLine: runOptions.onStdoutLine,
      onStderrLine: runOptions.onStderrLine,
    });
  return {
    run,
    async outputRaw(terraformDir, name, signal) {
      const result = await run(terraformDir, ['output', '-raw', name], { signal });
      return result.stdout;
    },
  };
}

/**
 * `tofu output -raw <name>` for an output a configuration may not declare (the Longhorn node
 * class's installer): undefined when tofu says the output is not found; any other failure throws.
 */
export async function optionalOutputRaw(tofu: Tofu, terraformDir: string, name: string, signal?: AbortSignal): Promise<string | undefined> {
  const result = await tofu.run(terraformDir, ['output', '-raw', name], { signal, okExitCodes: [0, 1] });
  if (result.exitCode === 0) return result.stdout;
  if (result.stderr.includes(`Output "${name}" not found`)) return undefined;
  const detail = result.stderr.replace(/[│╷╵]/g, ' ').replace(/\s+/g, ' ').trim();
  throw new Error(`tofu output -raw ${name} exited with ${result.exitCode}${detail ? `: ${detail}` : ''}`);
}
