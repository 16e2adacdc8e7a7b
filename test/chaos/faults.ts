/**
 * The fault catalogue of the chaos suite. Each fault draws its parameters and the moment it
 * strikes from the run's seeded PRNG, injects itself when that moment comes, and is cleared
 * when the run ends (or earlier, when the fault is "for a while"). A moment is a state of the
 * run, never a delay: a point the people or the simulator reached, then a talosctl call of the
 * operation that the simulator holds until the fault is in force. The operation waits on that
 * call, so it is live when the fault strikes, on any machine at any load. After the run each
 * fault tells from the records whether it struck: one that did not is a finding, not bad luck.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import type { CallRecord, SimEvent } from '../sim/index.ts';
import type { BotProcess } from '../support/bot-process.ts';
import type { SocketOutage } from '../slack-emulator/index.ts';
import type { Harness } from '../support/harness.ts';
import type { Rng } from './prng.ts';

export const FAULT_NAMES = [
  'bot-kill',
  'redis-restart',
  'slack-429',
  'slack-5xx',
  'talosctl-hang',
  'talosctl-fail',
  'node-not-ready',
  'silent-revert',
  'second-bot',
  'slack-unreachable',
  'redis-data-loss',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export const CLUSTER = 'production';

/**
 * When a fault strikes, counted from a point of the run:
 * - `command`: the `/talos upgrade` command was sent (preflight and plan); with `hold: 'clicks'`, the bot took it;
 * - `start`: Start was clicked (snapshot, first approval request);
 * - `approval`: the driver clicked the `n`th approval (1-based), so that node's upgrade is starting;
 * - `upgrade-start`: the simulator accepted the upgrade of `node` (it is draining or rebooting);
 *   in a replacement, Terraform recreated the VM of `node`;
 * - `node-up`: `node` is back after its reboot (the bot is checking quorum, health and Longhorn).
 *
 * From that point the `call`th talosctl call on the cluster (of `path` only, when given) is held
 * by the simulator until the fault is in force, then answered under it. A fault that takes seconds
 * to be in force (a bot starting) holds the people instead (`hold: 'clicks'`): from the point on,
 * nobody clicks until it is in force, so the operation waits at its next button.
 */
export type Trigger = ({ at: 'command' | 'start' } | { at: 'approval'; n: number } | { at: 'upgrade-start' | 'node-up'; node: string }) & {
  call: number;
  path?: string;
  hold?: 'call' | 'clicks';
};

/** What the operation of a run is made of, for drawing moments it certainly reaches. */
export interface RunShape {
  /** Nodes the run's `upgrade-start` and `node-up` events name: the upgraded ones, or a replacement's new machine. */
  nodes: readonly string[];
  /** Approvals the operation asks for, one after another. */
  approvals: number;
  /** Whether the operation upgrades its nodes (a replacement upgrades none). */
  upgrades: boolean;
}

/** Faults only an upgrade meets: they act on a node's upgrade reboot. */
const UPGRADE_ONLY: readonly FaultName[] = ['node-not-ready', 'silent-revert'];

/** The faults a run of this shape can meet. */
export function faultsFor(shape: RunShape): readonly FaultName[] {
  return shape.upgrades ? FAULT_NAMES : FAULT_NAMES.filter((f) => !UPGRADE_ONLY.includes(f));
}

/** What the driver tells the faults about the run, and what faults leave for the report. */
export interface ChaosContext {
  h: Harness;
  /** Sim events before this index belong to earlier runs. */
  eventsFrom: number;
  /** Sim calls before this index belong to earlier runs. */
  callsFrom: number;
  /** Set by the driver as the operator acts. */
  milestones: { commandAt?: number; opAt?: number; startAt?: number; approvalsClicked: number };
  /** Bot processes a fault started besides `h.bot`; the driver stops them after the run. */
  extraBots: BotProcess[];
  /** Aborted when the run is over: a trigger that has not fired gives up. */
  over: AbortSignal;
  /** A line for the run's trace. */
  note(text: string): void;
  /** The fault is in force from now on, or from `at` (the held call it answers); the first call counts. */
  tookEffect(at?: number): void;
  /** The talosctl call the simulator holds for the fault, when the trigger holds one. */
  heldCall?: CallRecord;
  /** Whether the people wait (click nothing) for the fault to be in force. */
  clicksHeld(): boolean;
  /** The fault is lifted now; a fault never lifted lasts until the driver clears it after the run. */
  lifted(): void;
  /** `/readyz` answers a fault took while Slack was away from the bot, for the invariants. */
  readyWhileSlackAway: { at: number; status: number }[];
  /** When a fault took the operation's cluster lock away (Redis lost its data), for the invariants. */
  lockLostAt?: number;
}

