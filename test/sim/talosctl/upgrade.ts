/** `talosctl upgrade` legacy flow (cmd/talosctl/cmd/talos/upgrade.go) and `talosctl rollback`. */
import { controlPlanes, findNode } from '../cluster-model.ts';
import { goTimeNow, parseGoDuration, tabwrite } from '../go-format.ts';
import { bare, compareVersions } from '../versions.ts';
import { connect, exitAfterPartial, fanOut, reach, reportFailures, successes, type NodeResult, type Session } from './session.ts';
import { machineReady, trackNode } from './tracker.ts';

const PROCESS_STARTED_AT = Date.now();

/** helpers.ClientVersionCheck: a warning per node running an older Talos than the client. */
export function warnVersionSkew(session: Session): void {
  for (const address of session.nodes) {
    const reached = reach(session, address);
    if ('error' in reached) continue;
    const server = reached.node.talosVersion;
    if (compareVersions(server, session.clientVersion) < 0) {
      session.io.err(`WARNING: ${address}: server version ${bare(server)} is older than client version ${bare(session.clientVersion)}\n`);
    }
  }
}

export function parseTimeout(session: Session, flag: string): number | undefined {
  const text = session.parsed.str(flag) ?? '30m0s';
  const ms = parseGoDuration(text);
  if (ms === undefined) {
    session.io.err(`invalid argument ${JSON.stringify(text)} for "--${flag}" flag: time: invalid duration ${JSON.stringify(text)}\n`);
  }
  return ms;
}

export async function runUpgrade(session: Session): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  if (parsed.bool('insecure')) {
    io.err('upgrade in maintenance mode is not supported by the simulated cluster\n');
    return 1;
  }
  const clientTag = session.clientVersion;
  const request = {
    image: parsed.str('image') ?? `ghcr.io/siderolabs/installer:${clientTag}`,
    stage: parsed.bool('stage'),
    force: parsed.bool('force'),
    rebootMode: (parsed.str('reboot-mode') === 'powercycle' ? 'powercycle' : 'default') as 'default' | 'powercycle',
  };
  const timeout = parseTimeout(session, 'timeout');
  if (timeout === undefined) return 1;
  const waitForIt = parsed.bool('wait') || parsed.bool('debug');
  const connection = connect(session);
  warnVersionSkew(session);
  // 1.13+ clients try the LifecycleService first; servers before 1.13 lack it. The new flow itself
  // is not simulated, so these clients always end up on the legacy path.
  if (compareVersions(clientTag, 'v1.13.0') >= 0 && session.nodes.some((a) => compareVersions(findNode(cluster, a)?.talosVersion ?? 'v0.0.0', 'v1.13.0') < 0)) {
    io.err('New upgrade API is not available, falling back to legacy\n');
  }

  if (!waitForIt) {
    if ('error' in connection) {
      io.err(`error performing upgrade: ${connection.error}\n`);
      return 1;
    }
    const results: NodeResult<string>[] = [];
    for (const address of session.nodes) {
      const reached = reach(session, address);
      if ('error' in reached) {
        results.push({ address, error: reached.error });
        continue;
      }
      const accepted = await deps.lifecycle.requestUpgrade(cluster, reached.node, request);
      results.push('error' in accepted ? { address, error: accepted.error } : { address, node: reached.node, value: accepted.actorId });
    }
    const failed = reportFailures(session, results, 'error performing upgrade');
    if (failed !== undefined) return failed;
    const rows = [['NODE', 'ACK', 'STARTED']];
    for (const r of successes(results)) rows.push([r.address, 'Upgrade request received', goTimeNow(new Date(), PROCESS_STARTED_AT)]);
    io.out(tabwrite(rows));
    return exitAfterPartial(session, results);
  }

  const endpoint = 'endpoint' in connection ? connection.endpoint : undefined;
  const deadline = session.startedAt + timeout;
  const codes = await Promise.all(
    session.nodes.map((address) => {
      const node = findNode(cluster, address);
      if (!node) {
        io.err(`${JSON.stringify(address)}: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${address}:50000: connect: no route to host"\n`);
        return Promise.resolve(1);
      }
      const hang = deps.state.behavior.selfEndpointHang;
      const throughItself =
        (endpoint === node.address || endpoint === node.hostname) &&
        (hang === 'always' || (hang === 'multi-control-plane' && controlPlanes(cluster).length > 1));
      return trackNode({
        session,
        address,
        node,
        deadline,
        action: () =>
          'error' in connection ? Promise.resolve({ error: connection.error }) : deps.lifecycle.requestUpgrade(cluster, node, request),
        expected: machineReady,
        postCheck: 'boot-id-changed',
        hangAtActorId: node.role === 'controlplane' && endpoint !== undefined && (endpoint === cluster.vip || throughItself),
      });
    }),
  );
  return codes.some((c) => c !== 0) ? 1 : 0;
}

/** `talosctl rollback`: silent on success; the reboot happens afterwards. */
export function runRollback(session: Session): number {
  const { io, cluster, deps } = session;
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`error executing rollback: ${connection.error}\n`);
    return 1;
  }
  const results = fanOut(session, (node) => {
    const error = deps.lifecycle.requestRollback(cluster, node);
    return error ? { error } : node;
  });
  const failed = results.filter((r) => 'error' in r);
  if (failed.length === 0) return 0;
  const text = failed.map((f) => ('error' in f ? (session.nodes.length > 1 ? `${f.address}: ${f.error}` : f.error) : '')).join('; ');
  io.err(`error executing rollback: ${text}\n`);
  return 1;
}
