/**
 * Two figures of `npm run bench`: how soon a Retry reaches the cluster, and how the bot's acks
 * and event loop hold up while 50 health gates, a production upgrade and a chatty `tofu apply`
 * run at once, against the bare Bolt app under the same command load in the same run.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { Message } from '../slack-emulator/index.ts';
import { productionShape, stagingShape, type ClusterShape } from '../sim/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import {
  approve,
  approveUntilDone,
  clickStart,
  originalButtonValue,
  requestUpgrade,
  waitForRootState,
  type Plan,
} from '../support/upgrade-flow.ts';
import { percentile, round, type Row } from './stats.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PROBE = fileURLToPath(new URL('./loop-delay-probe.ts', import.meta.url));

const hasButton = (m: Message | undefined, actionId: string): boolean =>
  JSON.stringify(m?.blocks ?? []).includes(`"action_id":"${actionId}"`);

/**
 * The first talosctl call on `cluster` the simulator recorded from `from` on: a call to the
 * cluster itself (`tofu output` only reads the credentials from the state; the Kubernetes API
 * keeps no record of requests).
 */
function firstClusterCall(h: Harness, cluster: string, from: number): { at: number; what: string } | undefined {
  const call = h.sim.calls.find((c) => c.bin === 'talosctl' && c.cluster === cluster && c.startedAt >= from);
  return call && { at: call.startedAt, what: `${call.bin} ${call.argv[0] ?? ''}` };
}

/**
 * Retry click to the first cluster call. On Talos 1.13 nodes a drain that cannot evict a pod stops
 * the upgrade with a Retry; the budget is then fixed and Retry clicked as an approver. A Retry of an
 * approval-gated step asks for the approval again: the bench approves at once, and the time the
 * request waited for that click is taken off, so the figure is the bot's own. Each run stops once
 * at each of the three control planes.
 */
export async function retryToFirstCall(rows: Row[], runs: number): Promise<void> {
  const FROM = 'v1.13.8';
  const TARGET = 'v1.13.9';
  const channel = CHANNELS.production;
  const samples: number[] = [];
  const reapproved: number[] = [];
  const firstCalls = new Map<string, number>();
  for (let run = 0; run < runs; run += 1) {
    const h = await startHarness({ clusters: [stagingShape({ talosVersion: FROM }), productionShape({ talosVersion: FROM })] });
    try {
      const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
      await clickStart(h, plan);
      const kube = h.sim.cluster('production').kube;
      const budget = kube.pdbs.find((p) => p.name === 'podinfo');
      const pod = kube.pods.find((p) => p.labels['app'] === 'podinfo');
      if (!budget || !pod) throw new Error('the production shape has no podinfo budget and pod to block a drain with');
      const handled = new Set<string>();
      const fresh = (actionId: string, match: (m: Message) => boolean = () => true): Message | undefined =>
        h.slack.thread(channel, plan.root.ts).find((m) => !handled.has(m.ts) && hasButton(m, actionId) && match(m));
      for (let stop = 0; stop < 3; stop += 1) {
        const request = await h.slack.waitFor(() => fresh('talos-step-approve'), { timeoutMs: 60_000, description: 'an approval request' });
        handled.add(request.ts);
        const address = /10\.0\.30\.\d+/.exec(request.text)?.[0];
        const node = h.sim.cluster('production').nodes.find((n) => n.address === address);
        if (!node) throw new Error(`no node named in the approval request: ${request.text}`);
        // Its pod may not be evicted: the drain times out, and the step stops with a Retry.
        pod.nodeName = node.hostname;
        budget.minAvailable = 2;
        await approve(h, request);
        const stopped = await h.slack.waitFor(() => fresh('talos-op-retry', (m) => m.text.includes('❌ Stopped')), {
          timeoutMs: 90_000,
          description: `the stop at ${node.address}`,
        });
        handled.add(stopped.ts);
        budget.minAvailable = 1;
        const clickAt = Date.now();
        await h.slack.clickButton({
          user: USERS.carol,
          channel,
          messageTs: stopped.ts,
          actionId: 'talos-op-retry',
          value: originalButtonValue(h, channel, stopped.ts, 'talos-op-retry'),
        });
        let approverWait = 0;
        const first = await h.slack.waitFor(
          () => firstClusterCall(h, 'production', clickAt) ?? (fresh('talos-step-approve') ? ('approval' as const) : undefined),
          { timeoutMs: 60_000, intervalMs: 2, description: 'the first cluster call or approval after the Retry' },
        );
        let call = first === 'approval' ? undefined : first;
        if (first === 'approval') {
          const again = fresh('talos-step-approve')!;
          handled.add(again.ts);
          const seenAt = Date.now();
          await approve(h, again);
          approverWait = Date.now() - seenAt;
          reapproved.push(1);
          call = await h.slack.waitFor(() => firstClusterCall(h, 'production', clickAt), {
            timeoutMs: 60_000,
            intervalMs: 2,
            description: 'the first cluster call after the re-approval',
          });
        }
        samples.push(call!.at - clickAt - approverWait);
        firstCalls.set(call!.what, (firstCalls.get(call!.what) ?? 0) + 1);
      }
      await approveUntilDone(h, plan);
    } finally {
      await h.stop();
    }
  }
  const what = [...firstCalls].map(([call, n]) => `${call} ×${n}`).join(', ');
  for (const p of [50, 99])
    rows.push({
      figure: `Retry click → first cluster call p${p} (${samples.length} Retries; first call: ${what}; ${reapproved.length} asked approval again first, the approver's own wait taken off)`,
      value: round(percentile(samples, p)),
      unit: 'ms',
      target: 'reference',
    });
}