/** A stretch of time, in epoch ms, both ends inclusive. */
export interface Span {
  from: number;
  to: number;
}

/** What a run's fault is judged on once the run is over. */
export interface StrikeEvidence {
  /** From the operation's creation to its end (or the end of the run); undefined when no operation was created. */
  live: Span | undefined;
  /** While the fault was in force; undefined when it never took effect (its moment never came). */
  injection: Span | undefined;
  /** Simulator calls of this run. */
  calls: readonly CallRecord[];
  /** Simulator events of this run. */
  events: readonly SimEvent[];
  /** Web API answers of the Slack emulator in this run. */
  slackAnswers: readonly { method: string; status: number; at: number }[];
}

/** Whether the fault met the live operation, and how, or why not. */
export type Strike = { struck: true; how: string } | { struck: false; why: string };

export interface FaultPlan {
  fault: FaultName;
  trigger: Trigger;
  /** The drawn parameters, for the log line. */
  detail: string;
  /**
   * Whether the fault is gone by itself once lifted (a call failing once, the bot killed and
   * started again, Redis restarted, Slack away for a while): a stop it caused must be resumed by
   * Retry. A fault that stays until the run ends (a node that never becomes Ready, an upgrade that
   * stalls, a silent revert, a second bot) is not: its stop is the right end.
   */
  transient: boolean;
  /** Set-up before the command is sent (a node fault the simulator applies at that node's reboot, a bot started ahead). */
  arm?(ctx: ChaosContext): void | Promise<void>;
  /** Besides having taken effect, what must hold before the run goes on (a reconnect that failed): the fault has met the bot. */
  met?(ctx: ChaosContext): boolean;
  /** Called once the trigger fires. Resolves when the fault has done its work (a restart finished). */
  inject(ctx: ChaosContext): Promise<void>;
  /** Removes whatever is left of the fault; safe to call more than once. */
  clear(ctx: ChaosContext): Promise<void>;
  /** Whether it struck, judged from what the run recorded; called only with an injection and a live operation. */
  strike(e: StrikeEvidence & { live: Span; injection: Span }): Strike;
}

export interface ChaosTimeouts {
  /** `PROBE_TIMEOUT_SECONDS` of the bot, in ms: how long a hung probe lives. */
  probeMs: number;
  /** `NODE_READY_TIMEOUT_SECONDS` of the bot, in ms. */
  nodeReadyMs: number;
  /** `POLL_INTERVAL_MS` of the bot: a node NotReady for less may never be seen. */
  pollMs: number;
}

export function describeTrigger(trigger: Trigger): string {
  const where =
    trigger.at === 'approval'
      ? `approval#${trigger.n}`
      : trigger.at === 'upgrade-start' || trigger.at === 'node-up'
        ? `${trigger.at}(${trigger.node})`
        : trigger.at;
  if (trigger.hold === 'clicks') return `${where} (clicks held)`;
  return `${where}+call#${trigger.call}${trigger.path === undefined ? '' : ` (${trigger.path})`}`;
}

/**
 * A random moment anywhere in the run. Each is reached by every run of the shape, and talosctl
 * calls follow each: the checks after the last node run several of every probe.
 */
function anyMoment(rng: Rng, shape: RunShape): Trigger {
  const kind = rng.pick(['command', 'start', 'approval', 'upgrade-start', 'node-up'] as const);
  const call = rng.int(1, 3);
  switch (kind) {
    case 'command':
    case 'start':
      return { at: kind, call };
    case 'approval':
      return { at: kind, n: rng.int(1, shape.approvals), call };
    default:
      return { at: kind, node: rng.pick(shape.nodes), call };
  }
}

/**
 * A random moment at which the operation waits for a person next (Start, or a further approval):
 * for a fault that takes seconds to be in force, with the people holding their clicks until it is.
 */
