/**
 * One chaos run of the etcd restore rehearsal on a three-control-plane staging: the rehearsal driven
 * as an operator and two approvers would, with one seeded fault (the bot killed and started again, a
 * talosctl call failing, Slack answering 5xx, after doing the write or not) at a random point (the
 * first talosctl call after a click or an event of the cluster, held by the simulator until the
 * fault is in force, so the rehearsal is live when it strikes), then
 * the rehearsal's invariants checked: never a second `bootstrap --recover-from`, never a reset
 * without two distinct approvers. Each run has a fresh harness: a stopped rehearsal leaves staging
 * without etcd, which is no estate to start the next run from.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { OperationFields } from '../../src/ops/operation.ts';
import { productionShape, stagingThreeShape } from '../sim/shapes.ts';
import { CHANNELS, commandReply, startHarness, USERS, type Harness } from '../support/harness.ts';
import { opIdOf, originalButtonValue, tickAll } from '../support/upgrade-flow.ts';
import type { RunReport } from './chaos-run.ts';
import { CHAOS_ENV } from './chaos-run.ts';
import type { FaultName } from './faults.ts';
import { mulberry32, type Rng } from './prng.ts';
import { checkRestoreInvariants, recoverBootstraps } from './restore-invariants.ts';

const CLUSTER = 'staging';
const CHANNEL = CHANNELS.staging;
const APPROVERS = [USERS.carol, USERS.dave];
const RUN_DEADLINE_MS = 180_000;
const MAX_RETRIES = 2;

const STAGING = stagingThreeShape();

/** The faults of a rehearsal run, each transient: a stop it causes may be retried, where the rehearsal offers a Retry. */
export const RESTORE_FAULTS = ['bot-kill', 'talosctl-fail', 'slack-5xx'] as const satisfies readonly FaultName[];
type RestoreFault = (typeof RESTORE_FAULTS)[number];

/** Where a fault strikes: a click of the people, or an event of the simulated cluster (its first of the run). */
const MOMENTS = ['start', 'approval', 'snapshot', 'reset', 'etcd-bootstrap', 'etcd-restored', 'up'] as const;
export type Moment = (typeof MOMENTS)[number];

/** The talosctl commands a failure may hit: the one held at the moment fails, whichever of these it is. */
const TALOSCTL_PATHS = ['etcd snapshot', 'service etcd', 'reset', 'bootstrap', 'etcd status', 'etcd members'] as const;

interface Plan {
  fault: RestoreFault;
  moment: Moment;
  detail: string;
  /** Only calls of these commands are held for the fault; any talosctl call when undefined. */
  commands?: readonly string[];
  /** Starts the fault while the held call (its command path, its index in the simulator's calls) waits; resolves once the fault is in force. */
  inject(h: Harness, held: { command: string; index: number }, note: (text: string) => void): Promise<{ done: Promise<void> }>;
}

function drawPlan(rng: Rng, only?: FaultName, at?: Moment): Plan {
  const fault =
    only !== undefined && (RESTORE_FAULTS as readonly string[]).includes(only) ? (only as RestoreFault) : rng.pick(RESTORE_FAULTS);
  const drawn = rng.pick(MOMENTS);
  const moment = at ?? drawn;
  if (fault === 'bot-kill') {
    const downMs = rng.int(0, 1500);
    return {
      fault,
      moment,
      detail: `down=${downMs}ms`,
      async inject(h, _held, note) {
        await h.bot.kill();
        note('bot killed (SIGKILL)');
        const done = (async () => {
          await sleep(downMs);
          await h.bot.start();
          note('bot restarted');
        })();
        return { done };
      },
    };
  }
  if (fault === 'talosctl-fail') {
    return {
      fault,
      moment,
      detail: 'the held call fails',
      commands: TALOSCTL_PATHS,
      inject(h, { command: held, index: since }, note) {
        h.sim.faults.set(CLUSTER, {
          fail: { [held]: 'rpc error: code = Unavailable desc = connection error: desc = "transport: connection refused"' },
        });
        note(`talosctl ${held} exits 1`);
        const words = held.split(' ');
        const failed = () =>
          h.sim.calls.slice(since).some((c) => c.bin === 'talosctl' && c.exitCode === 1 && words.every((w, i) => c.argv[i] === w));
        const done = (async () => {
          for (const by = Date.now() + 15_000; !failed() && Date.now() < by;) await sleep(20);
          h.sim.faults.clear(CLUSTER, 'fail');
          note(`talosctl ${held} works again`);
        })();
        return Promise.resolve({ done });
      },
    };
  }
  const count = rng.int(1, 6);
  const afterWrite = rng.chance(0.5);
  return {
    fault,
    moment,
    detail: `count=${count}${afterWrite ? ' after writing' : ''}`,
    inject(h, _held, note) {
      h.slack.faults.serverError({ count, status: 503, afterWrite });
      note(`Slack answers the next ${count} Web API calls with 503${afterWrite ? ', after doing them' : ''}`);
      return Promise.resolve({ done: Promise.resolve() });
    },
  };
}

