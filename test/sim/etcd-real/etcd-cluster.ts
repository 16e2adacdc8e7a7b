/**
 * A real etcd cluster whose members are named for the simulated control planes: the membership and
 * data procedures (learner add and promotion, remove-member with the strict reconfiguration check,
 * leader election, quorum loss, snapshot save with its sha256 trailer, the restore's hash check)
 * are etcd's own. The simulator decides, as Talos would, when a member joins, is promoted, is
 * wiped or restored; this class only runs etcd and etcdctl. reference/real-etcd.md says where
 * Debian's 3.4.23 differs from the 3.6 Talos ships and how the caller makes up for it.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { EtcdProcess, peerUrl } from './etcd-process.ts';
import { etcdctl, etcdctlError, hexId, parseJsonWithIds } from './etcdctl.ts';
import { freePorts } from './free-ports.ts';

export interface RealMember {
  /** `%016x`, as talosctl prints it. */
  id: string;
  /** Empty until the member started once (etcd fills the name in when it publishes itself). */
  name: string;
  peerUrls: string[];
  clientUrls: string[];
  isLearner: boolean;
}

export interface RealStatus {
  memberId: string;
  leader: string;
  raftIndex: number;
  raftTerm: number;
  raftAppliedIndex: number;
  dbSize: number;
  dbSizeInUse: number;
  isLearner: boolean;
  version: string;
  errors: string[];
}

export interface RealEtcdOptions {
  /** Where every data directory and log goes; removed at close. A fresh temp dir by default. */
  baseDir?: string;
  /** Raft timing: shorter than etcd's 100/1000 ms defaults so elections settle quickly in tests. */
  heartbeatMs?: number;
  electionMs?: number;
}

type Result<T> = T | { error: string };

interface MemberSlot {
  name: string;
  incarnation: number;
  process?: EtcdProcess;
  dataDir: string;
  clientPort: number;
  peerPort: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A member process that ended while the cluster waited for it. */
class MemberExited extends Error {
  readonly slot: MemberSlot;
  constructor(slot: MemberSlot) {
    super(`etcd ${slot.name} exited while starting (log: ${slot.process?.config.logFile})`);
    this.slot = slot;
  }
}

/** Whether the member ended because another process had bound one of its ports first. */
async function lostItsPort(slot: MemberSlot): Promise<boolean> {
  const log = slot.process === undefined ? '' : await readFile(slot.process.config.logFile, 'utf8').catch(() => '');
  return log.includes('address already in use');
}

export class RealEtcdCluster {
  readonly baseDir: string;
  readonly #heartbeatMs: number;
  readonly #electionMs: number;
  readonly #slots = new Map<string, MemberSlot>();
  #token = randomUUID();
  #closed = false;
  /** Members added as learners and not promoted yet: a learner refuses the member API, so calls avoid it. */
  readonly #learners = new Map<string, string>();
  /** Before this time, membership changes wait: see `agedAfter`. */
  #agedAt = 0;

  private constructor(baseDir: string, options: RealEtcdOptions) {
    this.baseDir = baseDir;
    this.#heartbeatMs = options.heartbeatMs ?? 50;
    this.#electionMs = options.electionMs ?? 500;
  }

  static async create(options: RealEtcdOptions = {}): Promise<RealEtcdCluster> {
    const baseDir = options.baseDir ?? (await mkdtemp(join((await import('node:os')).tmpdir(), 'sim-etcd-')));
    await mkdir(baseDir, { recursive: true });
    return new RealEtcdCluster(baseDir, options);
  }

  /** Every process this cluster started that still runs (for teardown checks). */
  pids(): number[] {
    return [...this.#slots.values()].flatMap((s) => (s.process?.running && s.process.pid !== undefined ? [s.process.pid] : []));
  }

  running(name: string): boolean {
    return this.#slots.get(name)?.process?.running === true;
  }

  endpoint(name: string): string | undefined {
    return this.#slots.get(name)?.process?.endpoint;
  }

  /** The peer URL the member of this name advertises (unique per incarnation: new ports for new data). */
  peerUrl(name: string): string | undefined {
    const slot = this.#slots.get(name);
    return slot ? peerUrl(slot.peerPort) : undefined;
  }

  async #newSlot(name: string): Promise<MemberSlot> {
    const previous = this.#slots.get(name);
    if (previous?.process?.running) throw new Error(`etcd ${name} still runs; stop it before giving it a new data directory`);
    const [clientPort, peerPort] = await freePorts(2);
    const incarnation = (previous?.incarnation ?? -1) + 1;
    this.#learners.delete(name);
    const slot: MemberSlot = {
      name,
      incarnation,
      dataDir: join(this.baseDir, `${name}.${incarnation}.etcd`),
      clientPort: clientPort!,
      peerPort: peerPort!,
    };
    this.#slots.set(name, slot);
    return slot;
  }