function earlyMoment(rng: Rng, shape: RunShape): Trigger {
  const kind = rng.pick(shape.approvals > 1 ? (['command', 'start', 'approval'] as const) : (['command', 'start'] as const));
  return kind === 'approval'
    ? { at: kind, n: rng.int(1, shape.approvals - 1), call: 1, hold: 'clicks' }
    : { at: kind, call: 1, hold: 'clicks' };
}

/**
 * A moment after which a call of `path` certainly comes: the snapshot is taken once, after Start;
 * an upgrade request follows its node's approval; every other probe also runs in the checks after
 * the last node. The first call of the path from that moment is the one held.
 */
function momentBefore(rng: Rng, shape: RunShape, path: string): Trigger {
  if (path === 'etcd snapshot') return { at: rng.pick(['command', 'start'] as const), call: 1, path };
  if (path === 'upgrade') {
    const kind = rng.pick(['command', 'start', 'approval'] as const);
    return kind === 'approval' ? { at: kind, n: rng.int(1, shape.approvals), call: 1, path } : { at: kind, call: 1, path };
  }
  return { ...anyMoment(rng, shape), call: 1, path };
}

/** Whether the run has reached the trigger's point; read when the run acts, so it is never late. */
function reached(ctx: ChaosContext, trigger: Trigger): boolean {
  const { milestones } = ctx;
  switch (trigger.at) {
    case 'command':
      // People who wait wait for an operation: a Slack fault before the bot took the command would meet none.
      return (trigger.hold === 'clicks' ? milestones.opAt : milestones.commandAt) !== undefined;
    case 'start':
      return milestones.startAt !== undefined;
    case 'approval':
      return milestones.approvalsClicked >= trigger.n;
    case 'upgrade-start':
    case 'node-up': {
      // A replacement's counterpart of an accepted upgrade is its VM being replaced.
      const kinds = trigger.at === 'node-up' ? ['up'] : ['upgrade-start', 'vm-replaced'];
      return ctx.h.sim.events.slice(ctx.eventsFrom).some((e) => e.cluster === CLUSTER && e.node === trigger.node && kinds.includes(e.kind));
    }
  }
}

/** The talosctl command path `command` is, or is under, `path`. */
const underPath = (command: string, path: string): boolean => command === path || command.startsWith(`${path} `);

/**
 * Fires the plan's fault at its trigger: through the simulator's hold of a talosctl call (the call
 * waits until the fault is in force), or, for `hold: 'clicks'`, as soon as the point is reached
 * while the people wait. `fire` starts the fault and resolves when it is in force. Resolves when
 * the fault has fired, or false when the run ended first.
 */
export function watchTrigger(ctx: ChaosContext, trigger: Trigger, fire: () => Promise<void>): Promise<boolean> {
  let firing: Promise<void> | undefined;
  let inForce = false;
  const start = (): Promise<void> => {
    firing ??= fire().finally(() => {
      inForce = true;
    });
    return firing;
  };
  ctx.clicksHeld = () => !inForce && (firing !== undefined || (trigger.hold === 'clicks' && reached(ctx, trigger)));
  if (trigger.hold === 'clicks') {
    return (async () => {
      while (!reached(ctx, trigger)) {
        if (ctx.over.aborted) return false;
        await sleep(5);
      }
      await start();
      return true;
    })();
  }
  let seen = 0;
  return new Promise((resolve) => {
    ctx.over.addEventListener('abort', () => resolve(false), { once: true });
    ctx.h.sim.faults.set(CLUSTER, {
      holdCall: (call, command) => {
        if (firing !== undefined || !reached(ctx, trigger)) return undefined;
        if (trigger.path !== undefined && !underPath(command, trigger.path)) return undefined;
        seen += 1;
        if (seen < trigger.call) return undefined;
        ctx.heldCall = call;
        ctx.note(`talosctl ${command} held`);
        resolve(true);
        return start();
      },
    });
  });
}

/** Talosctl command paths a probe-level fault picks from: every read the upgrade makes. */
const PROBE_COMMANDS = ['version', 'etcd status', 'service etcd', 'health', 'etcd snapshot'] as const;

/** talosctl calls on the production cluster whose command path is `path`. */
function talosctlCalls(calls: readonly CallRecord[], path: string): CallRecord[] {
  const words = path.split(' ');
  return calls.filter((c) => c.bin === 'talosctl' && c.cluster === CLUSTER && words.every((w, i) => c.argv[i] === w));
}

function callsMatching(ctx: ChaosContext, path: string, since: number): CallRecord[] {
  return talosctlCalls(ctx.h.sim.calls.slice(since), path);
}

