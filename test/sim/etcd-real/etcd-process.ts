/**
 * One etcd member as a real process on loopback: its own client and peer ports, its own data
 * directory, its output in a log file beside the data directory (read it when a test fails).
 * Debian's etcd 3.4.23 (`etcd-server`); flags as `etcd --help` of that version lists them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

export interface EtcdProcessConfig {
  name: string;
  dataDir: string;
  logFile: string;
  clientPort: number;
  peerPort: number;
  /** `name=peerURL,…` of the cluster it starts into. */
  initialCluster: string;
  state: 'new' | 'existing';
  token: string;
  heartbeatMs: number;
  electionMs: number;
}

export const clientUrl = (port: number): string => `http://127.0.0.1:${port}`;
export const peerUrl = (port: number): string => `http://127.0.0.1:${port}`;

export class EtcdProcess {
  readonly config: EtcdProcessConfig;
  readonly #child: ChildProcess;
  #exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  readonly #exited: Promise<void>;

  constructor(config: EtcdProcessConfig) {
    this.config = config;
    const log = openSync(config.logFile, 'a');
    try {
      this.#child = spawn(
        'etcd',
        [
          `--name=${config.name}`,
          `--data-dir=${config.dataDir}`,
          `--listen-client-urls=${clientUrl(config.clientPort)}`,
          `--advertise-client-urls=${clientUrl(config.clientPort)}`,
          `--listen-peer-urls=${peerUrl(config.peerPort)}`,
          `--initial-advertise-peer-urls=${peerUrl(config.peerPort)}`,
          `--initial-cluster=${config.initialCluster}`,
          `--initial-cluster-state=${config.state}`,
          `--initial-cluster-token=${config.token}`,
          `--heartbeat-interval=${config.heartbeatMs}`,
          `--election-timeout=${config.electionMs}`,
          // On by default in 3.4 and always on in 3.6 (reference/real-etcd.md); named so nobody turns it off.
          '--strict-reconfig-check=true',
          '--logger=zap',
          '--log-outputs=stderr',
        ],
        { stdio: ['ignore', log, log], env: { PATH: process.env.PATH ?? '/usr/bin:/bin' } },
      );
    } finally {
      closeSync(log);
    }
    this.#exited = new Promise((resolve) => {
      this.#child.once('exit', (code, signal) => {
        this.#exit = { code, signal };
        resolve();
      });
      this.#child.once('error', () => {
        this.#exit ??= { code: null, signal: null };
        resolve();
      });
    });
  }

  get endpoint(): string {
    return clientUrl(this.config.clientPort);
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  get exit(): { code: number | null; signal: NodeJS.Signals | null } | undefined {
    return this.#exit;
  }

  /** SIGKILL (a machine that lost power) or SIGTERM (a service stopped); resolves once it is gone. */
  async stop(signal: 'SIGKILL' | 'SIGTERM'): Promise<void> {
    if (!this.running) return;
    this.#child.kill(signal);
    if (signal === 'SIGTERM') {
      // etcd stops within a second; a stuck one is killed rather than leaked.
      const timer = setTimeout(() => this.#child.kill('SIGKILL'), 5000);
      await this.#exited;
      clearTimeout(timer);
      return;
    }
    await this.#exited;
  }
}