  #start(slot: MemberSlot, initialCluster: string, state: 'new' | 'existing'): void {
    slot.process = new EtcdProcess({
      name: slot.name,
      dataDir: slot.dataDir,
      logFile: join(this.baseDir, `${slot.name}.${slot.incarnation}.log`),
      clientPort: slot.clientPort,
      peerPort: slot.peerPort,
      initialCluster,
      state,
      token: this.#token,
      heartbeatMs: this.#heartbeatMs,
      electionMs: this.#electionMs,
    });
  }

  /** A new cluster of these members, each started, returning once every one answers with a leader. */
  async bootstrap(names: readonly string[]): Promise<void> {
    // A port is free when it is found and taken when etcd binds it; another test file's process
    // may bind it between the two. The member then exits, and the whole cluster starts again on
    // new ports and a new data directory.
    for (let attempt = 1; ; attempt += 1) {
      this.#token = randomUUID();
      const slots: MemberSlot[] = [];
      for (const name of names) slots.push(await this.#newSlot(name));
      const initial = slots.map((s) => `${s.name}=${peerUrl(s.peerPort)}`).join(',');
      for (const slot of slots) this.#start(slot, initial, 'new');
      try {
        await this.#waitFor(
          async () => {
            for (const slot of slots) {
              const status = await this.status(slot.name);
              if ('error' in status || status.leader === '0000000000000000') return false;
            }
            return true;
          },
          `etcd members ${names.join(', ')} to elect a leader`,
          slots,
        );
        return;
      } catch (error) {
        if (!(error instanceof MemberExited) || attempt === 3 || !(await lostItsPort(error.slot))) throw error;
        await Promise.all(slots.map(async (s) => s.process?.stop('SIGKILL')));
      }
    }
  }

  /** Polls until `ready` holds; a process of `members` that exits meanwhile ends the wait (`MemberExited`, with its log's path). */
  async #waitFor(ready: () => Promise<boolean>, what: string, members: readonly MemberSlot[] = [], timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      // Another cluster's member may answer on a port this one lost: only a running member counts.
      const exited = members.find((slot) => slot.process?.running !== true);
      if (exited !== undefined) throw new MemberExited(exited);
      if (await ready()) return;
      if (this.#closed) throw new Error(`etcd cluster closed while waiting for ${what}`);
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (logs in ${this.baseDir})`);
      await sleep(50);
    }
  }

  /** Endpoints of the running voting members other than `except`, to send a cluster-wide call through. */
  #endpoints(except?: string): string[] {
    return [...this.#slots.values()]
      .filter((s) => s.name !== except && s.process?.running && !this.#learners.has(s.name))
      .map((s) => s.process!.endpoint);
  }

  /** `etcdctl member list -w json` through one member (a learner refuses it: 3.4 and 3.6 alike). */
  async members(via: string): Promise<Result<RealMember[]>> {
    const endpoint = this.endpoint(via);
    if (!endpoint || !this.running(via)) return { error: `etcd ${via} is not running` };
    // 3.4 serves the list from local state even without quorum; 3.6 reads it linearizably and
    // Talos asks with WithRequireLeader, so a member without a leader answers "no leader" there.
    const status = await this.status(via);
    if ('error' in status) return status;
    if (status.leader === '0000000000000000') return { error: 'etcdserver: no leader' };
    const result = await etcdctl([endpoint], ['member', 'list', '-w', 'json']);
    if (result.code !== 0) return { error: etcdctlError(result) };
    const parsed = parseJsonWithIds<{
      members?: { ID: string; name?: string; peerURLs?: string[]; clientURLs?: string[]; isLearner?: boolean }[];
    }>(result.stdout);
    return (parsed.members ?? []).map((m) => ({
      id: hexId(m.ID),
      name: m.name ?? '',
      peerUrls: m.peerURLs ?? [],
      clientUrls: m.clientURLs ?? [],
      isLearner: m.isLearner === true,
    }));
  }

  /** `etcdctl endpoint status -w json` of one member. */
  async status(name: string, timeoutMs = 5000): Promise<Result<RealStatus>> {
    const endpoint = this.endpoint(name);
    if (!endpoint || !this.running(name)) return { error: `etcd ${name} is not running` };
    const result = await etcdctl([endpoint], ['endpoint', 'status', '-w', 'json'], timeoutMs);
    if (result.code !== 0) return { error: etcdctlError(result) };
    const [entry] = parseJsonWithIds<
      {
        Status: {
          header?: { member_id?: string; raft_term?: number };
          version?: string;
          dbSize?: number;
          leader?: string;
          raftIndex?: number;
          raftTerm?: number;
          raftAppliedIndex?: number;
          errors?: string[];
          dbSizeInUse?: number;
          isLearner?: boolean;
        };
      }[]
    >(result.stdout);
    const s = entry?.Status;
    if (!s) return { error: `no status in etcdctl's answer: ${result.stdout.trim()}` };
    return {
      memberId: hexId(s.header?.member_id),
      leader: hexId(s.leader ?? 0),
      raftIndex: s.raftIndex ?? 0,
      raftTerm: s.raftTerm ?? 0,
      raftAppliedIndex: s.raftAppliedIndex ?? 0,
      dbSize: s.dbSize ?? 0,
      dbSizeInUse: s.dbSizeInUse ?? 0,
      isLearner: s.isLearner === true,
      version: s.version ?? '',
      errors: s.errors ?? [],
    };
  }