/** Where the calls a fault answers begin: at the call held for it, else at the next one. */
function firstCallIndex(ctx: ChaosContext): number {
  const held = ctx.heldCall === undefined ? -1 : ctx.h.sim.calls.indexOf(ctx.heldCall);
  return held >= 0 ? held : ctx.h.sim.calls.length;
}

const within = (at: number, span: Span): boolean => span.from <= at && at <= span.to;
const overlap = (a: Span, b: Span): number => Math.min(a.to, b.to) - Math.max(a.from, b.from);
const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;

/** When `at` was, told from the operation's life: "2.1 s into the operation". */
export function moment(at: number, live: Span): string {
  if (at < live.from) return `${seconds(live.from - at)} before the operation existed`;
  if (at > live.to) return `${seconds(at - live.to)} after the operation ended`;
  return `${seconds(at - live.from)} into the operation`;
}

const methodsOf = (answers: readonly { method: string }[]): string => [...new Set(answers.map((a) => a.method))].join(', ');

/** The first upgrade of `node` the simulator accepted while the operation was live, and the node coming back from it. */
function upgradeOf(events: readonly SimEvent[], node: string, live: Span): { start: SimEvent | undefined; up: SimEvent | undefined } {
  const mine = events.filter((ev) => ev.cluster === CLUSTER && ev.node === node);
  const start = mine.find((ev) => ev.kind === 'upgrade-start' && within(ev.at, live));
  const up = start && mine.find((ev) => ev.kind === 'up' && ev.at >= start.at && within(ev.at, live));
  return { start, up };
}

/** Whether the plan's fault struck the run's operation; see {@link FaultPlan.strike}. */
export function judgeStrike(plan: FaultPlan, e: StrikeEvidence): Strike {
  if (e.injection === undefined) return { struck: false, why: `it never took effect (it waited for ${describeTrigger(plan.trigger)})` };
  if (e.live === undefined)
    return { struck: false, why: 'there was no operation to strike (none was created, or its record could not be read)' };
  return plan.strike({ ...e, live: e.live, injection: e.injection });
}

async function until(ctx: ChaosContext, predicate: () => boolean, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!predicate() && !ctx.over.aborted && Date.now() < deadline) await sleep(10);
}

type Draw = (rng: Rng, shape: RunShape, timeouts: ChaosTimeouts) => FaultPlan;

/** The bot's `/readyz` status now; 0 when it does not answer (it is down). */
async function readyzStatus(ctx: ChaosContext): Promise<number> {
  try {
    return (await fetch(`http://127.0.0.1:${ctx.h.bot.httpPort}/readyz`, { signal: AbortSignal.timeout(3000) })).status;
  } catch {
    return 0;
  }
}

/** The old Socket Mode retry budget of the bot (the SDK's 5 s delay, then about 6 s of retries): outages run clearly past it. */
const OLD_SLACK_BUDGET_MS = 11_200;

/** Slack's Socket Mode away for a while: the socket cut, `apps.connections.open` failing until the outage ends. */
const slackUnreachable: Draw = (rng, shape) => {
  const how = rng.pick(['http_503', 'unreachable'] as const);
  const forMs = rng.int(OLD_SLACK_BUDGET_MS + 4000, 45_000);
  let outage: SocketOutage | undefined;
  return {
    fault: 'slack-unreachable',
    // The bot tries to reconnect within seconds: the people wait until it has failed once, so the operation is still live.
    trigger: earlyMoment(rng, shape),
    detail: `for=${forMs}ms how=${how}`,
    transient: true,
    async inject(ctx) {
      outage = ctx.h.slack.socketOutage({ how, forMs });
      ctx.tookEffect();
      ctx.note(`Slack's Socket Mode unreachable for ${seconds(forMs)} (apps.connections.open: ${how})`);
      // Once the bot has tried to reconnect it knows Slack is away: from then on it must say it is not ready.
      while (outage.endedAt === undefined && !ctx.over.aborted) {
        if (outage.failedOpens > 0 && ctx.h.slack.connectionCount() === 0) {
          const status = await readyzStatus(ctx);
          if (outage.endedAt === undefined && status !== 0) ctx.readyWhileSlackAway.push({ at: Date.now(), status });
        }
        await sleep(250);
      }
      outage.end();
      ctx.lifted();
      ctx.note(`Slack's Socket Mode is back after ${outage.failedOpens} failed apps.connections.open`);
    },
    met: () => outage !== undefined && (outage.failedOpens > 0 || outage.endedAt !== undefined),
    async clear() {
      outage?.end();
    },
    strike: ({ live, injection, slackAnswers }) => {
      const failed = slackAnswers.filter(
        (a) => a.method === 'apps.connections.open' && a.status !== 200 && within(a.at, injection) && within(a.at, live),
      );
      if (failed.length === 0)
        return { struck: false, why: 'the bot tried no connection to Slack while the operation was live and Slack was away' };
      return {
        struck: true,
        how: `Slack's Socket Mode was away for ${seconds(injection.to - injection.from)}; ${failed.length} attempt(s) to reconnect failed, the first ${moment(failed[0]!.at, live)}`,
      };
    },
  };
};