interface LoopDelay {
  at: number;
  samples: number;
  p50: number;
  p99: number;
  max: number;
}

/** The probe's window since its last SIGUSR2, read once it has written after `after`. */
async function loopDelay(file: string, after: number): Promise<LoopDelay> {
  for (let i = 0; i < 100; i += 1) {
    const text = await readFile(file, 'utf8').catch(() => '');
    const snapshot = text === '' ? undefined : (JSON.parse(text) as LoopDelay);
    if (snapshot && snapshot.at > after) return snapshot;
    await sleep(50);
  }
  throw new Error(`the loop-delay probe wrote nothing to ${file}`);
}

/** The app that acks the commands: its name in errors, and whether its process still runs. */
interface Acker {
  name: string;
  running: () => boolean;
}

/** How long a command waits for the app to connect again when it had no socket. */
const RECONNECT_PAUSE_MS = 100;

/**
 * `/talos help`, one after the other, until `more()` says stop (at least `min` times); the ack times in ms, a command
 * that was not acked counting as Slack's 3 s. Fails as soon as the app's process has ended.
 */
async function helpAcks(h: Harness, app: Acker, min: number, more: () => boolean): Promise<number[]> {
  const acks: number[] = [];
  while (acks.length < min || more()) {
    const r = await h.slack.sendSlashCommand({ user: USERS.alice, channel: CHANNELS.production, text: 'help' });
    if (r.timedOut) acks.push(3000);
    else acks.push(r.ackedInMs);
    // With no socket open the emulator answers at once, without any I/O: a loop that went on at once would hold this
    // process's event loop for good, so the app could never connect again and the records of the failed commands
    // would grow until the heap ran out.
    if (r.timedOut && r.reason === 'no_connection') {
      if (!app.running()) throw new Error(`${app.name} exited while its acks were measured`);
      await sleep(RECONNECT_PAUSE_MS);
    }
    if (!more() && acks.length >= min) break;
  }
  return acks;
}

/** The fleet of the benchmarks: staging, production and `count - 2` small clusters, each with its maintenance channel. */
export function fleetShapes(count: number): { shapes: ClusterShape[]; channelOf: (name: string) => string; extra: number[] } {
  const extra = Array.from({ length: count - 2 }, (_, i) => i);
  const shapes = [
    stagingShape(),
    productionShape(),
    ...extra.map((i) =>
      stagingShape({
        name: `fleet-${i}`,
        nodes: [
          { hostname: `fleet-${i}-cp-1`, address: `10.1.${i}.10`, role: 'controlplane', host: 'pve9' },
          { hostname: `fleet-${i}-w-1`, address: `10.1.${i}.11`, role: 'worker', host: 'pve9' },
        ],
        endpoints: [`10.1.${i}.10`],
        kubernetesEndpoint: `https://10.1.${i}.10:6443`,
      }),
    ),
  ];
  const channelOf = (name: string): string =>
    name === 'staging'
      ? CHANNELS.staging
      : name === 'production'
        ? CHANNELS.production
        : `C0MAINT${name.toUpperCase().replace(/[^A-Z0-9]/g, '')}`;
  return { shapes, channelOf, extra };
}