  /**
   * A member of this name, with an empty data directory, joins through the running members: `member
   * add --learner` (etcd refuses a second learner: "too many learner members in cluster"), then its
   * process starts with the membership the add returned. Returns the new member's id.
   */
  async addLearner(name: string): Promise<Result<{ id: string }>> {
    await this.#aged();
    const through = this.#endpoints(name);
    if (through.length === 0) return { error: 'no running etcd member to join through' };
    const slot = await this.#newSlot(name);
    const result = await etcdctl(through, ['member', 'add', name, `--peer-urls=${peerUrl(slot.peerPort)}`, '--learner', '-w', 'json']);
    if (result.code !== 0) return { error: etcdctlError(result) };
    const parsed = parseJsonWithIds<{ member: { ID: string }; members: { ID: string; name?: string; peerURLs?: string[] }[] }>(
      result.stdout,
    );
    const id = hexId(parsed.member.ID);
    // The new member has no name in the list yet; it is the one whose id the add returned.
    const initial = parsed.members
      .map((m) => `${hexId(m.ID) === id ? name : (m.name ?? '')}=${(m.peerURLs ?? []).join(',')}`)
      .filter((entry) => !entry.startsWith('='))
      .join(',');
    this.#learners.set(name, id);
    this.#start(slot, initial, 'existing');
    return { id };
  }

  /**
   * Membership changes wait until `ms` from now: a cluster that stands for one that has run for days
   * must not meet etcd's HealthInterval (5 s after a peer connects, the strict reconfiguration check
   * refuses changes as "unhealthy cluster"), and only the tests that change membership pay for it.
   */
  agedAfter(ms: number): void {
    this.#agedAt = Date.now() + ms;
  }

