/**
 * One chaos run: a full production Talos upgrade driven as an operator and an approver would,
 * with one fault injected at a random point, then every invariant checked. A `ChaosBench`
 * keeps one harness (redis-server, simulator, Slack emulator, bot) for many runs and puts the
 * estate back to its starting state between them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { loadInventory } from '../../src/config/inventory.ts';
import type { WindowPolicy } from '../../src/rules/maintenance-window.ts';
import { schedulePending } from '../sim/workloads.ts';
import { CHANNELS, commandReply, startHarness, USERS, type Harness } from '../support/harness.ts';
import { opIdOf, originalButtonValue, tickAll } from '../support/upgrade-flow.ts';
import {
  CLUSTER,
  describeTrigger,
  drawFault,
  judgeStrike,
  watchTrigger,
  type ChaosContext,
  type ChaosTimeouts,
  type FaultName,
  type RunShape,
  type Span,
  type Strike,
} from './faults.ts';
import {
  checkInvariants,
  MAX_RETRIES,
  outcomeOf,
  RecordedOperation,
  type NodeSeen,
  type Outcome,
  type RetryClick,
  type RunEvidence,
  type ThreadReply,
  type Violation,
} from './invariants.ts';
import { mulberry32 } from './prng.ts';

export const FROM_VERSION = 'v1.11.6';
export const TARGET = 'v1.12.11';
const CHANNEL = CHANNELS.production;
const APPROVERS = [USERS.carol, USERS.dave];
/** How long a run watches the bot after Redis lost the operation's record, in ms: longer than a node's reboot and a step's bound. */
const LOSS_WATCH_MS = 8000;
/** How long one run may take before it counts as an operation that never ended, in ms. */
const RUN_DEADLINE_MS = 150_000;

/** Bot timeouts small enough for hundreds of runs, large enough for a loaded two-core machine. */
export const CHAOS_ENV = {
  PROBE_TIMEOUT_SECONDS: '3',
  STEP_TIMEOUT_SECONDS: '4',
  NODE_READY_TIMEOUT_SECONDS: '4',
  POLL_INTERVAL_MS: '50',
  JOB_LOCK_SECONDS: '2',
  SHUTDOWN_GRACE_SECONDS: '2',
  APPROVAL_TTL_MINUTES: '30',
  // Reconnects after a Slack outage come within seconds, so an outage costs a run little more than its length.
  SLACK_RECONNECT_MAX_SECONDS: '3',
} as const;

const TIMEOUTS: ChaosTimeouts = {
  probeMs: Number(CHAOS_ENV.PROBE_TIMEOUT_SECONDS) * 1000,
  nodeReadyMs: Number(CHAOS_ENV.NODE_READY_TIMEOUT_SECONDS) * 1000,
  pollMs: Number(CHAOS_ENV.POLL_INTERVAL_MS),
};

export interface RunReport {
  seed: number;
  fault: FaultName;
  /** Trigger and drawn parameters. */
  plan: string;
  /** Whether the fault met the live operation: a run whose fault did not strike proves nothing about it. */
  strike: Strike;
  opId: string | undefined;
  outcome: Outcome;
  /** Why the operation stopped, when it did. */
  reason: string | undefined;
  violations: Violation[];
  durationMs: number;
  /** What happened, for a failing run's report. */
  trace: string[];
  /** Why the estate could not be put back after the run, when it could not. */
  resetProblem: string | undefined;
  /** Whether the fault was transient: a stop it caused must end completed after Retry. */
  transient: boolean;
  /** Stops the driver answered with Retry (distinct Retry buttons clicked). */
  retries: number;
  /** The run ended stopped, and its stop offered no Retry to click. */
  noRetryOffered: boolean;
}

const hasButton = (blocks: unknown, actionId: string): boolean => JSON.stringify(blocks ?? []).includes(`"action_id":"${actionId}"`);

/** One harness, reused for many runs. */
export class ChaosBench {
  #h: Harness | undefined;
  #runsOnHarness = 0;
  #schematics = new Map<string, string>();
  readonly #runsPerHarness: number;

