import type { ProcessRunner, RunResult } from '../exec/process-runner.ts';

export interface TalosctlCallOptions {
  signal?: AbortSignal;
  /** Overrides the default timeout of the client, in ms. */
  timeoutMs?: number;
  /** Endpoints for this call; the cluster's control-plane addresses by default. */
  endpoints?: string[];
  onStderrLine?: (line: string) => void;
  onStdoutLine?: (line: string) => void;
  okExitCodes?: number[];
}

/**
 * talosctl bound to one cluster's private talosconfig. Every call names its nodes
 * and real control-plane endpoints explicitly, as the runbook requires: never the
 * virtual IP, never the talosconfig's defaults.
 */
export interface Talosctl {
  readonly binary: string;
  run(args: string[], nodes: string[], options?: TalosctlCallOptions): Promise<RunResult>;
}

export interface TalosctlOptions {
  runner: ProcessRunner;
  binary: string;
  talosconfigPath: string;
  /** Real control-plane addresses. */
  endpoints: string[];
  env: Record<string, string>;
  /** Default timeout of one call, in ms. */
  timeoutMs: number;
}

export function createTalosctl(options: TalosctlOptions): Talosctl {
  return {
    binary: options.binary,
    run(args, nodes, callOptions = {}) {
      const endpoints = callOptions.endpoints ?? options.endpoints;
      const argv = [
        ...args,
        '--talosconfig',
        options.talosconfigPath,
        '--endpoints',
        endpoints.join(','),
        ...(nodes.length > 0 ? ['--nodes', nodes.join(',')] : []),
      ];
      return options.runner.run(options.binary, argv, {
        env: { ...options.env, TALOSCONFIG: options.talosconfigPath },
        timeoutMs: callOptions.timeoutMs ?? options.timeoutMs,
        signal: callOptions.signal,
        okExitCodes: callOptions.okExitCodes,
        onStderrLine: callOptions.onStderrLine,
        onStdoutLine: callOptions.onStdoutLine,
      });
    },
  };
}
