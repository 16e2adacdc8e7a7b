/**
 * `npm run bench`: figures as ratios against baselines measured in the same run, on
 * this machine. Nothing here asserts; it prints a table and writes it as JSON so runs
 * can be compared.
 */
import { spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus, loadavg, totalmem } from 'node:os';
import { fileURLToPath } from 'node:url';
import { CHANNELS, commandReply, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approveUntilDone, clickStart, requestUpgrade } from '../support/upgrade-flow.ts';
import { acksUnderLoad, fleetShapes, retryToFirstCall } from './retry-and-load.ts';
import { mean, percentile, round, type Row } from './stats.ts';
import { systemClock } from '../../src/time/clock.ts';
import { withDeadline } from '../../src/time/deadline.ts';

const FLEET = Number(process.env.BENCH_FLEET ?? 50);
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ACK_COMMANDS = Number(process.env.BENCH_ACKS ?? 1000);
const GATES = Number(process.env.BENCH_GATES ?? 10);
/** An operator through this user group only: dave is in it, and listed nowhere by id. */
const OPERATOR_GROUP = 'S0SRE';
/** A documentation address (TEST-NET-1), never a node: the command is authorized, then refused, and starts nothing. */
const NOT_A_NODE = '192.0.2.1';

/**
 * Sections to run, comma-separated, default all: `main` (acks, health gate, one upgrade), `fleet`
 * (50 gates at once), `retry` (Retry click to the first cluster call), `load` (acks and event-loop
 * delay under load).
 */
const SECTIONS = new Set((process.env.BENCH_SECTIONS ?? 'main,fleet,retry,load').split(',').map((s) => s.trim()));
/** Runs of the Retry figure, each with a stop and a Retry at each of three control planes. */
const RETRY_RUNS = Number(process.env.BENCH_RETRY_RUNS ?? 2);
/** Acks of the bare app's baseline under load; the bot is measured for as long as its load runs. */
const LOAD_ACKS = Number(process.env.BENCH_LOAD_ACKS ?? 300);
/** "Still modifying..." lines per resource of the chatty tofu apply. */
const TOFU_LINES = Number(process.env.BENCH_TOFU_LINES ?? 2000);
/** The longest the loaded window lasts, in s, should the load take longer. */
const LOAD_WINDOW_S = Number(process.env.BENCH_LOAD_WINDOW_SECONDS ?? 180);
/** The longest one health gate of the fleet section is waited for, in s; a gate past it fails the section. */
const GATE_BOUND_MS = Number(process.env.BENCH_GATE_TIMEOUT_SECONDS ?? 300) * 1000;
/** The longest a section may take, in s: one past it is reported as failed, and the bench goes on to the next. */
const SECTION_BOUND_MS = Number(process.env.BENCH_SECTION_TIMEOUT_SECONDS ?? 1800) * 1000;
const rows: Row[] = [];

interface Latencies {
  /** From delivery to ack, in ms (the emulator's `ackedInMs`). */
  acks: number[];
  /** From delivery to the reply the user reads: the ack when it carries text, else the response_url reply, in ms. */
  replies: number[];
}

/**
 * Sends `text` `count` times, one after the other. Each command's reply is awaited before the
 * next is sent, so an ack that comes before the work is not measured against a growing backlog.
 */
async function ackLatencies(h: Harness, text: string, count: number, user: string = USERS.alice): Promise<Latencies> {
  const out: Latencies = { acks: [], replies: [] };
  for (let i = 0; i < count; i += 1) {
    const sentAt = Date.now();
    const r = await h.slack.sendSlashCommand({ user, channel: CHANNELS.production, text });
    if (r.timedOut) continue;
    out.acks.push(r.ackedInMs);
    const repliedLater = r.payload.text === undefined;
    await commandReply(h.slack, r);
    // Sequential, so the newest response_url call is this command's reply.
    out.replies.push(repliedLater ? (h.slack.responseUrlCalls.at(-1)?.at ?? Number.NaN) - sentAt : r.ackedInMs);
  }
  return out;
}