  readonly #etcd: 'model' | 'real';

  /** `etcd`: real etcd processes under the estate (default), for the replacement's membership changes; `model` for none. */
  constructor(options: { runsPerHarness?: number; etcd?: 'model' | 'real' } = {}) {
    this.#runsPerHarness = options.runsPerHarness ?? 25;
    this.#etcd = options.etcd ?? 'real';
  }

  /** A harness whose estate is in its starting state: fresh when the last one was used enough or could not be reset. */
  async harness(): Promise<Harness> {
    if (this.#h && this.#runsOnHarness >= this.#runsPerHarness) await this.close();
    for (let attempt = 1; !this.#h; attempt += 1) {
      // A harness that cannot start (a bot slow to start on a loaded machine) is tried again, not the end of the whole run.
      this.#h = await startHarness({
        etcd: this.#etcd,
        timing: { rebootMs: 80, stepMs: 5, longhornRebuildMs: 50 },
        env: { ...CHAOS_ENV },
        // A window that is always open: the bot checks it before every step and approval, and the window invariant has steps to judge.
        inventory: { extra: { production: { maintenanceWindows: [{ start: '0 0 * * *', durationMinutes: 1440, timeZone: 'UTC' }] } } },
      }).catch((error: unknown) => {
        if (attempt >= 3) throw error;
        return undefined;
      });
      if (!this.#h) continue;
      this.#runsOnHarness = 0;
      this.#schematics = new Map(this.#h.sim.cluster(CLUSTER).nodes.map((n) => [n.address, n.schematic]));
    }
    this.#runsOnHarness += 1;
    return this.#h;
  }

  /** Puts the estate back after a run; a harness that cannot be put back is replaced at the next run, and the reason returned. */
  async reset(opId: string | undefined): Promise<string | undefined> {
    const h = this.#h;
    if (!h) return undefined;
    try {
      await resetEstate(h, opId, this.#schematics);
      return undefined;
    } catch (error) {
      await this.close();
      return `harness replaced: ${(error as Error).message}`;
    }
  }

  async close(): Promise<void> {
    const h = this.#h;
    this.#h = undefined;
    if (h) await h.stop().catch(() => undefined);
  }
}

async function readOperation(url: string, opId: string): Promise<{ op: RecordedOperation | undefined; raw: string }> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const raw = (await client.get(`talos:op:${opId}`)) ?? '';
    return { op: raw === '' ? undefined : RecordedOperation.parse(JSON.parse(raw)), raw };
  } catch {
    return { op: undefined, raw: '' };
  } finally {
    client.disconnect();
  }
}

/** Every operation on the cluster created since `sinceMs`, oldest first (the store indexes them by creation time). */
async function readOperationsSince(url: string, sinceMs: number, note: (text: string) => void): Promise<RecordedOperation[]> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const ids = await client.zrangebyscore(`talos:ops:${CLUSTER}`, sinceMs, '+inf');
    const out: RecordedOperation[] = [];
    for (const id of ids) {
      const raw = await client.get(`talos:op:${id}`);
      const parsed = raw === null ? undefined : RecordedOperation.safeParse(JSON.parse(raw));
      if (parsed?.success) out.push(parsed.data);
      else
        note(
          `operation ${id} could not be read: ${parsed ? parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ') : 'it is gone'}`,
        );
    }
    return out;
  } catch (error) {
    note(`the operations could not be listed: ${(error as Error).message}`);
    return [];
  } finally {
    client.disconnect();
  }
}

/** The window rules of the cluster's inventory entry, as the bot reads them. */
function windowPolicyOf(h: Harness): WindowPolicy {
  const cluster = loadInventory(h.inventoryPath).clusters.find((c) => c.name === CLUSTER);
  if (!cluster) throw new Error(`the inventory ${h.inventoryPath} has no cluster ${CLUSTER}`);
  return {
    environment: cluster.environment,
    maintenanceWindows: cluster.maintenanceWindows,
    allowOutsideWindows: cluster.allowOutsideWindows,
  };
}

