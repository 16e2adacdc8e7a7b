import type { CallRecord } from '../exec/process-runner.ts';
import type { Metrics } from './metrics.ts';

/** talosctl commands whose second word is the real subcommand (`etcd status`, `etcd snapshot`). */
const COMMAND_GROUPS = new Set(['etcd', 'cluster', 'config', 'image', 'meta', 'inspect', 'cgroups', 'machineconfig']);

/**
 * Bounded label values for one child process: the binary without its version suffix
 * (`talosctl-v1.11.6` is `talosctl`) and the subcommand without paths, node names or
 * flag values, so a metric never grows a series per snapshot file or per node.
 */
export function execLabels(file: string, args: string[]): { binary: string; subcommand: string } {
  const base = file.split('/').pop() ?? file;
  const binary = base.replace(/-v?\d+\.\d+\.\d+.*$/, '');
  // Global flags written as `-flag=value` (tofu's `-chdir=…`) may precede the subcommand.
  const start = args.findIndex((a) => !/^-[^=]+=/.test(a));
  const rest = start < 0 ? [] : args.slice(start);
  const first = rest[0];
  if (first === undefined || first.startsWith('-') || !/^[a-z][a-z0-9-]*$/.test(first)) return { binary, subcommand: 'none' };
  const second = rest[1];
  const grouped = COMMAND_GROUPS.has(first) && second !== undefined && /^[a-z][a-z0-9-]*$/.test(second);
  return { binary, subcommand: grouped ? `${first} ${second}` : first };
}

/** The process runner's `onCall` hook: one duration per call, one failure count per failed call. */
export function recordExecCall(metrics: Pick<Metrics, 'execDuration' | 'execFailures'>): (call: CallRecord) => void {
  return (call) => {
    const labels = execLabels(call.file, call.args);
    metrics.execDuration.observe(labels, call.durationMs / 1000);
    if (call.outcome !== 'ok') metrics.execFailures.inc({ ...labels, code: call.outcome });
  };
}