/** The bot's `/readyz` body now; empty when it does not answer. */
async function readyzBody(ctx: ChaosContext): Promise<string> {
  try {
    return await (await fetch(`http://127.0.0.1:${ctx.h.bot.httpPort}/readyz`, { signal: AbortSignal.timeout(3000) })).text();
  } catch {
    return '';
  }
}

async function flushAll(url: string): Promise<void> {
  const admin = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    await admin.flushall();
  } finally {
    admin.disconnect();
  }
}

/**
 * Redis loses its data in the middle of an upgrade (FLUSHALL: what a failover to an empty replica or a
 * restart without AOF leaves): the lock, the operation and the queues are gone while a node may be
 * rebooting. The bot must send no further change and say it refuses (`/readyz`: redis-epoch). Not
 * transient: the bot refuses until an operator re-seeds, which the clear does by starting it on an empty Redis.
 */
const redisDataLoss: Draw = (rng, shape) => {
  const at = rng.pick(['upgrade-start', 'node-up'] as const);
  return {
    fault: 'redis-data-loss',
    trigger: { at, node: rng.pick(shape.nodes), call: rng.int(1, 3) },
    detail: 'FLUSHALL',
    transient: false,
    async inject(ctx) {
      await flushAll(ctx.h.redis.url);
      ctx.lockLostAt = Date.now();
      ctx.tookEffect();
      ctx.note('Redis lost its data (FLUSHALL)');
      for (const by = Date.now() + 10_000; Date.now() < by && !ctx.over.aborted; await sleep(200)) {
        const body = await readyzBody(ctx);
        if (body.includes('redis-epoch')) return ctx.note(`/readyz: ${body.trim()}`);
      }
      ctx.note('/readyz never named redis-epoch');
    },
    // The estate back to a first start: the bot stopped, Redis emptied of what it wrote meanwhile, the bot started again.
    async clear(ctx) {
      if (ctx.lockLostAt === undefined) return;
      if (ctx.h.bot.running()) await ctx.h.bot.stop();
      await flushAll(ctx.h.redis.url);
      await ctx.h.bot.start();
    },
    strike: ({ live, injection }) => {
      const when = `Redis lost its data ${moment(injection.from, live)}`;
      return within(injection.from, live) ? { struck: true, how: when } : { struck: false, why: when };
    },
  };
};

