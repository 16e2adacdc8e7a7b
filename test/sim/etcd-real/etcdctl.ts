/**
 * Runs Debian's `etcdctl` (3.4) against one or more members and reads its `-w json` answers. The
 * JSON carries member and cluster ids as bare uint64 numbers, which a JavaScript number cannot hold,
 * so they are quoted before parsing and handed on as `%016x` hex, as talosctl prints them.
 */
import { execFile } from 'node:child_process';

export interface EtcdctlResult {
  code: number;
  stdout: string;
  stderr: string;
}

export function etcdctl(endpoints: readonly string[], args: readonly string[], timeoutMs = 5000): Promise<EtcdctlResult> {
  return new Promise((resolve) => {
    execFile(
      'etcdctl',
      [
        ...(endpoints.length > 0 ? [`--endpoints=${endpoints.join(',')}`] : []),
        '--dial-timeout=2s',
        `--command-timeout=${Math.max(1, Math.floor(timeoutMs / 1000))}s`,
        ...args,
      ],
      { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ETCDCTL_API: '3' }, timeout: timeoutMs + 2000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

/** The id fields etcdctl writes as uint64 JSON numbers (etcdserverpb ResponseHeader, Member, StatusResponse). */
const ID_FIELDS = /"(ID|id|member_id|cluster_id|leader)":(\d+)/g;

export function parseJsonWithIds<T>(text: string): T {
  return JSON.parse(text.replace(ID_FIELDS, '"$1":"$2"')) as T;
}

/** A decimal uint64 as etcd and talosctl print member ids: 16 hex digits. */
export function hexId(decimal: string | number | undefined): string {
  if (decimal === undefined) return '0000000000000000';
  return BigInt(decimal).toString(16).padStart(16, '0');
}

/**
 * etcdctl's last error line without its own prefix, e.g. `etcdserver: unhealthy cluster` from
 * `{"level":"warn",...}` noise followed by `Error: etcdserver: unhealthy cluster`.
 */
export function etcdctlError(result: EtcdctlResult): string {
  // A call that ran out of time: etcdctl's retry warnings and its own wording reduce to gRPC's text.
  if (result.stderr.includes('context deadline exceeded')) return 'context deadline exceeded';
  const lines = result.stderr.split('\n').filter((l) => l.startsWith('Error: '));
  const last = lines.at(-1);
  return last ? last.slice('Error: '.length).trim() : result.stderr.trim() || `etcdctl exited with ${result.code}`;
}
