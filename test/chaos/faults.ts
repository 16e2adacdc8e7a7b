/**
 * The fault catalogue of the chaos suite. Each fault draws its parameters and the moment it
 * strikes from the run's seeded PRNG, injects itself when that moment comes, and is cleared
 * when the run ends (or earlier, when the fault is "for a while").
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BotProcess } from '../support/bot-process.ts';
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
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export const CLUSTER = 'production';

/**
 * When a fault strikes, counted from a point of the run:
 * - `command`: the `/talos upgrade` command was sent (preflight and plan);
 * - `start`: Start was clicked (snapshot, first approval request);
 * - `approval`: the driver clicked the `n`th approval (1-based), so that node's upgrade is starting;
 * - `upgrade-start`: the simulator accepted the upgrade of `node` (it is draining or rebooting);
 * - `node-up`: `node` is back after its reboot (the bot is checking quorum, health and Longhorn).
 */
export type Trigger =
  | { at: 'command' | 'start'; delayMs: number }
  | { at: 'approval'; n: number; delayMs: number }
  | { at: 'upgrade-start' | 'node-up'; node: string; delayMs: number };

/** What the driver tells the faults about the run, and what faults leave for the report. */
export interface ChaosContext {
  h: Harness;
  /** Sim events before this index belong to earlier runs. */
  eventsFrom: number;
  /** Sim calls before this index belong to earlier runs. */
  callsFrom: number;
  /** Set by the driver as the operator acts. */
  milestones: { commandAt?: number; startAt?: number; approvalsClicked: number };
  /** Bot processes a fault started besides `h.bot`; the driver stops them after the run. */
  extraBots: BotProcess[];
  /** Aborted when the run is over: a trigger that has not fired gives up. */
  over: AbortSignal;
  /** A line for the run's trace. */
  note(text: string): void;
}

export interface FaultPlan {
  fault: FaultName;
  trigger: Trigger;
  /** The drawn parameters, for the log line. */
  detail: string;
  /** Set-up before the run begins (a node fault the simulator applies at that node's reboot). */
  arm?(ctx: ChaosContext): void;
  /** Called once the trigger fires. Resolves when the fault has done its work (a restart finished). */
  inject(ctx: ChaosContext): Promise<void>;
  /** Removes whatever is left of the fault; safe to call more than once. */
  clear(ctx: ChaosContext): Promise<void>;
}

export interface ChaosTimeouts {
  /** `PROBE_TIMEOUT_SECONDS` of the bot, in ms: how long a hung probe lives. */
  probeMs: number;
  /** `NODE_READY_TIMEOUT_SECONDS` of the bot, in ms. */
  nodeReadyMs: number;
}

export function describeTrigger(trigger: Trigger): string {
  const where = trigger.at === 'approval' ? `approval#${trigger.n}` : trigger.at === 'upgrade-start' || trigger.at === 'node-up' ? `${trigger.at}(${trigger.node})` : trigger.at;
  return `${where}+${trigger.delayMs}ms`;
}

/** A random moment anywhere in the run. */
function anyMoment(rng: Rng, nodes: readonly string[]): Trigger {
  const kind = rng.pick(['command', 'start', 'approval', 'upgrade-start', 'node-up'] as const);
  switch (kind) {
    case 'command':
      return { at: kind, delayMs: rng.int(0, 1500) };
    case 'start':
      return { at: kind, delayMs: rng.int(0, 1500) };
    case 'approval':
      return { at: kind, n: rng.int(1, nodes.length), delayMs: rng.int(0, 1200) };
    default:
      return { at: kind, node: rng.pick(nodes), delayMs: rng.int(0, 400) };
  }
}

/** Polls until the trigger fires; false when the run ended first. */
export async function waitForTrigger(ctx: ChaosContext, trigger: Trigger): Promise<boolean> {
  const fired = (): number | undefined => {
    const { milestones } = ctx;
    switch (trigger.at) {
      case 'command':
        return milestones.commandAt;
      case 'start':
        return milestones.startAt;
      case 'approval':
        return milestones.approvalsClicked >= trigger.n ? Date.now() : undefined;
      case 'upgrade-start':
      case 'node-up': {
        const kind = trigger.at === 'node-up' ? 'up' : 'upgrade-start';
        return ctx.h.sim.events.slice(ctx.eventsFrom).find((e) => e.cluster === CLUSTER && e.node === trigger.node && e.kind === kind)?.at;
      }
    }
  };
  let at: number | undefined;
  while ((at = fired()) === undefined) {
    if (ctx.over.aborted) return false;
    await sleep(5);
  }
  const wait = at + trigger.delayMs - Date.now();
  if (wait > 0) await sleep(wait);
  return !ctx.over.aborted;
}