const DRAW: Record<FaultName, Draw> = {
  'bot-kill': (rng, shape) => {
    const downMs = rng.int(0, 1500);
    return {
      fault: 'bot-kill',
      trigger: anyMoment(rng, shape),
      detail: `down=${downMs}ms`,
      transient: true,
      async inject(ctx) {
        await ctx.h.bot.kill();
        ctx.tookEffect();
        ctx.note('bot killed (SIGKILL)');
        await sleep(downMs);
        await ctx.h.bot.start();
        ctx.lifted();
        ctx.note('bot restarted');
      },
      async clear(ctx) {
        if (!ctx.h.bot.running()) await ctx.h.bot.start();
      },
      // The kill itself is the fault: it must find an operation that has not ended.
      strike: ({ live, injection }) => {
        const when = `the bot was killed ${moment(injection.from, live)}`;
        return within(injection.from, live) ? { struck: true, how: when } : { struck: false, why: when };
      },
    };
  },
  'redis-restart': (rng, shape) => {
    const downMs = rng.int(0, 1500);
    const hard = rng.chance(0.5);
    return {
      fault: 'redis-restart',
      trigger: anyMoment(rng, shape),
      detail: `down=${downMs}ms ${hard ? 'SIGKILL' : 'SIGTERM'}`,
      transient: true,
      async inject(ctx) {
        await ctx.h.redis.stop({ hard });
        ctx.tookEffect();
        ctx.note('redis-server stopped');
        await sleep(downMs);
        await ctx.h.redis.restart();
        ctx.lifted();
        ctx.note('redis-server restarted from its AOF');
      },
      // The driver makes sure redis-server answers after every run.
      clear: () => Promise.resolve(),
      strike: ({ live, injection }) => {
        const when = `redis-server was down for ${seconds(injection.to - injection.from)} from ${moment(injection.from, live)}`;
        return overlap(injection, live) >= 0 ? { struck: true, how: when } : { struck: false, why: when };
      },
    };
  },
  'slack-429': (rng, shape) => {
    const count = rng.int(1, 5);
    return {
      fault: 'slack-429',
      trigger: anyMoment(rng, shape),
      detail: `count=${count} retryAfter=1s`,
      transient: true,
      async inject(ctx) {
        ctx.h.slack.faults.rateLimit({ count, retryAfterSec: 1 });
        ctx.tookEffect();
        ctx.note(`Slack answers the next ${count} Web API calls with 429`);
      },
      async clear(ctx) {
        ctx.h.slack.faults.clear();
      },
      // Armed is not struck: only a call the bot made and Slack refused counts.
      strike: ({ live, injection, slackAnswers }) => {
        const refused = slackAnswers.filter((a) => a.status === 429 && within(a.at, injection) && a.at >= live.from);
        if (refused.length === 0) return { struck: false, why: 'Slack answered no call of the operation with 429' };
        return {
          struck: true,
          how: `Slack answered ${refused.length} call(s) with 429 (${methodsOf(refused)}), the first ${moment(refused[0]!.at, live)}`,
        };
      },
    };
  },
  'slack-5xx': (rng, shape) => {
    const count = rng.int(1, 8);
    const status = rng.pick([500, 502, 503] as const);
    // Sometimes Slack has already done what it answers 5xx to: a blind retry would post twice.
    const afterWrite = rng.chance(0.5);
    return {
      fault: 'slack-5xx',
      trigger: anyMoment(rng, shape),
      detail: `count=${count} status=${status}${afterWrite ? ' after writing' : ''}`,
      transient: true,
      async inject(ctx) {
        ctx.h.slack.faults.serverError({ count, status, afterWrite });
        ctx.tookEffect();
        ctx.note(`Slack answers the next ${count} Web API calls with ${status}${afterWrite ? ', after doing them' : ''}`);
      },
      async clear(ctx) {
        ctx.h.slack.faults.clear();
      },
      strike: ({ live, injection, slackAnswers }) => {
        const failed = slackAnswers.filter((a) => a.status === status && within(a.at, injection) && a.at >= live.from);
        if (failed.length === 0) return { struck: false, why: `Slack answered no call of the operation with ${status}` };
        return {
          struck: true,
          how: `Slack answered ${failed.length} call(s) with ${status} (${methodsOf(failed)}), the first ${moment(failed[0]!.at, live)}`,
        };
      },
    };
  },
  'talosctl-hang': (rng, shape, timeouts) => {
    // The upgrade call itself stalls inside the node (talosctl's own --timeout ends it); probes hang in the client.
    const path = rng.pick(shape.upgrades ? [...PROBE_COMMANDS, 'upgrade'] : PROBE_COMMANDS);
    const trigger: Trigger = path === 'upgrade' ? { at: 'command', call: 1 } : momentBefore(rng, shape, path);
    const node = rng.pick(shape.nodes);
    let since = 0;
    return {
      fault: 'talosctl-hang',
      trigger,
      detail: path === 'upgrade' ? `upgrade of ${node} stalls` : `path="${path}"`,
      transient: path !== 'upgrade',
      async inject(ctx) {
        if (path === 'upgrade') {
          ctx.h.sim.faults.set(CLUSTER, { upgradeHang: [node] });
          ctx.tookEffect();
          ctx.note(`the upgrade sequence of ${node} will stall`);
          return;
        }
        since = firstCallIndex(ctx);
        ctx.h.sim.faults.set(CLUSTER, { hang: [path] });
        ctx.tookEffect(ctx.heldCall?.startedAt);
        ctx.note(`talosctl ${path} hangs`);
        // One call hangs past its timeout (the bot kills it), then the fault lifts.
        await until(
          ctx,
          () => callsMatching(ctx, path, since).some((c) => c.hung !== undefined && c.endedAt !== undefined),
          timeouts.probeMs * 4,
        );
        ctx.h.sim.faults.clear(CLUSTER, 'hang');
        ctx.lifted();
        ctx.note(`talosctl ${path} answers again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'hang', 'upgradeHang');
      },
      strike: ({ live, injection, calls, events }) => {
        if (path === 'upgrade') {
          const { start } = upgradeOf(events, node, live);
          if (start === undefined || !within(start.at, injection))
            return { struck: false, why: `${node} was not upgraded while its upgrade would stall` };
          const rebooted = events.some((ev) => ev.cluster === CLUSTER && ev.node === node && ev.kind === 'reboot' && ev.at >= start.at);
          if (rebooted) return { struck: false, why: `the upgrade of ${node} went through` };
          return { struck: true, how: `the upgrade of ${node} stalled, accepted ${moment(start.at, live)}` };
        }
        const hung = talosctlCalls(calls, path).filter(
          (c) => c.hung !== undefined && within(c.startedAt, injection) && within(c.startedAt, live),
        );
        if (hung.length === 0) return { struck: false, why: `no talosctl ${path} of the operation ran while it would hang` };
        return { struck: true, how: `talosctl ${path} hung ${hung.length} time(s), the first ${moment(hung[0]!.startedAt, live)}` };
      },
    };
  },
  'talosctl-fail': (rng, shape) => {
    const path = rng.pick(shape.upgrades ? [...PROBE_COMMANDS, 'upgrade'] : PROBE_COMMANDS);
    const stderr = rng.pick([
      'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.30.11:50000: connect: connection refused"',
      'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      'rpc error: code = Internal desc = stream terminated by RST_STREAM with error code: INTERNAL_ERROR',
    ]);
    const calls = rng.int(1, 2);
    let since = 0;
    return {
      fault: 'talosctl-fail',
      trigger: momentBefore(rng, shape, path),
      detail: `path="${path}" calls=${calls}`,
      transient: true,
      async inject(ctx) {
        since = firstCallIndex(ctx);
        ctx.h.sim.faults.set(CLUSTER, { fail: { [path]: stderr } });
        ctx.tookEffect(ctx.heldCall?.startedAt);
        ctx.note(`talosctl ${path} exits 1`);
        await until(ctx, () => callsMatching(ctx, path, since).filter((c) => c.exitCode === 1).length >= calls, 20_000);
        ctx.h.sim.faults.clear(CLUSTER, 'fail');
        ctx.lifted();
        ctx.note(`talosctl ${path} works again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'fail');
      },
      strike: ({ live, injection, calls: recorded }) => {
        const failed = talosctlCalls(recorded, path).filter(
          (c) => c.exitCode === 1 && within(c.startedAt, injection) && within(c.startedAt, live),
        );
        if (failed.length === 0) return { struck: false, why: `no talosctl ${path} of the operation ran while it would fail` };
        return { struck: true, how: `talosctl ${path} failed ${failed.length} time(s), the first ${moment(failed[0]!.startedAt, live)}` };
      },
    };
  },
  'node-not-ready': (rng, shape, timeouts) => {
    const node = rng.pick(shape.nodes);
    // NotReady from the upgrade's reboot on for good, or for a while once the node is back: shorter or longer than the bot
    // waits, never shorter than a few of its polls (a blip it cannot see proves nothing).
    const recoverMs = rng.chance(0.4) ? undefined : rng.int(timeouts.pollMs * 4, Math.round(timeouts.nodeReadyMs * 1.5));
    return {
      fault: 'node-not-ready',
      // The first call once the node is back is the bot watching it: NotReady from there, before the bot has seen it Ready.
      trigger: { at: 'node-up', node, call: 1 },
      detail: recoverMs === undefined ? `${node} stays NotReady after its reboot` : `${node} NotReady for ${recoverMs}ms once back`,
      transient: recoverMs !== undefined,
      arm(ctx) {
        if (recoverMs !== undefined) return;
        ctx.h.sim.faults.set(CLUSTER, { upgradeStaysNotReady: [node] });
        ctx.tookEffect();
      },
      async inject(ctx) {
        if (recoverMs === undefined) return;
        ctx.h.sim.faults.set(CLUSTER, { nodeNotReady: [node] });
        ctx.tookEffect();
        ctx.note(`${node} NotReady`);
        await sleep(recoverMs, undefined, { signal: ctx.over }).catch(() => undefined);
        ctx.h.sim.faults.clear(CLUSTER, 'nodeNotReady');
        ctx.lifted();
        ctx.note(`${node} Ready again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'nodeNotReady', 'upgradeStaysNotReady');
      },
      strike: ({ live, injection, events }) => {
        if (recoverMs === undefined) {
          const { up } = upgradeOf(events, node, live);
          if (up === undefined) return { struck: false, why: `${node} did not come back from an upgrade while the operation was live` };
          return { struck: true, how: `${node} came back from its upgrade NotReady, ${moment(up.at, live)}` };
        }
        // Shorter than one poll of the bot, NotReady may never be seen.
        const seen = overlap(injection, live);
        if (seen < timeouts.pollMs)
          return { struck: false, why: `${node} was NotReady for ${seconds(Math.max(0, seen))} of the operation, less than one poll` };
        return { struck: true, how: `${node} was NotReady for ${seconds(seen)} from ${moment(injection.from, live)}` };
      },
    };
  },
  'silent-revert': (rng, shape) => {
    const node = rng.pick(shape.nodes);
    return {
      fault: 'silent-revert',
      trigger: { at: 'command', call: 1 },
      detail: `${node} boots the old image`,
      transient: false,
      arm(ctx) {
        ctx.h.sim.faults.set(CLUSTER, { upgradeSilentRevert: [node] });
        ctx.tookEffect();
      },
      inject: () => Promise.resolve(),
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'upgradeSilentRevert');
      },
      strike: ({ live, events }) => {
        const { start, up } = upgradeOf(events, node, live);
        if (start === undefined) return { struck: false, why: `${node} was not upgraded while the operation was live` };
        if (up === undefined) return { struck: false, why: `${node} did not come back from its upgrade while the operation was live` };
        if (up.toVersion !== start.fromVersion)
          return {
            struck: false,
            why: `${node} came back on ${up.toVersion ?? 'an unknown version'}, not on its old ${start.fromVersion ?? 'version'}`,
          };
        return {
          struck: true,
          how: `${node} came back on ${up.toVersion} instead of ${start.toVersion ?? 'the target'}, ${moment(up.at, live)}`,
        };
      },
    };
  },
  'second-bot': (rng, shape) => {
    // A bot takes seconds to start, longer than a simulated upgrade runs: started late it finds the upgrade over.
    // So the second bot is either up before the command, or started at an early moment.
    const ahead = rng.chance(0.5);
    const start = async (ctx: ChaosContext): Promise<void> => {
      const other = await ctx.h.secondBot();
      ctx.extraBots.push(other);
      await other.start();
      ctx.tookEffect();
      ctx.note('a second bot process is running');
    };
    return {
      fault: 'second-bot',
      trigger: ahead ? { at: 'command', call: 1 } : earlyMoment(rng, shape),
      detail: ahead ? 'started before the command, until the end of the run' : 'until the end of the run',
      transient: false,
      arm: ahead ? start : undefined,
      inject: ahead ? () => Promise.resolve() : start,
      // The driver stops the extra bots after collecting their logs.
      clear: () => Promise.resolve(),
      strike: ({ live, injection }) => {
        const when =
          injection.from < live.from
            ? 'a second bot was running before the operation existed'
            : `a second bot was running from ${moment(injection.from, live)}`;
        return injection.from <= live.to ? { struck: true, how: when } : { struck: false, why: when };
      },
    };
  },
  'slack-unreachable': slackUnreachable,
  'redis-data-loss': redisDataLoss,
};

/** The fault of a run: `fault` when given, else drawn from the seed. The draw order is fixed, so a seed always means the same plan. */
export function drawFault(rng: Rng, shape: RunShape, timeouts: ChaosTimeouts, fault?: FaultName): FaultPlan {
  const applies = faultsFor(shape);
  const name = rng.pick(applies);
  if (fault !== undefined && !applies.includes(fault))
    throw new Error(`${fault} acts on a node's upgrade; a run that upgrades no node can never meet it (choose an upgrade run)`);
  return DRAW[fault ?? name](rng, shape, timeouts);
}
