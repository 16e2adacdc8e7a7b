/**
 * `talosctl reset` (cmd/talosctl/cmd/talos/reset.go v1.13.9): tracked until all services stop, then
 * (with `--reboot`) until the boot ID changes. `--system-labels-to-wipe` wipes only those system
 * volumes (reference/etcd-recovery.md); `--wipe-mode` takes all, system-disk or user-disks.
 */
import { findNode } from '../cluster-model.ts';
import { connect, type Session } from './session.ts';
import { stopAllServicesStarted, trackNode } from './tracker.ts';
import { parseTimeout } from './upgrade.ts';

export async function runReset(session: Session): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  const wipeMode = parsed.str('wipe-mode') ?? 'all';
  if (wipeMode !== 'all' && wipeMode !== 'system-disk' && wipeMode !== 'user-disks') {
    // pflag's Set error for the WipeMode value (reset.go `Set`), printed with the usage.
    io.err(`invalid argument ${JSON.stringify(wipeMode)} for "--wipe-mode" flag: possible options are: all, system-disk, user-disks\n`);
    return 1;
  }
  const request = {
    graceful: parsed.bool('graceful'),
    reboot: parsed.bool('reboot'),
    systemLabelsToWipe: parsed.list('system-labels-to-wipe'),
    wipeMode: wipeMode as 'all' | 'system-disk' | 'user-disks',
  };
  const timeout = parseTimeout(session, 'timeout');
  if (timeout === undefined) return 1;
  const connection = connect(session);
  if (!(parsed.bool('wait') || parsed.bool('debug'))) {
    if ('error' in connection) {
      io.err(`error executing reset: ${connection.error}\n`);
      return 1;
    }
    for (const address of session.nodes) {
      const node = findNode(cluster, address);
      const result = node ? await deps.lifecycle.requestReset(cluster, node, request) : { error: `unknown node ${address}` };
      if ('error' in result) {
        io.err(`error executing reset: ${result.error}\n`);
        return 1;
      }
    }
    return 0;
  }
  const deadline = session.startedAt + timeout;
  const codes = await Promise.all(
    session.nodes.map((address) => {
      const node = findNode(cluster, address);
      if (!node) {
        io.err(
          `${JSON.stringify(address)}: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${address}:50000: connect: no route to host"\n`,
        );
        return Promise.resolve(1);
      }
      return trackNode({
        session,
        address,
        node,
        deadline,
        action: () =>
          'error' in connection ? Promise.resolve({ error: connection.error }) : deps.lifecycle.requestReset(cluster, node, request),
        expected: stopAllServicesStarted,
        ...(request.reboot ? { postCheck: 'boot-id-changed' as const } : {}),
      });
    }),
  );
  return codes.some((c) => c !== 0) ? 1 : 0;
}