async function rssKb(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? Number.NaN);
}

async function withBareApp<T>(h: Harness, work: () => Promise<T>): Promise<T> {
  const child = spawn(process.execPath, ['test/bench/bare-bolt-app.ts'], { cwd: ROOT, env: h.env, stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve) => child.stdout.on('data', (d: Buffer) => d.toString().includes('bare app started') && resolve()));
  await h.slack.waitForConnections(1);
  try {
    return await work();
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
}

/** CPU time the process has used so far, in ms (utime + stime from /proc, 100 ticks a second); with `children`, also that of its reaped children. */
async function cpuMs(pid: number | undefined, children = false): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const own = Number(fields[11]) + Number(fields[12]);
  return (children ? own + Number(fields[13]) + Number(fields[14]) : own) * 10;
}

/** CPU of this process (the Slack emulator, the simulator and its Kubernetes API servers), in ms. */
function harnessCpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

function logLines(h: Harness, msg: string): Record<string, number>[] {
  return h.bot.logLines().filter((l) => l.msg === msg) as Record<string, number>[];
}

/** Health gates for a fleet of simulated clusters at once, against one gate alone, on the same bot. */
async function fleetScale(): Promise<void> {
  const { shapes, channelOf, extra } = fleetShapes(FLEET);
  const h = await startHarness({
    clusters: shapes,
    extraChannels: extra.map((i) => ({ id: channelOf(`fleet-${i}`), name: `maint-fleet-${i}` })),
    env: { LOG_LEVEL: 'info', JOB_LOCK_SECONDS: '60', PROBE_TIMEOUT_SECONDS: '120' },
  });
  try {
    // The verdict itself, as the bot logs it when a gate ends (passed or failed), not a count of its replies: their number follows the layout.
    const verdicts = (cluster: string): number =>
      logLines(h, 'health gate finished').filter((l) => (l as Record<string, unknown>).cluster === cluster).length;
    const gateIn = async (cluster: string, channel: string): Promise<void> => {
      const before = verdicts(cluster);
      await h.slack.sendSlashCommand({ user: USERS.alice, channel, text: 'health' });
      await h.slack.waitFor(() => verdicts(cluster) > before, {
        timeoutMs: GATE_BOUND_MS,
        intervalMs: 50,
        description: `the health gate verdict of ${cluster}`,
      });
    };
    await gateIn('staging', CHANNELS.staging); // warm-up
    const pid = h.bot.pid();
    let cpu = await cpuMs(pid);
    let calls = h.sim.calls.length;
    let started = performance.now();
    await gateIn('staging', CHANNELS.staging);
    const one = performance.now() - started;
    const oneCpu = (await cpuMs(pid)) - cpu;
    // Every talosctl and tofu the bot forks, as the simulator recorded them.
    const oneChildren = h.sim.calls.length - calls;
    calls = h.sim.calls.length;
    cpu = await cpuMs(pid);
    const everything = (): Promise<number> => cpuMs(pid, true).then((bot) => bot + harnessCpuMs());
    const cpuBefore = await everything();
    started = performance.now();
    await Promise.all(shapes.map((shape) => gateIn(shape.name, channelOf(shape.name))));
    const all = performance.now() - started;
    const fleetCpuPerGate = ((await cpuMs(pid)) - cpu) / shapes.length;
    const fleetChildrenPerGate = (h.sim.calls.length - calls) / shapes.length;
    // The bot, its talosctl and tofu children, the simulator and the emulator share this machine's cores.
    const floor = ((await everything()) - cpuBefore) / cpus().length;
    rows.push({
      figure: `health gates for ${shapes.length} clusters at once (wall)`,
      value: Math.round(all),
      unit: 'ms',
      baseline: Math.round(one),
      ratio: round(all / one),
      target: '≤ 3x one gate',
    });
    rows.push({
      figure: `the same ${shapes.length} gates against all the CPU they used spread over ${cpus().length} cores`,
      value: Math.round(all),
      unit: 'ms',
      baseline: Math.round(floor),
      ratio: round(all / floor),
      target: 'reference',
    });
    rows.push({
      figure: 'bot CPU per gate, fleet vs alone',
      value: round(fleetCpuPerGate),
      unit: 'ms',
      baseline: round(oneCpu),
      ratio: round(fleetCpuPerGate / oneCpu),
      target: '≤ 20 ms',
    });
    rows.push({
      figure: 'child processes per gate (talosctl, tofu), fleet vs alone',
      value: round(fleetChildrenPerGate, 1),
      unit: 'processes',
      baseline: oneChildren,
      ratio: round(fleetChildrenPerGate / oneChildren),
      target: 'reference',
    });
  } finally {
    await h.stop();
  }
}

