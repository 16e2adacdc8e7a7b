/** One talosctl invocation after authentication: endpoint choice, per-node proxying and error rendering. */
import { apidReachable, findNode, unavailableError, vipHolder } from '../cluster-model.ts';
import type { ExecIO } from '../exec-io.ts';
import { multiError } from '../go-format.ts';
import type { Lifecycle } from '../lifecycle.ts';
import type { Recorder } from '../recorder.ts';
import { isMultiplexingClient } from '../versions.ts';
import type { CallRecord, SimCluster, SimNode, SimState, SimTiming } from '../types.ts';
import type { ParsedArgs } from './args.ts';

export interface SimDeps {
  state: SimState;
  timing: SimTiming;
  lifecycle: Lifecycle;
  recorder: Recorder;
}

export interface Session {
  deps: SimDeps;
  io: ExecIO;
  parsed: ParsedArgs;
  clientVersion: string;
  cluster: SimCluster;
  /** Endpoints in effect: `--endpoints` or the talosconfig's. */
  endpoints: string[];
  nodes: string[];
  cwd: string;
  call: CallRecord;
  startedAt: number;
}

export type NodeResult<T> = { address: string; node: SimNode; value: T } | { address: string; error: string };

/** The endpoint a call goes through, or the connection error of the first endpoint. */
export function connect(session: Session): { endpoint: string } | { error: string } {
  const { cluster } = session;
  for (const endpoint of session.endpoints) {
    if (endpoint === cluster.vip) {
      if (vipHolder(cluster)) return { endpoint };
      continue;
    }
    const node = findNode(cluster, endpoint);
    if (node && apidReachable(cluster, node)) return { endpoint };
  }
  const first = session.endpoints[0] ?? '';
  return { error: unavailableError(cluster, findNode(cluster, first), first) };
}

/** The node behind one `--nodes` value, as the endpoint's apid proxy reaches it. */
export function reach(session: Session, address: string): { node: SimNode } | { error: string } {
  const node = session.cluster.nodes.find((n) => n.address === address || n.hostname === address);
  if (!node || !apidReachable(session.cluster, node)) return { error: unavailableError(session.cluster, node, address) };
  return { node };
}

export function fanOut<T>(session: Session, fn: (node: SimNode, address: string) => T | { error: string }): NodeResult<T>[] {
  return session.nodes.map((address) => {
    const reached = reach(session, address);
    if ('error' in reached) return { address, error: reached.error };
    const value = fn(reached.node, address);
    if (value && typeof value === 'object' && 'error' in value && typeof (value as { error: unknown }).error === 'string') {
      return { address, error: (value as { error: string }).error };
    }
    return { address, node: reached.node, value: value as T };
  });
}

export function successes<T>(results: NodeResult<T>[]): { address: string; node: SimNode; value: T }[] {
  return results.filter((r): r is { address: string; node: SimNode; value: T } => 'node' in r);
}

/**
 * Renders per-node failures the way the client version does: a WARNING and the partial table up to
 * 1.13 (exit 0), `error from node X` lines and exit 1 from 1.14. When every node failed, the
 * command fails with `prefix: <errors>`. Returns the exit code, or undefined to go on printing.
 */
export function reportFailures<T>(session: Session, results: NodeResult<T>[], prefix: string): number | undefined {
  const failed = results.filter((r): r is { address: string; error: string } => 'error' in r);
  if (failed.length === 0) return undefined;
  if (isMultiplexingClient(session.clientVersion)) {
    for (const f of failed) session.io.err(`error from node ${f.address}: ${f.error}\n`);
    return failed.length === results.length ? 1 : undefined;
  }
  const text = multiError(failed.map((f) => `${f.address}: ${f.error}`));
  if (failed.length === results.length) {
    session.io.err(`${prefix}: ${text}\n`);
    return 1;
  }
  session.io.err(`WARNING: ${text}\n`);
  return undefined;
}

/** Exit code after a partial failure has been reported and the table printed. */
export function exitAfterPartial<T>(session: Session, results: NodeResult<T>[]): number {
  const failed = results.some((r) => 'error' in r);
  return failed && isMultiplexingClient(session.clientVersion) ? 1 : 0;
}

/** Talos API calls that only control planes serve. */
export function controlPlaneOnly(node: SimNode, api: string): { error: string } | undefined {
  if (node.role === 'controlplane') return undefined;
  return { error: `rpc error: code = Unimplemented desc = ${api} is only available on control plane nodes` };
}

export function requireSingleNode(session: Session, command: string): boolean {
  if (session.nodes.length <= 1) return true;
  session.io.err(`command ${JSON.stringify(command)} is not supported with multiple nodes\n`);
  return false;
}
