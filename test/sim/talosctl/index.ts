/** Entry point of a simulated talosctl invocation: parse, authenticate, apply faults, dispatch. */
import { apidReachable, findNode, named } from '../cluster-model.ts';
import { authenticate, CredentialError, type TalosContext } from '../credentials.ts';
import { never, type ExecIO } from '../exec-io.ts';
import type { CallRecord } from '../types.ts';
import { parseArgs, UsageError, type ParsedArgs } from './args.ts';
import { runEtcdAlarmList, runEtcdMembers, runEtcdRemoveMember, runEtcdSnapshot, runEtcdStatus } from './etcd.ts';
import { runBootstrap } from './bootstrap.ts';
import { realEtcdOf } from '../etcd-real/attach.ts';
import { runRealEtcdMembers, runRealEtcdRemoveMember, runRealEtcdStatus } from '../etcd-real/talosctl-etcd.ts';
import { runGet } from './get.ts';
import { runHealth } from './health.ts';
import { runReset } from './reset.ts';
import { runService } from './service.ts';
import type { Session, SimDeps } from './session.ts';
import { runRollback, runUpgrade } from './upgrade.ts';
import { runUpgradeK8s } from './upgrade-k8s.ts';
import { printClientVersion, runVersion } from './version.ts';

export interface TalosctlRequest {
  argv: string[];
  cwd: string;
  clientVersion: string;
  /** The talosconfig the CLI process found (`--talosconfig`, `TALOSCONFIG`, or the default path). */
  talosconfig: { path: string; contents?: string; error?: string };
}

const NODES_NOT_SET =
  'nodes are not set for the command: please use `--nodes` flag or configuration file to set the nodes to run the command against';

/** `etcd status`, `service etcd`, `get members`: the key fault lists match against. */
export function commandKey(parsed: ParsedArgs): string {
  const [first] = parsed.path;
  if ((first === 'service' || first === 'get') && parsed.args[0]) return `${first} ${parsed.args[0]}`;
  return parsed.path.join(' ');
}

function matches(key: string, pattern: string): boolean {
  return key === pattern || key.startsWith(`${pattern} `);
}

/** Every endpoint of the call is a node that is down and silent (no refusal comes back): the dial never completes. */
function throughSilentNodes(session: Session): boolean {
  const silent = session.cluster.faults.silentWhileRebooting ?? [];
  if (silent.length === 0) return false;
  return session.endpoints.every((endpoint) => {
    const node = findNode(session.cluster, endpoint);
    return node !== undefined && named(silent, node) && !apidReachable(session.cluster, node);
  });
}

export async function runTalosctl(request: TalosctlRequest, io: ExecIO, deps: SimDeps, call: CallRecord): Promise<number> {
  let parsed: ParsedArgs;
  try {
    parsed = parseArgs(request.argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    if (error.message === '') {
      io.out(error.usage);
      return 0;
    }
    io.err(`${error.message}\n${error.usage}`);
    return 1;
  }
  const key = commandKey(parsed);
  if (key === 'version' && parsed.bool('client')) {
    printClientVersion(io, request.clientVersion, parsed.bool('short'));
    return 0;
  }
  if (request.talosconfig.contents === undefined) {
    io.err(`${request.talosconfig.error ?? `open ${request.talosconfig.path}: no such file or directory`}\n`);
    return 1;
  }
  let context: TalosContext | undefined;
  let handshake: string | undefined;
  try {
    context = authenticate(Object.values(deps.state.clusters), request.talosconfig.contents, parsed.str('context'));
  } catch (error) {
    if (!(error instanceof CredentialError)) throw error;
    if (!error.message.startsWith('rpc error:')) {
      io.err(`${error.message}\n`);
      return 1;
    }
    handshake = error.message;
  }
  const nodes = parsed.list('nodes');
  // The bot must always name its nodes; a talosconfig default would hide a missing --nodes.
  if (nodes.length === 0) {
    io.err(`${NODES_NOT_SET}\n`);
    return 1;
  }
  if (!context) {
    if (key === 'version') printClientVersion(io, request.clientVersion, parsed.bool('short'));
    io.err(`${key === 'version' ? 'error getting version: ' : ''}${handshake ?? ''}\n`);
    return 1;
  }
  call.cluster = context.cluster.name;
  const endpoints = parsed.list('endpoints');
  const session: Session = {
    deps,
    io,
    parsed,
    clientVersion: request.clientVersion,
    cluster: context.cluster,
    endpoints: endpoints.length > 0 ? endpoints : context.endpoints,
    nodes,
    cwd: request.cwd,
    call,
    startedAt: call.startedAt,
  };
  // A test holding this call decides when it is answered; the faults are read after the hold.
  await context.cluster.faults.holdCall?.(call, key);
  const faults = context.cluster.faults;
  if (throughSilentNodes(session)) {
    call.hung = 'every endpoint is a rebooting node that does not answer';
    return never(io.signal);
  }
  if ((faults.hang ?? []).some((p) => matches(key, p))) {
    call.hung = `fault: ${key}`;
    return never(io.signal);
  }
  const failure = Object.entries(faults.fail ?? {}).find(([p]) => matches(key, p));
  if (failure) {
    io.err(`${failure[1]}\n`);
    return 1;
  }
  const canned = Object.entries(faults.output ?? {}).find(([p]) => matches(key, p))?.[1];
  if (canned !== undefined) {
    const { stdout = '', stderr = '', exitCode = 0 } = typeof canned === 'string' ? { stdout: canned } : canned;
    if (stdout !== '') io.out(stdout);
    if (stderr !== '') io.err(stderr);
    return exitCode;
  }
  // A cluster on real etcd answers the etcd reads and removals from its processes (etcd-real/).
  const realEtcd = realEtcdOf(context.cluster);
  switch (parsed.path.join(' ')) {
    case 'version':
      return runVersion(session);
    case 'health':
      return runHealth(session);
    case 'service':
      return runService(session);
    case 'etcd status':
      return realEtcd ? runRealEtcdStatus(session, realEtcd) : runEtcdStatus(session);
    case 'etcd members':
      return realEtcd ? runRealEtcdMembers(session, realEtcd) : runEtcdMembers(session);
    case 'etcd snapshot':
      return runEtcdSnapshot(session);
    case 'etcd remove-member':
      return realEtcd ? runRealEtcdRemoveMember(session, realEtcd) : runEtcdRemoveMember(session);
    case 'etcd alarm list':
      return runEtcdAlarmList(session);
    case 'get':
      return runGet(session);
    case 'upgrade':
      return runUpgrade(session);
    case 'rollback':
      return runRollback(session);
    case 'reset':
      return runReset(session);
    case 'bootstrap':
      return runBootstrap(session);
    case 'upgrade-k8s':
      return runUpgradeK8s(session);
    default:
      io.err(`unknown command ${JSON.stringify(key)} for "talosctl"\n`);
      return 1;
  }
}
