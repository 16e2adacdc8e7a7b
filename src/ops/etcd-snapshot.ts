import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { access, chmod, mkdir, rename, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { ClusterConfig } from '../config/inventory.ts';
import { OpsError } from '../errors.ts';
import { parseEtcdStatus } from '../talos/parse-etcd-status.ts';
import { parseSnapshotOutput } from '../talos/parse-etcd-snapshot.ts';
import type { Talosctl } from '../talos/talosctl.ts';
import type { Snapshot } from './operation.ts';
import { refuseSnapshotOnCluster, type SnapshotHost } from './snapshot-placement.ts';

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

const exists = (path: string): Promise<boolean> =>
  access(path).then(
    () => true,
    () => false,
  );

/** `20261129T235127Z`: sorts by time and is safe in a file name. */
function stamp(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

/** A control plane whose etcd answers without errors and knows a leader; the snapshot source. */
async function healthyControlPlane(talosctl: Talosctl, cluster: ClusterConfig, signal?: AbortSignal): Promise<string> {
  const result = await talosctl.run(['etcd', 'status'], cluster.controlPlanes, { signal, okExitCodes: [0, 1] });
  const rows = result.stdout.trim() === '' ? [] : parseEtcdStatus(result.stdout);
  const healthy = rows.find(
    (r, i) => r.errors.length === 0 && !/^0+$/.test(r.leader) && (r.node ?? cluster.controlPlanes[i]) !== undefined,
  );
  const node = healthy?.node ?? (healthy ? cluster.controlPlanes[rows.indexOf(healthy)] : undefined);
  if (node === undefined) {
    throw new OpsError('snapshot-no-healthy-member', 'no control plane has a healthy etcd member to snapshot', {
      hint: 'run /talos health and fix etcd first',
    });
  }
  return node;
}

/**
 * The runbook's "take and copy an etcd snapshot off-cluster": talosctl streams the
 * snapshot to this machine, into the cluster's snapshotDir, under a name carrying
 * cluster, time and revision; then it is verified (complete, no `.part` left, size as
 * reported) and its sha256 recorded beside it. "This machine" is off the cluster only
 * when the bot does not run on one of its nodes: `host` is required, so no caller can
 * take a snapshot without that check, and none is taken when it fails.
 */
export async function takeEtcdSnapshot(
  talosctl: Talosctl,
  cluster: ClusterConfig,
  options: { signal?: AbortSignal; timeoutMs: number; now?: Date; host: SnapshotHost },
): Promise<Snapshot> {
  const bounded = AbortSignal.any([...(options.signal ? [options.signal] : []), AbortSignal.timeout(options.timeoutMs)]);
  await refuseSnapshotOnCluster(cluster, options.host, bounded);
  const node = await healthyControlPlane(talosctl, cluster, options.signal);
  await mkdir(cluster.snapshotDir, { recursive: true, mode: 0o700 });
  const takenAt = options.now ?? new Date();
  const base = `${cluster.name}-${stamp(takenAt)}`;
  const partialPath = join(cluster.snapshotDir, `${base}.db`);
  const result = await talosctl.run(['etcd', 'snapshot', partialPath], [node], { signal: options.signal, timeoutMs: options.timeoutMs });
  const report = parseSnapshotOutput(result.stdout);
  if (await exists(`${partialPath}.part`)) {
    throw new OpsError('snapshot-incomplete', `the snapshot ${basename(partialPath)} was left as a .part file`, {
      hint: 'take the snapshot again',
    });
  }
  const id = `${base}-rev${report.revision}`;
  const path = join(cluster.snapshotDir, `${id}.db`);
  await rename(partialPath, path);
  await chmod(path, 0o600);
  const size = (await stat(path)).size;
  if (size !== report.bytes || size === 0) {
    throw new OpsError('snapshot-incomplete', `the snapshot is ${size} bytes but talosctl reported ${report.bytes}`, {
      hint: 'take the snapshot again',
    });
  }
  const sha256 = await sha256Of(path);
  await writeFile(`${path}.sha256`, `${sha256}  ${basename(path)}\n`, { mode: 0o600 });
  return { id, path, bytes: size, sha256, revision: report.revision, totalKeys: report.totalKeys, node, takenAt: takenAt.toISOString() };
}
