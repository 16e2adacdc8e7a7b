/**
 * One chaos run of the etcd restore rehearsal on a three-control-plane staging: the rehearsal driven
 * as an operator and two approvers would, with one seeded fault (the bot killed and started again, a
 * talosctl call failing, Slack answering 5xx, after doing the write or not) at a random point, then
 * the rehearsal's invariants checked: never a second `bootstrap --recover-from`, never a reset
 * without two distinct approvers. Each run has a fresh harness: a stopped rehearsal leaves staging
 * without etcd, which is no estate to start the next run from.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { OperationFields } from '../../src/ops/operation.ts';
import { productionShape, stagingThreeShape } from '../sim/shapes.ts';
import { CHANNELS, commandReply, startHarness, USERS, type Harness } from '../support/harness.ts';
import { opIdOf, originalButtonValue } from '../support/upgrade-flow.ts';
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

const TALOSCTL_PATHS = ['etcd snapshot', 'service etcd', 'reset', 'bootstrap', 'etcd status', 'etcd members'] as const;

interface Plan {
  fault: RestoreFault;
  moment: Moment;
  delayMs: number;
  detail: string;
  inject(h: Harness, note: (text: string) => void): Promise<void>;
}

function drawPlan(rng: Rng, only?: FaultName, at?: Moment): Plan {
  const fault =
    only !== undefined && (RESTORE_FAULTS as readonly string[]).includes(only) ? (only as RestoreFault) : rng.pick(RESTORE_FAULTS);
  const drawn = rng.pick(MOMENTS);
  const moment = at ?? drawn;
  const delayMs = rng.int(0, 600);
  if (fault === 'bot-kill') {
    const downMs = rng.int(0, 1500);
    return {
      fault,
      moment,
      delayMs,
      detail: `down=${downMs}ms`,
      async inject(h, note) {
        await h.bot.kill();
        note('bot killed (SIGKILL)');
        await sleep(downMs);
        await h.bot.start();
        note('bot restarted');
      },
    };
  }
  if (fault === 'talosctl-fail') {
    const path = rng.pick(TALOSCTL_PATHS);
    return {
      fault,
      moment,
      delayMs,
      detail: `path="${path}"`,
      async inject(h, note) {
        const since = h.sim.calls.length;
        h.sim.faults.set(CLUSTER, {
          fail: { [path]: 'rpc error: code = Unavailable desc = connection error: desc = "transport: connection refused"' },
        });
        note(`talosctl ${path} exits 1`);
        const words = path.split(' ');
        const failed = () =>
          h.sim.calls.slice(since).some((c) => c.bin === 'talosctl' && c.exitCode === 1 && words.every((w, i) => c.argv[i] === w));
        for (const by = Date.now() + 15_000; !failed() && Date.now() < by;) await sleep(20);
        h.sim.faults.clear(CLUSTER, 'fail');
        note(`talosctl ${path} works again`);
      },
    };
  }
  const count = rng.int(1, 6);
  const afterWrite = rng.chance(0.5);
  return {
    fault,
    moment,
    delayMs,
    detail: `count=${count}${afterWrite ? ' after writing' : ''}`,
    inject(h, note) {
      h.slack.faults.serverError({ count, status: 503, afterWrite });
      note(`Slack answers the next ${count} Web API calls with 503${afterWrite ? ', after doing them' : ''}`);
      return Promise.resolve();
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
  const firedAt = (): number | undefined => {
    if (plan.moment === 'start') return milestones.startAt;
    if (plan.moment === 'approval') return milestones.approvalAt;
    return h.sim.events.find((e) => e.cluster === CLUSTER && e.kind === plan.moment)?.at;
  };
  const injection = (async () => {
    let at: number | undefined;
    while ((at = firedAt()) === undefined) {
      if (over.signal.aborted) return;
      await sleep(5);
    }
    await sleep(Math.max(0, at + plan.delayMs - Date.now()));
    if (over.signal.aborted) return;
    injectedAt = Date.now();
    note(`fault ${plan.fault} fires at ${plan.moment}+${plan.delayMs}ms`);
    await plan.inject(h, note);
  })()
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
    plan: `etcd-restore ${plan.moment}+${plan.delayMs}ms ${plan.detail}`,
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