/**
 * Ack p99 and event-loop delay p99 of the bot while 50 health gates, a production Talos upgrade
 * and a `tofu apply` printing thousands of lines run at once, beside the bare Bolt app (no load)
 * under the same command load: `/talos help`, one after the other, from the same emulator.
 */
export async function acksUnderLoad(
  rows: Row[],
  options: { clusters: number; acks: number; tofuLines: number; windowMs: number },
): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-loop-'));
  const file = join(dir, 'loop-delay.json');
  const { shapes, channelOf, extra } = fleetShapes(options.clusters);
  const h = await startHarness({
    clusters: shapes,
    extraChannels: extra.map((i) => ({ id: channelOf(`fleet-${i}`), name: `maint-fleet-${i}` })),
    deferStart: true,
    timing: { tofuStillLines: options.tofuLines },
    env: {
      LOG_LEVEL: 'info',
      JOB_LOCK_SECONDS: '60',
      PROBE_TIMEOUT_SECONDS: '120',
      NODE_OPTIONS: `--import=${PROBE} ${process.env['BENCH_PROFILE_DIR'] ? `--cpu-prof --cpu-prof-dir=${process.env['BENCH_PROFILE_DIR']}` : ''}`,
      BENCH_LOOP_DELAY_FILE: file,
    },
  });
  try {
    // The bare app: the same probe, the same commands, nothing else running.
    const bare = spawn(process.execPath, ['test/bench/bare-bolt-app.ts'], { cwd: ROOT, env: h.env, stdio: ['ignore', 'pipe', 'inherit'] });
    await new Promise<void>((resolve) => bare.stdout.on('data', (d: Buffer) => d.toString().includes('bare app started') && resolve()));
    await h.slack.waitForConnections(1);
    const bareApp: Acker = { name: 'the bare app', running: () => bare.exitCode === null && bare.signalCode === null };
    await helpAcks(h, bareApp, 20, () => false);
    bare.kill('SIGUSR2');
    const bareFrom = Date.now();
    const bareAcks = await helpAcks(h, bareApp, options.acks, () => false);
    const bareLoop = await loopDelay(file, Date.now());
    bare.kill('SIGTERM');
    await new Promise((r) => bare.once('exit', r));
    const bareMs = Date.now() - bareFrom;

    await h.bot.start();
    await h.slack.waitForConnections(1);
    const botPid = h.bot.pid();
    if (botPid === undefined) throw new Error('the bot has no process id');
    // The loads, ready to go: a reviewed Terraform change in staging, a production upgrade started.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('Talos patch: sysctl');
    const change: Plan = await requestUpgrade(h, 'plan', { channel: CHANNELS.staging });
    await waitForRootState(h, change, /waiting for an approver's Apply/, CHANNELS.staging, 120_000);
    const upgrade = await requestUpgrade(h, 'upgrade talos v1.12.11');
    const bot: Acker = { name: 'the bot', running: () => h.bot.running() };
    await helpAcks(h, bot, 20, () => false);

    // The bystander: an idle Node process with the same probe, beside the bot through the same window.
    const bystanderFile = join(dir, 'bystander-delay.json');
    const bystander = spawn(process.execPath, ['test/bench/bare-bolt-app.ts'], {
      cwd: ROOT,
      env: { ...h.env, BARE_OFFLINE: '1', BENCH_LOOP_DELAY_FILE: bystanderFile },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    await new Promise<void>((resolve) =>
      bystander.stdout.on('data', (d: Buffer) => d.toString().includes('bare app started') && resolve()),
    );
    const gatesBefore = h.bot.logLines().filter((l) => l.msg === 'health gate finished').length;
    process.kill(botPid, 'SIGUSR2');
    bystander.kill('SIGUSR2');
    const from = Date.now();
    let loadDone = false;
    const load = Promise.allSettled([
      clickStart(h, upgrade).then(() => approveUntilDone(h, upgrade)),
      h.slack
        .clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: change.root.ts, actionId: 'talos-op-start' })
        .then(() => waitForRootState(h, change, /completed|stopped|cancelled/, CHANNELS.staging, 300_000)),
      Promise.all(shapes.map((s) => h.slack.sendSlashCommand({ user: USERS.alice, channel: channelOf(s.name), text: 'health' }))).then(() =>
        h.slack.waitFor(() => h.bot.logLines().filter((l) => l.msg === 'health gate finished').length >= gatesBefore + shapes.length, {
          timeoutMs: 300_000,
          intervalMs: 100,
          description: `${shapes.length} health gates`,
        }),
      ),
    ]).finally(() => {
      loadDone = true;
    });
    // The window ends when the load does, or after `windowMs` of it; what is still running then is named in the figure.
    const until = from + options.windowMs;
    const loadedAcks = await helpAcks(h, bot, 1, () => !loadDone && Date.now() < until);
    const loadMs = Date.now() - from;
    const loaded = await loopDelay(file, Date.now());
    const beside = await loopDelay(bystanderFile, Date.now());
    bystander.kill('SIGTERM');
    const settled = await Promise.race([load, sleep(1000).then(() => [] as PromiseSettledResult<unknown>[])]);
    const tofuLines = h.slack
      .uploadedFiles()
      .filter((f) => f.filename === `${change.opId}-tofu-apply.log`)
      .reduce((n, f) => n + f.content.split('\n').length, 0);
    const failed = settled.map((s, i) => (s.status === 'rejected' ? `${['upgrade', 'tofu apply', 'gates'][i]}: ${String(s.reason)}` : ''));
    const unfinished = settled.length === 0 ? ['still running at the end of the window'] : failed.filter((f) => f !== '');
    const note = `${shapes.length} gates, a production upgrade, a tofu apply of ${tofuLines} log lines, over ${round(loadMs / 1000, 1)} s${unfinished.length > 0 ? `; load not finished: ${unfinished.join('; ')}` : ''}`;
    rows.push({
      figure: `ack p99 under load (${note}; ${loadedAcks.length} acks against ${bareAcks.length} to the bare app over ${round(bareMs / 1000, 1)} s)`,
      value: round(percentile(loadedAcks, 99)),
      unit: 'ms',
      baseline: round(percentile(bareAcks, 99)),
      ratio: round(percentile(loadedAcks, 99) / percentile(bareAcks, 99)),
      target: '≤ 250 ms (Slack: 3 s)',
    });
    rows.push({
      figure: 'ack p50 under the same load',
      value: round(percentile(loadedAcks, 50)),
      unit: 'ms',
      baseline: round(percentile(bareAcks, 50)),
      ratio: round(percentile(loadedAcks, 50) / percentile(bareAcks, 50)),
      target: 'reference',
    });
    rows.push({
      figure: `event-loop delay p99 under the same load (${loaded.samples} samples; bare app: ${bareLoop.samples})`,
      value: round(loaded.p99),
      unit: 'ms',
      baseline: round(bareLoop.p99),
      ratio: round(loaded.p99 / Math.max(bareLoop.p99, 0.01)),
      target: '≤ 50 ms',
    });
    rows.push({
      figure: `event-loop delay p99 of the bot against an idle Node process beside it under the same load (${beside.samples} samples): the bot's own share`,
      value: round(loaded.p99),
      unit: 'ms',
      baseline: round(beside.p99),
      ratio: round(loaded.p99 / Math.max(beside.p99, 0.01)),
      target: 'reference',
    });
    rows.push({
      figure: 'event-loop delay max under the same load',
      value: round(loaded.max),
      unit: 'ms',
      baseline: round(bareLoop.max),
      ratio: round(loaded.max / Math.max(bareLoop.max, 0.01)),
      target: 'reference',
    });
  } finally {
    await h.stop();
  }
}