async function redisAnswers(url: string): Promise<boolean> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    client.disconnect();
  }
}

async function lockHolder(url: string): Promise<string | undefined> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return (await client.get(`talos:lock:${CLUSTER}`)) ?? undefined;
  } finally {
    client.disconnect();
  }
}

const TERMINAL = ['completed', 'failed', 'refused', 'cancelled'];
/** Audit events that end an operation's audit. */
const FINAL_EVENTS = ['completed', 'stopped', 'preflight refused', 'cancelled', 'cancelled between steps'];

function threadOf(h: Harness, rootTs: string): ThreadReply[] {
  return h.slack
    .thread(CHANNEL, rootTs)
    .map((m) => ({ ts: m.ts, firstText: h.slack.versions(CHANNEL, m.ts)[0]?.text ?? m.text, text: m.text }));
}

/** Audit entries posted in the thread: a reply carries one per line, several when entries were held for the next one. */
const auditEntriesIn = (thread: ThreadReply[]): number => thread.reduce((n, r) => n + [...r.firstText.matchAll(/^#\d+ /gm)].length, 0);

/** Sends the command until the bot takes it (it may be down), and returns the operation id. */
async function sendCommand(h: Harness, ctx: ChaosContext, command: string): Promise<string> {
  for (;;) {
    const result = await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNEL, text: command });
    // The reply naming the operation follows the empty ack through the response_url, unless the bot went down in between.
    const text = result.timedOut ? '' : await commandReply(h.slack, result, { timeoutMs: 15_000 }).catch(() => '');
    if (/\bop-[a-z0-9]+\b/.test(text)) return opIdOf(text);
    ctx.note(`the command was not taken: ${text || (result.timedOut ? result.reason : 'no answer')}`);
    if (ctx.over.aborted) throw new Error('the command was never taken');
    await sleep(1000);
  }
}

/**
 * Acts as the people in the channel until the operation ends: an approver overrides the missing
 * staging rehearsal, an operator clicks Start, an approver approves each control plane. A click
 * that changed nothing (the bot was down, Slack lost it) is repeated after a while, as a person would.
 */
async function operate(
  h: Harness,
  ctx: ChaosContext,
  opId: string,
  deadline: number,
  retrying: Retrying,
): Promise<{ rootTs: string | undefined; ended: boolean; lastSeen?: RecordedOperation }> {
  const clicks = new Map<string, number>();
  let lastSeen: RecordedOperation | undefined;
  const clickedRecently = (key: string, ms: number): boolean => Date.now() - (clicks.get(key) ?? 0) < ms;
  let rootTs: string | undefined;
  let lastPoll = 0;
  while (Date.now() < deadline) {
    if (Date.now() - lastPoll > 200) {
      lastPoll = Date.now();
      const { op } = await readOperation(h.redis.url, opId);
      lastSeen = op ?? lastSeen;
      // Redis lost the record: the run watches a while longer for a change the bot should no longer send, then ends.
      if (!op && ctx.lockLostAt !== undefined && Date.now() - ctx.lockLostAt > LOSS_WATCH_MS) return { rootTs, ended: true, lastSeen };
      if (op?.rootTs) rootTs = op.rootTs;
      if (op && TERMINAL.includes(op.state)) {
        const retried = rootTs !== undefined && (await clickRetry(h, ctx, op, rootTs, retrying, clicks));
        if (!retried && !retrying.mayComeLater(op)) return { rootTs: op.rootTs ?? rootTs, ended: true };
      }
    }
    rootTs ??= h.slack.channelMessages(CHANNEL).find((m) => m.text.includes(opId))?.ts;
    const root = rootTs === undefined ? undefined : h.slack.message(CHANNEL, rootTs);
    // The people wait while a fault is coming into force: the operation stays at its next button, live.
    if (root && rootTs && !ctx.clicksHeld()) {
      // Production has no staging rehearsal in these records: two approvers override, then an operator starts.
      if (hasButton(root.blocks, 'talos-op-override') && !clickedRecently('override', 3000)) {
        clicks.set('override', Date.now());
        const overrider = JSON.stringify(root.blocks ?? []).includes(`overridden by <@${USERS.carol}>`) ? USERS.dave : USERS.carol;
        await h.slack.clickButton({ user: overrider, channel: CHANNEL, messageTs: rootTs, actionId: 'talos-op-override' });
      } else if (hasButton(root.blocks, 'talos-op-start') && !clickedRecently('start', 3000) && !clickedRecently('override', 400)) {
        clicks.set('start', Date.now());
        ctx.milestones.startAt ??= Date.now();
        await h.slack.clickButton({ user: USERS.alice, channel: CHANNEL, messageTs: rootTs, actionId: 'talos-op-start' });
      }
      for (const reply of h.slack.thread(CHANNEL, rootTs)) {
        if (!hasButton(reply.blocks, 'talos-step-approve') || clickedRecently(reply.ts, 4000)) continue;
        if (!clicks.has(reply.ts)) ctx.milestones.approvalsClicked += 1;
        clicks.set(reply.ts, Date.now());
        await h.slack.clickButton({
          user: USERS.carol,
          channel: CHANNEL,
          messageTs: reply.ts,
          actionId: 'talos-step-approve',
          value: originalButtonValue(h, CHANNEL, reply.ts, 'talos-step-approve'),
          ticks: tickAll(h, CHANNEL, reply.ts),
        });
      }
    }
    await sleep(40);
  }
  return { rootTs, ended: false };
}

/** What the driver needs to answer a stop with Retry, and what it records of each click. */
interface Retrying {
  /** The fault is transient and has been lifted: a Retry now should see it gone. */
  ready(): boolean;
  /** A stop that may still be retried once the fault lifts: the driver keeps waiting for it. */
  mayComeLater(op: RecordedOperation): boolean;
  readonly clicks: RetryClick[];
}

const retryOffered = (op: RecordedOperation): boolean => op.state === 'failed' && op.retry?.state === 'offered';

/**
 * Clicks Retry, as an approver, on a stop that offers it once the transient fault is gone, at most
 * {@link MAX_RETRIES} times per run; a click that changed nothing (the bot was down) is repeated
 * after a while. Each click records what every control plane runs at that moment. True when it clicked.
 */
async function clickRetry(
  h: Harness,
  ctx: ChaosContext,
  op: RecordedOperation,
  rootTs: string,
  retrying: Retrying,
  clicks: Map<string, number>,
): Promise<boolean> {
  if (!retryOffered(op) || !retrying.ready() || !op.retry) return false;
  const { nonce } = op.retry;
  const distinct = new Set(retrying.clicks.map((c) => c.nonce));
  if (!distinct.has(nonce) && distinct.size >= MAX_RETRIES) return false;
  if (Date.now() - (clicks.get(`retry-${nonce}`) ?? 0) < 4000) return true;
  const message = [h.slack.message(CHANNEL, rootTs), ...h.slack.thread(CHANNEL, rootTs)].find(
    (m) => m !== undefined && hasButton(m.blocks, 'talos-op-retry') && JSON.stringify(m.blocks).includes(nonce),
  );
  // The stop message may still be on its way to the thread.
  if (!message) return true;
  clicks.set(`retry-${nonce}`, Date.now());
  const nodes: Record<string, NodeSeen> = {};
  for (const n of h.sim.cluster(CLUSTER).nodes) nodes[n.address] = { version: n.talosVersion, bootId: n.bootId, stage: n.stage };
  retrying.clicks.push({ at: Date.now(), nonce, nodes });
  ctx.note(`Retry clicked on ${op.retry.step} (${op.reason ?? 'no reason'})`);
  await h.slack.clickButton({ user: USERS.carol, channel: CHANNEL, messageTs: message.ts, actionId: 'talos-op-retry' });
  return true;
}

/**
 * What a run drives: the production Talos upgrade, or the replacement of a control plane whose
 * machine failed (its member removed, the reviewed replace plan applied, the new member voting).
 */
export type Scenario = 'upgrade' | 'replace';
export const SCENARIOS: readonly Scenario[] = ['upgrade', 'replace'];

/** One seeded run on the bench's harness. */
export async function runChaos(bench: ChaosBench, options: { seed: number; fault?: FaultName; scenario?: Scenario }): Promise<RunReport> {
  const started = Date.now();
  const scenario = options.scenario ?? 'upgrade';
  const h = await bench.harness();
  const production = h.sim.cluster(CLUSTER);
  const nodes = production.nodes.filter((n) => n.role === 'controlplane').map((n) => n.address);
  // A replacement's victim: any control plane but the first, picked by the seed so a run can be replayed.
  const victim = nodes[1 + (options.seed % (nodes.length - 1))]!;
  const command = scenario === 'replace' ? `replace ${victim}` : `upgrade talos ${TARGET}`;
  const rng = mulberry32(options.seed);
  // A replacement upgrades no node and asks one approval: a moment tied to a node's upgrade or boot is that of the victim's new machine.
  const shape: RunShape =
    scenario === 'replace' ? { nodes: [victim], approvals: 1, upgrades: false } : { nodes, approvals: nodes.length, upgrades: true };
  const plan = drawFault(rng, shape, TIMEOUTS, options.fault);
  const trace: string[] = [];
  const over = new AbortController();
  const injected: { from?: number; to?: number } = {};
  let tookEffect = (): void => undefined;
  const ctx: ChaosContext = {
    h,
    eventsFrom: h.sim.events.length,
    callsFrom: h.sim.calls.length,
    milestones: { approvalsClicked: 0 },
    extraBots: [],
    over: over.signal,
    note: (text) => trace.push(`${Date.now() - started}ms ${text}`),
    tookEffect: (at) => {
      injected.from ??= at ?? Date.now();
      tookEffect();
    },
    clicksHeld: () => false,
    lifted: () => {
      if (injected.from !== undefined) injected.to ??= Date.now();
    },
    readyWhileSlackAway: [],
  };
  const trafficFrom = h.slack.allTraffic().length;
  const answersFrom = h.slack.apiCalls.length;
  const logsFrom = h.bot.logs().length;
  const exitsFrom = h.bot.exits();
  try {
    await plan.arm?.(ctx);
  } catch (error) {
    ctx.note(`the fault could not be armed: ${(error as Error).message}`);
  }
  let injectionDone = false;
  let injecting: Promise<void> | undefined;
  // Fired at the trigger: the fault starts, and the run goes on (the held call is answered) once it is in force and has met the bot.
  const fire = (): Promise<void> => {
    ctx.note(`fault ${plan.fault} fires at ${describeTrigger(plan.trigger)}`);
    const inForce = new Promise<void>((resolve) => {
      tookEffect = resolve;
      if (injected.from !== undefined) resolve();
    });
    injecting = plan.inject(ctx);
    const met = (async () => {
      await inForce;
      while (plan.met && !plan.met(ctx) && !over.signal.aborted) await sleep(20);
    })();
    return Promise.race([met, injecting.catch(() => undefined)]);
  };
  const injection = (async () => {
    if (!(await watchTrigger(ctx, plan.trigger, fire))) return;
    await injecting;
  })()
    .catch((error: unknown) => ctx.note(`the fault could not be injected: ${(error as Error).message}`))
    .finally(() => {
      injectionDone = true;
    });
  const retrying: Retrying = {
    // A fault that stays until the run ends is cleared only after it: its stop is the end.
    ready: () => plan.transient && injectionDone && h.bot.running(),
    mayComeLater: (op) =>
      plan.transient &&
      retryOffered(op) &&
      (!injectionDone || !h.bot.running()) &&
      new Set(retrying.clicks.map((c) => c.nonce)).size < MAX_RETRIES,
    clicks: [],
  };

  let opId: string | undefined;
  let ended = false;
  let rootTs: string | undefined;
  let endedSeenAt: number | undefined;
  let lastSeen: RecordedOperation | undefined;
  const deadline = Date.now() + RUN_DEADLINE_MS;
  const timer = setTimeout(() => over.abort(), RUN_DEADLINE_MS);
  try {
    if (scenario === 'replace') {
      h.sim.failMachine(CLUSTER, victim);
      await h.sim.etcdSettled(CLUSTER);
      ctx.note(`the machine of ${victim} failed`);
    }
    ctx.milestones.commandAt = Date.now();
    opId = await sendCommand(h, ctx, command);
    ctx.milestones.opAt = Date.now();
    ctx.note(`operation ${opId}`);
    ({ rootTs, ended, lastSeen } = await operate(h, ctx, opId, deadline, retrying));
    if (ended) endedSeenAt = Date.now();
  } catch (error) {
    ctx.note(`the driver gave up: ${(error as Error).message}`);
  } finally {
    clearTimeout(timer);
    over.abort();
  }
  await injection;
  await plan.clear(ctx);
  h.sim.faults.clear(CLUSTER);
  h.slack.faults.clear();
  const clearedAt = Date.now();
  if (!(await redisAnswers(h.redis.url))) await h.redis.restart();
  if (!h.bot.running()) await h.bot.start();

  // The state is written before the entry that ends the audit: let that entry, and every reply, land before judging.
  let record = opId ? await readOperation(h.redis.url, opId) : { op: undefined, raw: '' };
  // A preflight refusal can be stored before its message is posted: wait for the message the thread hangs off.
  for (const by = Date.now() + 10_000; opId && rootTs === undefined && Date.now() < by; await sleep(100)) {
    rootTs = record.op?.rootTs ?? h.slack.channelMessages(CHANNEL).find((m) => m.text.includes(opId!))?.ts;
    if (rootTs === undefined) record = await readOperation(h.redis.url, opId);
  }
  if (opId && rootTs) {
    const settled = (op: RecordedOperation): boolean =>
      op.audit.some((a) => FINAL_EVENTS.includes(a.event)) && auditEntriesIn(threadOf(h, rootTs!)) >= op.audit.length;
    const settleBy = Date.now() + 10_000;
    while (Date.now() < settleBy && record.op && !settled(record.op)) {
      await sleep(100);
      record = await readOperation(h.redis.url, opId);
    }
  }
  for (const other of ctx.extraBots) await other.stop();
  ctx.note(`run over: ${record.op?.state ?? 'no operation'}`);

  const calls = h.sim.calls.slice(ctx.callsFrom);
  const events = h.sim.events.slice(ctx.eventsFrom);
  // A record Redis lost is judged by what the driver last read of it.
  const known = record.op ?? (ctx.lockLostAt !== undefined ? lastSeen : undefined);
  const live: Span | undefined = known
    ? { from: Date.parse(known.createdAt), to: known.endedAt ? Date.parse(known.endedAt) : (endedSeenAt ?? clearedAt) }
    : undefined;
  const strike = judgeStrike(plan, {
    live,
    injection: injected.from === undefined ? undefined : { from: injected.from, to: injected.to ?? clearedAt },
    calls,
    events,
    slackAnswers: h.slack.apiCalls.slice(answersFrom).map((a) => ({ method: a.method, status: a.status, at: a.at })),
  });
  ctx.note(strike.struck ? `the fault struck: ${strike.how}` : `the fault did not strike: ${strike.why}`);

  const evidence: RunEvidence = {
    cluster: CLUSTER,
    controlPlanes: nodes,
    // A replacement moves no version: every node, the new one included, runs what it ran.
    target: scenario === 'replace' ? FROM_VERSION : TARGET,
    events,
    calls,
    op: known,
    operations:
      record.op === undefined && known !== undefined ? [known] : await readOperationsSince(h.redis.url, started, (text) => ctx.note(text)),
    inventory: windowPolicyOf(h),
    ended,
    thread: rootTs ? threadOf(h, rootTs) : [],
    versionsAfter: Object.fromEntries(production.nodes.map((n) => [n.address, n.talosVersion])),
    approvers: APPROVERS,
    canary: h.sim.canary,
    texts: [
      { source: 'Slack traffic', text: h.slack.allTraffic().slice(trafficFrom) },
      { source: 'the bot log', text: h.bot.logs().slice(logsFrom) },
      ...ctx.extraBots.map((b, i) => ({ source: `the log of bot #${i + 2}`, text: b.logs() })),
      { source: 'the operation record in Redis', text: record.raw },
    ],
    botExits: h.bot.exits() - exitsFrom,
    readyWhileSlackAway: ctx.readyWhileSlackAway,
    transient: plan.transient,
    retryClicks: retrying.clicks,
    lockLostAt: ctx.lockLostAt,
  };
  const violations = checkInvariants(evidence);
  const resetProblem = await bench.reset(opId);
  return {
    seed: options.seed,
    fault: plan.fault,
    plan: `${scenario === 'replace' ? `replace ${victim}, ` : ''}${describeTrigger(plan.trigger)} ${plan.detail}`,
    strike,
    opId,
    outcome: outcomeOf(evidence),
    reason: record.op?.reason ?? (record.op?.refusals.length ? record.op.refusals.join('; ') : undefined),
    violations,
    durationMs: Date.now() - started,
    trace,
    resetProblem,
    transient: plan.transient,
    retries: new Set(retrying.clicks.map((c) => c.nonce)).size,
    // A refusal is no dead end either: its message offers Check again, a fresh preflight of the same request.
    noRetryOffered: record.op !== undefined && !['completed', 'refused'].includes(record.op.state) && !retryOffered(record.op),
  };
}

/**
 * Back to the starting estate: the stopped operation cancelled (which frees the cluster), every
 * production node on the old version, Ready, uncordoned and in service. Throws when that cannot
 * be reached, and the bench then starts a fresh harness.
 */
async function resetEstate(h: Harness, opId: string | undefined, schematics: Map<string, string>): Promise<void> {
  const cluster = h.sim.cluster(CLUSTER);
  h.sim.faults.clear(CLUSTER);
  if (opId) {
    const { op } = await readOperation(h.redis.url, opId);
    if (op && !TERMINAL.includes(op.state)) throw new Error(`${opId} is still ${op.state}`);
    if (op && op.state === 'failed') {
      const reply = await h.command(`cancel ${opId}`);
      if (!reply.includes('is free for the next operation')) throw new Error(`cancel of ${opId} answered: ${reply}`);
    }
  }
  // A finished operation's lock, should one be left, is the bot's reconciler's to release.
  const lockBy = Date.now() + 8000;
  let holder = await lockHolder(h.redis.url);
  while (holder !== undefined && Date.now() < lockBy) {
    await sleep(100);
    holder = await lockHolder(h.redis.url);
  }
  if (holder !== undefined) throw new Error(`${CLUSTER} is still held by ${holder}`);
  // Reboots in flight finish within a fraction of a second; a stalled upgrade never does.
  const settleBy = Date.now() + 3000;
  while (Date.now() < settleBy && cluster.nodes.some((n) => n.stage === 'rebooting' || n.stage === 'booting')) await sleep(20);
  for (const node of cluster.nodes) {
    if (node.stage === 'rebooting' || node.stage === 'booting' || node.stage === 'lost' || node.stage === 'off')
      throw new Error(`${node.address} is ${node.stage}`);
    node.talosVersion = FROM_VERSION;
    node.schematic = schematics.get(node.address) ?? node.schematic;
    delete node.fallbackVersion;
    delete node.fallbackSchematic;
    node.kubeletNotReady = false;
    node.servicesStopped = false;
    node.cordoned = false;
    node.cordonedByTalos = false;
    node.k8sRegistered = true;
    if (node.stage !== 'running') {
      node.stage = 'running';
      node.lastUpAt = Date.now();
    }
  }
  schedulePending(cluster, Date.now());
}