/** Talosctl command paths a probe-level fault picks from: every read the upgrade makes. */
const PROBE_COMMANDS = ['version', 'etcd status', 'service etcd', 'health', 'etcd snapshot'] as const;

function callsMatching(ctx: ChaosContext, path: string, since: number) {
  const words = path.split(' ');
  return ctx.h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl' && words.every((w, i) => c.argv[i] === w));
}

async function until(ctx: ChaosContext, predicate: () => boolean, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!predicate() && !ctx.over.aborted && Date.now() < deadline) await sleep(10);
}

type Draw = (rng: Rng, nodes: readonly string[], timeouts: ChaosTimeouts) => FaultPlan;

const DRAW: Record<FaultName, Draw> = {
  'bot-kill': (rng, nodes) => {
    const downMs = rng.int(0, 1500);
    return {
      fault: 'bot-kill',
      trigger: anyMoment(rng, nodes),
      detail: `down=${downMs}ms`,
      async inject(ctx) {
        await ctx.h.bot.kill();
        ctx.note('bot killed (SIGKILL)');
        await sleep(downMs);
        await ctx.h.bot.start();
        ctx.note('bot restarted');
      },
      async clear(ctx) {
        if (!ctx.h.bot.running()) await ctx.h.bot.start();
      },
    };
  },
  'redis-restart': (rng, nodes) => {
    const downMs = rng.int(0, 1500);
    const hard = rng.chance(0.5);
    return {
      fault: 'redis-restart',
      trigger: anyMoment(rng, nodes),
      detail: `down=${downMs}ms ${hard ? 'SIGKILL' : 'SIGTERM'}`,
      async inject(ctx) {
        await ctx.h.redis.stop({ hard });
        ctx.note('redis-server stopped');
        await sleep(downMs);
        await ctx.h.redis.restart();
        ctx.note('redis-server restarted from its AOF');
      },
      // The driver makes sure redis-server answers after every run.
      clear: () => Promise.resolve(),
    };
  },
  'slack-429': (rng, nodes) => {
    const count = rng.int(1, 5);
    return {
      fault: 'slack-429',
      trigger: anyMoment(rng, nodes),
      detail: `count=${count} retryAfter=1s`,
      async inject(ctx) {
        ctx.h.slack.faults.rateLimit({ count, retryAfterSec: 1 });
        ctx.note(`Slack answers the next ${count} Web API calls with 429`);
      },
      async clear(ctx) {
        ctx.h.slack.faults.clear();
      },
    };
  },
  'slack-5xx': (rng, nodes) => {
    const count = rng.int(1, 8);
    const status = rng.pick([500, 502, 503] as const);
    // Sometimes Slack has already done what it answers 5xx to: a blind retry would post twice.
    const afterWrite = rng.chance(0.5);
    return {
      fault: 'slack-5xx',
      trigger: anyMoment(rng, nodes),
      detail: `count=${count} status=${status}${afterWrite ? ' after writing' : ''}`,
      async inject(ctx) {
        ctx.h.slack.faults.serverError({ count, status, afterWrite });
        ctx.note(`Slack answers the next ${count} Web API calls with ${status}${afterWrite ? ', after doing them' : ''}`);
      },
      async clear(ctx) {
        ctx.h.slack.faults.clear();
      },
    };
  },
  'talosctl-hang': (rng, nodes, timeouts) => {
    // The upgrade call itself stalls inside the node (talosctl's own --timeout ends it); probes hang in the client.
    const path = rng.pick([...PROBE_COMMANDS, 'upgrade']);
    const trigger = path === 'upgrade' ? ({ at: 'command', delayMs: 0 } as const) : anyMoment(rng, nodes);
    const node = rng.pick(nodes);
    let since = 0;
    return {
      fault: 'talosctl-hang',
      trigger,
      detail: path === 'upgrade' ? `upgrade of ${node} stalls` : `path="${path}"`,
      async inject(ctx) {
        if (path === 'upgrade') {
          ctx.h.sim.faults.set(CLUSTER, { upgradeHang: [node] });
          ctx.note(`the upgrade sequence of ${node} will stall`);
          return;
        }
        since = ctx.h.sim.calls.length;
        ctx.h.sim.faults.set(CLUSTER, { hang: [path] });
        ctx.note(`talosctl ${path} hangs`);
        // One call hangs past its timeout (the bot kills it), then the fault lifts.
        await until(ctx, () => callsMatching(ctx, path, since).some((c) => c.hung !== undefined && c.endedAt !== undefined), timeouts.probeMs * 4);
        ctx.h.sim.faults.clear(CLUSTER, 'hang');
        ctx.note(`talosctl ${path} answers again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'hang', 'upgradeHang');
      },
    };
  },
  'talosctl-fail': (rng, nodes) => {
    const path = rng.pick([...PROBE_COMMANDS, 'upgrade']);
    const stderr = rng.pick([
      'rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.30.11:50000: connect: connection refused"',
      'rpc error: code = DeadlineExceeded desc = context deadline exceeded',
      'rpc error: code = Internal desc = stream terminated by RST_STREAM with error code: INTERNAL_ERROR',
    ]);
    const calls = rng.int(1, 2);
    let since = 0;
    return {
      fault: 'talosctl-fail',
      trigger: anyMoment(rng, nodes),
      detail: `path="${path}" calls=${calls}`,
      async inject(ctx) {
        since = ctx.h.sim.calls.length;
        ctx.h.sim.faults.set(CLUSTER, { fail: { [path]: stderr } });
        ctx.note(`talosctl ${path} exits 1`);
        await until(ctx, () => callsMatching(ctx, path, since).filter((c) => c.exitCode === 1).length >= calls, 20_000);
        ctx.h.sim.faults.clear(CLUSTER, 'fail');
        ctx.note(`talosctl ${path} works again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'fail');
      },
    };
  },
  'node-not-ready': (rng, nodes, timeouts) => {
    const node = rng.pick(nodes);
    // NotReady from the upgrade's reboot on for good, or for a while once the node is back: shorter or longer than the bot waits.
    const recoverMs = rng.chance(0.4) ? undefined : rng.int(0, Math.round(timeouts.nodeReadyMs * 1.5));
    return {
      fault: 'node-not-ready',
      trigger: { at: 'node-up', node, delayMs: 0 },
      detail: recoverMs === undefined ? `${node} stays NotReady after its reboot` : `${node} NotReady for ${recoverMs}ms once back`,
      arm(ctx) {
        if (recoverMs === undefined) ctx.h.sim.faults.set(CLUSTER, { upgradeStaysNotReady: [node] });
      },
      async inject(ctx) {
        if (recoverMs === undefined) return;
        ctx.h.sim.faults.set(CLUSTER, { nodeNotReady: [node] });
        ctx.note(`${node} NotReady`);
        await sleep(recoverMs, undefined, { signal: ctx.over }).catch(() => undefined);
        ctx.h.sim.faults.clear(CLUSTER, 'nodeNotReady');
        ctx.note(`${node} Ready again`);
      },
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'nodeNotReady', 'upgradeStaysNotReady');
      },
    };
  },
  'silent-revert': (rng, nodes) => {
    const node = rng.pick(nodes);
    return {
      fault: 'silent-revert',
      trigger: { at: 'command', delayMs: 0 },
      detail: `${node} boots the old image`,
      arm(ctx) {
        ctx.h.sim.faults.set(CLUSTER, { upgradeSilentRevert: [node] });
      },
      inject: () => Promise.resolve(),
      async clear(ctx) {
        ctx.h.sim.faults.clear(CLUSTER, 'upgradeSilentRevert');
      },
    };
  },
  'second-bot': (rng, nodes) => ({
    fault: 'second-bot',
    trigger: anyMoment(rng, nodes),
    detail: 'until the end of the run',
    async inject(ctx) {
      const other = await ctx.h.secondBot();
      ctx.extraBots.push(other);
      await other.start();
      ctx.note('a second bot process is running');
    },
    // The driver stops the extra bots after collecting their logs.
    clear: () => Promise.resolve(),
  }),
};

/** The fault of a run: `fault` when given, else drawn from the seed. The draw order is fixed, so a seed always means the same plan. */
export function drawFault(rng: Rng, nodes: readonly string[], timeouts: ChaosTimeouts, fault?: FaultName): FaultPlan {
  const name = rng.pick(FAULT_NAMES);
  return DRAW[fault ?? name](rng, nodes, timeouts);
}