  async #aged(): Promise<void> {
    const left = this.#agedAt - Date.now();
    if (left > 0) await sleep(left);
  }

  /** `member promote`: etcd refuses a learner that has not caught up with the leader. */
  async promote(id: string): Promise<string | undefined> {
    const result = await etcdctl(this.#endpoints(), ['member', 'promote', id]);
    if (result.code !== 0) return etcdctlError(result);
    this.#forgetLearner(id);
    return undefined;
  }

  /** `member remove` through the running members; etcd's own refusal text, or undefined. */
  async removeMember(id: string): Promise<string | undefined> {
    await this.#aged();
    const through = this.#endpoints();
    if (through.length === 0) return 'no running etcd member';
    const result = await etcdctl(through, ['member', 'remove', id]);
    if (result.code !== 0) return etcdctlError(result);
    this.#forgetLearner(id);
    return undefined;
  }

  #forgetLearner(id: string): void {
    for (const [name, learnerId] of this.#learners) if (learnerId === id) this.#learners.delete(name);
  }

  /** The machine lost power: SIGKILL. */
  async kill(name: string): Promise<void> {
    await this.#slots.get(name)?.process?.stop('SIGKILL');
  }

  /** The etcd service stopped (a reset's stopServices, a reboot): SIGTERM, data kept. */
  async stop(name: string): Promise<void> {
    await this.#slots.get(name)?.process?.stop('SIGTERM');
  }

  /** Starts the member again on the data it has (a failed machine that came back). */
  async restart(name: string): Promise<string | undefined> {
    const slot = this.#slots.get(name);
    if (!slot) return `etcd ${name} never ran here`;
    if (slot.process?.running) return undefined;
    // With data present etcd ignores --initial-cluster; it still wants a value naming itself.
    this.#start(slot, `${name}=${peerUrl(slot.peerPort)}`, 'existing');
    return undefined;
  }

  /** EPHEMERAL wiped: the process stops and its data directory is gone. */
  async wipe(name: string): Promise<void> {
    const slot = this.#slots.get(name);
    if (!slot) return;
    await slot.process?.stop('SIGKILL');
    await rm(slot.dataDir, { recursive: true, force: true });
  }

  /**
   * `etcdctl snapshot save` through one member: the server streams its bolt database followed by
   * the sha256 of it (3.4 and 3.6 alike). A learner refuses the stream.
   */
  async snapshot(name: string, path: string): Promise<string | undefined> {
    const endpoint = this.endpoint(name);
    if (!endpoint || !this.running(name)) return `etcd ${name} is not running`;
    const result = await etcdctl([endpoint], ['snapshot', 'save', path], 15_000);
    return result.code === 0 ? undefined : etcdctlError(result);
  }

  /** `etcdctl snapshot status -w json` of a file: etcd's own bbolt reading of it. */
  async snapshotStatus(
    path: string,
  ): Promise<Result<{ hash: string; revision: number; totalKeys: number; totalSize: number }> | { crash: string }> {
    const result = await etcdctl([], ['snapshot', 'status', path, '-w', 'json'], 15_000);
    // A Go runtime fault (a file cut inside its pages makes bbolt read past its mmap) exits 2 with a trace.
    if (result.code === 2 && /^(panic|unexpected fault|fatal error)/m.test(result.stderr)) return { crash: result.stderr };
    if (result.code !== 0) return { error: etcdctlError(result) };
    const s = JSON.parse(result.stdout) as { hash: number; revision: number; totalKey: number; totalSize: number };
    return { hash: s.hash.toString(16).padStart(8, '0'), revision: s.revision, totalKeys: s.totalKey, totalSize: s.totalSize };
  }

  /**
   * Talos's recovery (services/etcd.go `recoverFromSnapshot`, siderolabs/talos v1.13.9): restore the
   * snapshot into this member's empty data directory as a cluster of one, with the restore's sha256
   * check unless skipped, then start etcd on it. 3.4's restore is `etcdctl snapshot restore`; 3.6
   * moved it to etcdutl with the same checks (reference/real-etcd.md). Every other member's process
   * belongs to the old cluster and is left as it is. Returns the new member's id.
   */
  async restore(name: string, snapshotPath: string, skipHashCheck: boolean): Promise<Result<{ id: string }>> {
    await this.#slots.get(name)?.process?.stop('SIGKILL');
    const slot = await this.#newSlot(name);
    this.#token = randomUUID();
    const initial = `${name}=${peerUrl(slot.peerPort)}`;
    const result = await etcdctl(
      [],
      [
        'snapshot',
        'restore',
        snapshotPath,
        `--name=${name}`,
        `--data-dir=${slot.dataDir}`,
        `--initial-cluster=${initial}`,
        `--initial-cluster-token=${this.#token}`,
        `--initial-advertise-peer-urls=${peerUrl(slot.peerPort)}`,
        ...(skipHashCheck ? ['--skip-hash-check'] : []),
      ],
      15_000,
    );
    if (result.code !== 0) return { error: etcdctlError(result) };
    this.#start(slot, initial, 'existing');
    let id = '';
    await this.#waitFor(async () => {
      const status = await this.status(name);
      if ('error' in status || status.leader === '0000000000000000') return false;
      id = status.memberId;
      return true;
    }, `the restored etcd ${name} to lead`);
    return { id };
  }

  /**
   * Waits until this member reports a leader whose process runs. After a kill the survivors keep
   * naming the dead leader until their election timeout; a proposal sent meanwhile is lost with it.
   */
  async waitForLeader(name: string, timeoutMs = 20_000): Promise<string> {
    let leader = '';
    await this.#waitFor(
      async () => {
        const status = await this.status(name);
        if ('error' in status || status.leader === '0000000000000000') return false;
        if (!(await this.#runningIds()).has(status.leader)) return false;
        leader = status.leader;
        return true;
      },
      `etcd ${name} to see a running leader`,
      [],
      timeoutMs,
    );
    return leader;
  }

  /** Waits until every running voting member names a running leader: an election after a kill is over. */
  async settled(): Promise<void> {
    for (const slot of this.#slots.values()) {
      if (slot.process?.running && !this.#learners.has(slot.name)) await this.waitForLeader(slot.name);
    }
  }

  async #runningIds(): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const slot of this.#slots.values()) {
      if (!slot.process?.running) continue;
      const status = await this.status(slot.name);
      if (!('error' in status)) ids.add(status.memberId);
    }
    return ids;
  }

  /** Stops every process this cluster started and removes every directory it made. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.all([...this.#slots.values()].map((s) => s.process?.stop('SIGKILL') ?? Promise.resolve()));
    await rm(this.baseDir, { recursive: true, force: true });
  }
}
