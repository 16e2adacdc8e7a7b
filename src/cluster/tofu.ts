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
    options?: {
      signal?: AbortSignal;
      okExitCodes?: number[];
      timeoutMs?: number;
      secretOutput?: boolean;
      onStdoutLine?: (line: string) => void;
      onStderrLine?: (line: string) => void;
    },
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
      secretOutput: runOptions.secretOutput,
    });
  return {
    run,
    async outputRaw(terraformDir, name, signal) {
      const result = await run(terraformDir, ['output', '-raw', name], { signal, secretOutput: true });
      return result.stdout;
    },
  };
}
