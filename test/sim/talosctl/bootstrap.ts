/**
 * `talosctl bootstrap [--recover-from=<path>]` (cmd/talosctl/cmd/talos/bootstrap.go v1.13.9). With
 * `--recover-from` the client first runs etcdutl's Status on the local file (a file that is not a
 * sound bolt database fails here, before anything is sent), prints what it found, uploads the file
 * (EtcdRecover) and then calls Bootstrap with RecoverEtcd. The server's side: Lifecycle
 * `uploadRecoverySnapshot` and `requestBootstrap`; reference/etcd-recovery.md.
 */
import { readFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import { snapshotStatus } from '../etcd-snapshot-file.ts';
import { realEtcdOf } from '../etcd-real/attach.ts';
import { connect, reach, type Session } from './session.ts';

export async function runBootstrap(session: Session): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  // Checked inside WithClient, before any call.
  if (session.nodes.length > 1) {
    io.err('command "bootstrap" is not supported with multiple nodes\n');
    return 1;
  }
  const recoverFrom = parsed.str('recover-from') ?? '';
  const address = session.nodes[0] ?? '';
  if (recoverFrom !== '') {
    const local = isAbsolute(recoverFrom) ? recoverFrom : resolve(session.cwd, recoverFrom);
    // etcdutl reports the path as given; the process resolves it against its working directory.
    // With real etcd, etcd's own Status reads the file.
    const real = realEtcdOf(cluster);
    const status = real ? await real.snapshotStatus(local) : await snapshotStatus(local);
    if ('crash' in status) {
      io.err(status.crash);
      return 2;
    }
    if ('error' in status) {
      io.err(`${status.error.replace(local, recoverFrom)}\n`);
      return 1;
    }
    io.out(
      `recovering from snapshot ${JSON.stringify(recoverFrom)}: hash ${status.hash}, revision ${status.revision}, total keys ${status.totalKeys}, total size ${status.totalSize}\n`,
    );
    const bytes = await readFile(local);
    const connection = connect(session);
    const reached = 'error' in connection ? connection : reach(session, address);
    if ('error' in reached) {
      io.err(`error uploading snapshot: ${reached.error}\n`);
      return 1;
    }
    const uploadError = deps.lifecycle.uploadRecoverySnapshot(cluster, reached.node, bytes, local);
    if (uploadError) {
      io.err(`error uploading snapshot: ${uploadError}\n`);
      return 1;
    }
  }
  const connection = connect(session);
  const reached = 'error' in connection ? connection : reach(session, address);
  if ('error' in reached) {
    io.err(`error executing bootstrap: ${reached.error}\n`);
    return 1;
  }
  const refused = deps.lifecycle.requestBootstrap(cluster, reached.node, {
    recover: recoverFrom !== '',
    skipHashCheck: parsed.bool('recover-skip-hash-check'),
    source: recoverFrom === '' ? '' : isAbsolute(recoverFrom) ? recoverFrom : resolve(session.cwd, recoverFrom),
  });
  if (refused) {
    io.err(`error executing bootstrap: ${refused}\n`);
    return 1;
  }
  return 0;
}