/** Sections that did not report, each with why: the bench goes on to the next, and exits non-zero at the end. */
const failures: string[] = [];

/**
 * Runs one section under its bound: an error or an overrun is reported as the section's failure
 * rather than hanging the bench. An overrun section is left to end by its own waits' bounds.
 */
async function section(name: string, run: () => Promise<void>): Promise<void> {
  const started = performance.now();
  const before = rows.length;
  try {
    const outcome = await withDeadline(systemClock, SECTION_BOUND_MS, () => run());
    if (!outcome.ok) failures.push(`${name}: no result within ${SECTION_BOUND_MS / 1000} s`);
  } catch (error) {
    failures.push(`${name}: ${error instanceof Error ? error.message : String(error)}`);
  }
  process.stdout.write(`section ${name}: ${Math.round((performance.now() - started) / 1000)} s\n`);
  // Each section's rows as it ends: a later section that takes the process down cannot lose them.
  process.stdout.write(`${tableOf(rows.slice(before))}\n\n`);
}

/** The rows as a Markdown table, as `docs/performance.md` keeps them. */
function tableOf(shown: readonly Row[]): string {
  return [
    '| figure | value | baseline | ratio | target |',
    '|---|---|---|---|---|',
    ...shown.map(
      (r) =>
        `| ${r.figure} | ${r.value} ${r.unit} | ${r.baseline === undefined ? '' : `${r.baseline} ${r.unit}`} | ${r.ratio === undefined ? '' : `${r.ratio}x`} | ${r.target ?? ''} |`,
    ),
  ].join('\n');
}

async function main(): Promise<void> {
  if (SECTIONS.has('main')) await section('main', mainSection);
  if (SECTIONS.has('fleet')) await section('fleet', fleetScale);
  if (SECTIONS.has('retry')) await section('retry', () => retryToFirstCall(rows, RETRY_RUNS));
  if (SECTIONS.has('load'))
    await section('load', () =>
      acksUnderLoad(rows, { clusters: FLEET, acks: LOAD_ACKS, tofuLines: TOFU_LINES, windowMs: LOAD_WINDOW_S * 1000 }),
    );
  await report();
}