const hasButton = (blocks: unknown, actionId: string): boolean => JSON.stringify(blocks ?? []).includes(`"action_id":"${actionId}"`);

async function readOperation(url: string, opId: string) {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const raw = await client.get(`talos:op:${opId}`);
    return raw === null ? undefined : OperationFields.parse(JSON.parse(raw));
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** One seeded rehearsal with one fault, judged by the rehearsal's invariants. */
export async function runRestoreChaos(options: { seed: number; fault?: FaultName; moment?: Moment }): Promise<RunReport> {
  const started = Date.now();
  const rng = mulberry32(options.seed);
  const plan = drawPlan(rng, options.fault, options.moment);
  const trace: string[] = [];
  const note = (text: string): void => {
    trace.push(`${Date.now() - started}ms ${text}`);
  };
  const h = await startHarness({
    clusters: [STAGING, productionShape()],
    // The rehearsal's resets, restore and rejoins run on real etcd processes (test/sim/reference/real-etcd.md).
    etcd: 'real',
    timing: { rebootMs: 3000 },
    env: { ...CHAOS_ENV, NODE_READY_TIMEOUT_SECONDS: '40', STEP_TIMEOUT_SECONDS: '10' },
    inventory: { approvers: { staging: APPROVERS, production: APPROVERS } },
  });
  const milestones: { startAt?: number; approvalAt?: number } = {};
  let injectedAt: number | undefined;
  let injectionDone = false;
  const over = new AbortController();
  const reached = (): boolean => {
    if (plan.moment === 'start') return milestones.startAt !== undefined;
    if (plan.moment === 'approval') return milestones.approvalAt !== undefined;
    return h.sim.events.some((e) => e.cluster === CLUSTER && e.kind === plan.moment);
  };
  // The first talosctl call on staging from the moment on waits, held by the simulator, until the fault is in force.
  let done: Promise<void> | undefined;
  const injection = new Promise<void>((resolve) => {
    over.signal.addEventListener('abort', () => resolve(), { once: true });
    h.sim.faults.set(CLUSTER, {
      holdCall: async (call, command) => {
        if (injectedAt !== undefined || !reached()) return;
        if (plan.commands !== undefined && !plan.commands.some((p) => command === p || command.startsWith(`${p} `))) return;
        injectedAt = call.startedAt;
        note(`fault ${plan.fault} fires at ${plan.moment}, talosctl ${command} held`);
        try {
          ({ done } = await plan.inject(h, { command, index: h.sim.calls.indexOf(call) }, note));
        } catch (error) {
          note(`the fault could not be injected: ${(error as Error).message}`);
        }
        resolve();
      },
    });
  })
    .then(() => done)
    .catch((error: unknown) => note(`the fault could not be injected: ${(error as Error).message}`))
    .finally(() => {
      injectionDone = true;
    });

  let opId: string | undefined;
  let ended = false;
  let retries = 0;
  let op: Awaited<ReturnType<typeof readOperation>>;
  try {
    const deadline = Date.now() + RUN_DEADLINE_MS;
    while (opId === undefined && Date.now() < deadline) {
      const result = await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNEL, text: 'rehearse etcd-restore' });
      const text = result.timedOut ? '' : await commandReply(h.slack, result, { timeoutMs: 15_000 }).catch(() => '');
      if (/\bop-[a-z0-9]+\b/.test(text)) opId = opIdOf(text);
      else await sleep(1000);
    }
    if (opId === undefined) throw new Error('the command was never taken');
    note(`operation ${opId}`);
    const clicked = new Map<string, number>();
    const recently = (key: string, ms: number): boolean => Date.now() - (clicked.get(key) ?? 0) < ms;
    let turn = 0;
    while (Date.now() < deadline) {
      op = await readOperation(h.redis.url, opId);
      if (op && ['completed', 'failed', 'refused', 'cancelled'].includes(op.state)) {
        const offered = op.state === 'failed' && op.retry?.state === 'offered';
        if (!offered || retries >= MAX_RETRIES) {
          // A stop while the fault may still be in force: let it lift before judging whether a Retry is offered.
          if (injectionDone || injectedAt === undefined) {
            ended = true;
            break;
          }
        } else if (injectionDone && h.bot.running() && op.rootTs && !recently(`retry-${op.retry!.nonce}`, 4000)) {
          const message = [h.slack.message(CHANNEL, op.rootTs), ...h.slack.thread(CHANNEL, op.rootTs)].find(
            (m) => m !== undefined && hasButton(m.blocks, 'talos-op-retry') && JSON.stringify(m.blocks).includes(op!.retry!.nonce),
          );
          if (message) {
            if (!clicked.has(`retry-${op.retry!.nonce}`)) retries += 1;
            clicked.set(`retry-${op.retry!.nonce}`, Date.now());
            note(`Retry clicked on ${op.retry!.step} (${op.reason ?? ''})`);
            await h.slack.clickButton({ user: USERS.carol, channel: CHANNEL, messageTs: message.ts, actionId: 'talos-op-retry' });
          }
        }
      }
      const rootTs = op?.rootTs ?? h.slack.channelMessages(CHANNEL).find((m) => m.text.includes(opId!))?.ts;
      const root = rootTs === undefined ? undefined : h.slack.message(CHANNEL, rootTs);
      if (root && rootTs) {
        if (hasButton(root.blocks, 'talos-op-start') && !recently('start', 3000)) {
          clicked.set('start', Date.now());
          milestones.startAt ??= Date.now();
          await h.slack.clickButton({ user: USERS.alice, channel: CHANNEL, messageTs: rootTs, actionId: 'talos-op-start' });
        }
        for (const reply of h.slack.thread(CHANNEL, rootTs)) {
          if (!hasButton(reply.blocks, 'talos-step-approve') || recently(reply.ts, 1500)) continue;
          clicked.set(reply.ts, Date.now());
          milestones.approvalAt ??= Date.now();
          // The two approvers take turns: a click the bot already counted is refused and changes nothing.
          const user = APPROVERS[turn++ % APPROVERS.length]!;
          await h.slack.clickButton({
            user,
            channel: CHANNEL,
            messageTs: reply.ts,
            actionId: 'talos-step-approve',
            value: originalButtonValue(h, CHANNEL, reply.ts, 'talos-step-approve'),
            ticks: tickAll(h, CHANNEL, reply.ts),
          });
        }
      }
      await sleep(100);
    }
  } catch (error) {
    note(`the driver gave up: ${(error as Error).message}`);
  } finally {
    over.abort();
  }
  await injection;
  if (!h.bot.running()) await h.bot.start().catch(() => undefined);
  op = opId ? await readOperation(h.redis.url, opId) : undefined;
  const events = [...h.sim.events];
  note(`run over: ${op?.state ?? 'no operation'}; ${recoverBootstraps(events, CLUSTER).length} bootstrap --recover-from`);
  const violations = checkRestoreInvariants({ cluster: CLUSTER, events, op, ended });
  await h.stop().catch(() => undefined);
  const live = op ? { from: Date.parse(op.createdAt), to: op.endedAt ? Date.parse(op.endedAt) : Date.now() } : undefined;
  const struck = injectedAt !== undefined && live !== undefined && injectedAt >= live.from && injectedAt <= live.to;
  return {
    seed: options.seed,
    fault: plan.fault,
    plan: `etcd-restore ${plan.moment}, next talosctl call held, ${plan.detail}`,
    strike: struck
      ? { struck: true, how: `the fault fired ${((injectedAt! - live!.from) / 1000).toFixed(1)} s into the rehearsal` }
      : { struck: false, why: injectedAt === undefined ? `its moment (${plan.moment}) never came` : 'the rehearsal was not live' },
    opId,
    outcome: op?.state === 'completed' ? 'completed' : ended ? 'stopped' : 'unfinished',
    reason: op?.reason,
    violations,
    durationMs: Date.now() - started,
    trace,
    resetProblem: undefined,
    transient: true,
    retries,
    noRetryOffered: op !== undefined && op.state !== 'completed' && op.retry?.state !== 'offered',
  };
}