/** Acks against the bare app, the health gate against its slowest probe, one production upgrade. */
async function mainSection(): Promise<void> {
  const h = await startHarness({
    deferStart: true,
    env: { LOG_LEVEL: 'info' },
    inventory: { operators: [USERS.alice, USERS.bob, OPERATOR_GROUP] },
  });
  try {
    // 1. Slash command to ack: the bare Bolt app first, then the bot, alone on the same emulator.
    const bare = (await withBareApp(h, () => ackLatencies(h, 'help', ACK_COMMANDS))).acks;
    await h.bot.start();
    await h.slack.waitForConnections(1);
    const idleRss = await rssKb(h.bot.pid());
    const help = await ackLatencies(h, 'help', ACK_COMMANDS);
    const status = await ackLatencies(h, 'status', ACK_COMMANDS);
    // A planned operation to cancel; after the first cancel the rest find it ended, and are acked the same way.
    const planned = await requestUpgrade(h, 'upgrade talos v1.12.11');
    const cancel = await ackLatencies(h, `cancel ${planned.opId}`, ACK_COMMANDS);
    // Authorized through the group (Slack's usergroups.users.list, cached by the bot for a minute), then refused.
    const byGroup = await ackLatencies(h, `rollback ${NOT_A_NODE}`, ACK_COMMANDS, USERS.dave);
    const measured = [
      ['/talos help', help],
      ['/talos status', status],
      ['/talos cancel op-<id>', cancel],
      [`/talos rollback from an operator in user group ${OPERATOR_GROUP}`, byGroup],
    ] as const;
    for (const [name, { acks }] of measured) {
      rows.push({
        figure: `${name} ack p50`,
        value: round(percentile(acks, 50)),
        unit: 'ms',
        baseline: round(percentile(bare, 50)),
        ratio: round(percentile(acks, 50) / percentile(bare, 50)),
        target: '≤ 1.2x',
      });
      rows.push({
        figure: `${name} ack p99`,
        value: round(percentile(acks, 99)),
        unit: 'ms',
        baseline: round(percentile(bare, 99)),
        ratio: round(percentile(acks, 99) / percentile(bare, 99)),
        target: '≤ 1.2x',
      });
    }
    // What the user waits for: the ack's text, or the reply that follows an empty ack.
    for (const [name, { replies }] of measured) {
      rows.push({
        figure: `${name} reply shown p50`,
        value: round(percentile(replies, 50)),
        unit: 'ms',
        baseline: round(percentile(bare, 50)),
        ratio: round(percentile(replies, 50) / percentile(bare, 50)),
        target: 'reference',
      });
    }

    // 2. Health gate wall time against its slowest probe, and against the runbook's sequential order.
    for (let i = 0; i < GATES; i += 1) {
      const before = h.slack.channelMessages(CHANNELS.production).length;
      await h.command('health');
      await h.slack.waitFor(
        () => h.slack.channelMessages(CHANNELS.production).length > before && logLines(h, 'health gate finished').length > i,
        { timeoutMs: 60_000 },
      );
    }
    const gates = logLines(h, 'health gate finished');
    const ratios = gates.map((g) => g.durationMs! / g.slowestProbeMs!);
    const sequential = gates.map((g) => g.sumProbeMs! / g.slowestProbeMs!);
    rows.push({
      figure: 'health gate wall time (median)',
      value: percentile(
        gates.map((g) => g.durationMs!),
        50,
      ),
      unit: 'ms',
      baseline: percentile(
        gates.map((g) => g.slowestProbeMs!),
        50,
      ),
      ratio: round(percentile(ratios, 50)),
      target: '≤ 1.25x slowest probe',
    });
    rows.push({
      figure: 'runbook order run sequentially (sum of probes)',
      value: percentile(
        gates.map((g) => g.sumProbeMs!),
        50,
      ),
      unit: 'ms',
      baseline: percentile(
        gates.map((g) => g.slowestProbeMs!),
        50,
      ),
      ratio: round(percentile(sequential, 50)),
      target: 'reference',
    });

    // 3. A production Talos upgrade: the bot's own overhead per node, Slack calls, memory while it runs.
    const callsBefore = h.slack.apiCalls.length;
    let peakRss = idleRss;
    const sampler = setInterval(() => void rssKb(h.bot.pid()).then((kb) => (peakRss = Math.max(peakRss, kb || 0))), 100);
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11');
    await clickStart(h, plan);
    await approveUntilDone(h, plan);
    // The maintenance record is attached by a job of its own once the operation ended: its calls count too.
    await h.slack.waitFor(() => h.slack.uploadedFiles().find((f) => f.filename === `${plan.opId}-maintenance-record.md`), {
      timeoutMs: 30_000,
      description: 'the maintenance record',
    });
    clearInterval(sampler);
    const steps = logLines(h, 'node step finished');
    rows.push({
      figure: 'bot overhead per upgraded node (mean)',
      value: round(mean(steps.map((s) => s.overheadMs!))),
      unit: 'ms',
      target: '< 100 ms',
    });
    rows.push({
      figure: 'bot overhead per upgraded node (max)',
      value: Math.max(...steps.map((s) => s.overheadMs!)),
      unit: 'ms',
      target: '< 100 ms',
    });
    rows.push({
      figure: 'node step wall time (mean, mostly talosctl and the cluster)',
      value: round(mean(steps.map((s) => s.wallMs!))),
      unit: 'ms',
    });
    const upgradeCalls = h.slack.apiCalls.slice(callsBefore).filter((c) => c.method.startsWith('chat.') || c.method.startsWith('files.'));
    const stepCount = Number(
      /plan posted: (\d+) steps/.exec(
        h.slack
          .thread(CHANNELS.production, plan.root.ts)
          .map((m) => m.text)
          .join('\n'),
      )?.[1] ?? Number.NaN,
    );
    // A step's calls are in its thread: its reply (an approval request is one) and the edit of a decided request.
    // The rest belong to the operation: the plan, Start and Override, the end, the maintenance record's upload.
    const inThread = upgradeCalls.filter(
      (c) =>
        (c.method === 'chat.postMessage' && c.args.thread_ts === plan.root.ts) ||
        (c.method === 'chat.update' && c.args.ts !== plan.root.ts),
    );
    rows.push({
      figure: `Slack API calls per production upgrade (${stepCount} steps, 3 approvals)`,
      value: upgradeCalls.length,
      unit: 'calls',
    });
    // No budget: readability comes first, and Slack's real limit is about one message a second per channel (the busiest-second row).
    rows.push({
      figure: 'Slack API calls per step, in its thread',
      value: round(inThread.length / stepCount),
      unit: 'calls',
      target: 'reference',
    });
    rows.push({
      figure: 'Slack API calls per operation, outside the steps',
      value: upgradeCalls.length - inThread.length,
      unit: 'calls',
      target: 'reference',
    });
    rows.push({
      figure: 'Slack API calls per step, all calls averaged',
      value: round(upgradeCalls.length / stepCount),
      unit: 'calls',
      target: 'reference',
    });
    const posts = upgradeCalls.filter((c) => c.method === 'chat.postMessage').map((c) => c.at);
    const busiest = Math.max(...posts.map((at) => posts.filter((t) => t >= at && t < at + 1000).length));
    // Slack lets an app post about one message a second to a channel, with short bursts.
    rows.push({
      figure: 'messages posted to the channel in its busiest second (simulated nodes reboot in about 1 s)',
      value: busiest,
      unit: 'messages',
      target: '≈ 1/s, bursts allowed',
    });
    rows.push({ figure: 'resident memory, idle', value: round(idleRss / 1024, 1), unit: 'MiB' });
    rows.push({ figure: 'resident memory, peak during the upgrade', value: round(peakRss / 1024, 1), unit: 'MiB' });
  } finally {
    await h.stop();
  }
}

async function report(): Promise<void> {
  const machine = `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}, load average ${loadavg()[0]!.toFixed(1)} at the end`;
  const date = new Date().toISOString();
  const table = tableOf(rows);
  const failed = failures.length === 0 ? '' : `\nSections that did not report:\n${failures.map((f) => `- ${f}`).join('\n')}\n`;
  process.stdout.write(`\nBenchmarks — ${date} — ${machine}\n\n${table}\n${failed}`);
  await mkdir(`${ROOT}bench-results`, { recursive: true });
  await writeFile(`${ROOT}bench-results/latest.json`, JSON.stringify({ date, machine, rows, failures }, null, 2));
  process.stdout.write('\nwritten to bench-results/latest.json\n');
}

await main();
// A load still running when its window ended (or a section past its bound) would keep the process alive until its waits time out.
process.exit(failures.length === 0 ? 0 : 1);
