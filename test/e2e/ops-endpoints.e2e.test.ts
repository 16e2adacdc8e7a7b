import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runGate } from '../support/gate-run.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { metricTypes, parsePrometheusText, sampleValue, type Sample } from '../support/prometheus-text.ts';
import { approve, clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';

async function get(port: number, path: string): Promise<{ status: number; type: string; body: string }> {
  const response = await fetch(`http://127.0.0.1:${port}${path}`);
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: await response.text() };
}

async function scrape(h: Harness): Promise<Sample[]> {
  const response = await get(h.httpPort, '/metrics');
  expect(response.status).toBe(200);
  return parsePrometheusText(response.body);
}

describe('ops endpoints in Socket Mode', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness();
  });

  afterAll(async () => {
    await h?.stop();
  });

  it('answers /healthz while the process runs', async () => {
    expect(await get(h.httpPort, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
  });

  it('answers /readyz with 200 when Redis, Slack and the workers are up', async () => {
    expect(await get(h.httpPort, '/readyz')).toMatchObject({ status: 200, body: 'ready\n' });
  });

  it('serves Prometheus text from a registry of its own', async () => {
    const response = await get(h.httpPort, '/metrics');
    expect(response.type).toBe('text/plain; version=0.0.4; charset=utf-8');
    const types = metricTypes(response.body);
    expect(types).toMatchObject({
      talos_chatops_operations_total: 'counter',
      talos_chatops_step_duration_seconds: 'histogram',
      talos_chatops_queue_jobs: 'gauge',
      talos_chatops_waiting_approvals: 'gauge',
      talos_chatops_exec_duration_seconds: 'histogram',
      talos_chatops_exec_failures_total: 'counter',
      talos_chatops_slack_api_errors_total: 'counter',
      talos_chatops_slack_rate_limited_total: 'counter',
      talos_chatops_health_gates_total: 'counter',
      talos_chatops_process_cpu_user_seconds_total: 'counter',
    });
    const samples = parsePrometheusText(response.body);
    // Only the jobs the bot schedules for itself (the reconciler, the retention sweep) can be running now.
    expect(sampleValue(samples, 'talos_chatops_queue_jobs', { queue: 'talos-ops', state: 'active' })).toBeLessThanOrEqual(2);
    expect(sampleValue(samples, 'talos_chatops_queue_jobs', { queue: 'talos-read', state: 'active' })).toBe(0);
    expect(sampleValue(samples, 'talos_chatops_waiting_approvals', { talos_cluster: 'production' })).toBe(0);
    expect(samples.filter((s) => s.name === 'talos_chatops_ready').map((s) => [s.labels.probe, s.value])).toEqual([
      ['redis', 1],
      ['slack', 1],
      ['workers', 1],
      ['draining', 1],
      ['redis-epoch', 1],
    ]);
  });

  it('counts health gates, their checks, talosctl calls and Slack rate limits', async () => {
    h.slack.faults.rateLimit({ methods: ['chat.update'], count: 1, retryAfterSec: 1 });
    await runGate(h);

    const samples = await scrape(h);
    expect(sampleValue(samples, 'talos_chatops_health_gates_total', { talos_cluster: 'production', result: 'passed' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_health_checks_total', { check: 'etcd-status', status: 'passed' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_exec_duration_seconds_count', { binary: 'talosctl', subcommand: 'etcd status' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_exec_duration_seconds_count', { binary: 'talosctl', subcommand: 'service' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_exec_duration_seconds_count', { binary: 'tofu', subcommand: 'output' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_slack_rate_limited_total', { method: 'chat.update' })).toBe(1);
  });

  it("keeps the last gate's verdict, its time and the Talos versions it read for every replica's scrape", async () => {
    const before = Date.now() / 1000;
    await runGate(h);

    // The verdict is written to Redis beside the gate's reply: scrape until it shows.
    let samples = await scrape(h);
    for (let i = 0; i < 50 && !samples.some((s) => s.name === 'talos_chatops_gate_last_timestamp_seconds'); i += 1) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      samples = await scrape(h);
    }

    const last = samples.filter((s) => s.name === 'talos_chatops_gate_last_timestamp_seconds' && s.labels.talos_cluster === 'production');
    expect(last.map((s) => s.labels.verdict)).toEqual([expect.stringMatching(/^(passed|warning)$/)]);
    expect(last[0]!.value).toBeGreaterThanOrEqual(Math.floor(before));
    // An earlier gate of this file gave the same verdict: the verdict holds since then.
    expect(sampleValue(samples, 'talos_chatops_gate_verdict_since_timestamp_seconds', last[0]!.labels)).toBeLessThanOrEqual(last[0]!.value);
    expect(sampleValue(samples, 'talos_chatops_talos_versions', { talos_cluster: 'production' })).toBe(1);
    expect(samples.filter((s) => s.name === 'talos_chatops_cluster_stopped')).toEqual([]);
    expect(samples.filter((s) => s.name === 'talos_chatops_build_info').map((s) => s.labels.version)).toEqual([
      JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')).version,
    ]);
  });

  it('counts a talosctl call that its probe timeout cut off as a failure of its subcommand', async () => {
    h.sim.faults.set('production', { hang: ['etcd status'] });
    try {
      await runGate(h);
    } finally {
      h.sim.faults.clear('production');
    }
    const samples = await scrape(h);
    expect(
      sampleValue(samples, 'talos_chatops_exec_failures_total', { binary: 'talosctl', subcommand: 'etcd status', code: 'exec-cancelled' }),
    ).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_health_gates_total', { talos_cluster: 'production', result: 'failed' })).toBe(1);
    expect(sampleValue(samples, 'talos_chatops_health_checks_total', { check: 'etcd-status', status: 'failed' })).toBe(1);
  });

  it('shows an operation waiting for approval, then counts the upgrade, its steps and its talosctl upgrades', async () => {
    const testStarted = Date.now() / 1000;
    const before = await scrape(h);
    expect(
      sampleValue(before, 'talos_chatops_operations_total', { talos_cluster: 'staging', kind: 'talos-upgrade', result: 'completed' }),
    ).toBeUndefined();

    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`, { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    const request = await waitForApprovalRequest(h, plan, CHANNELS.staging);
    const waiting = await scrape(h);
    expect(sampleValue(waiting, 'talos_chatops_waiting_approvals', { talos_cluster: 'staging' })).toBe(1);
    expect(sampleValue(waiting, 'talos_chatops_waiting_approvals', { talos_cluster: 'production' })).toBe(0);
    // The lock dates from the Start click and the request from its posting: both within this test's run.
    const locked = sampleValue(waiting, 'talos_chatops_cluster_locked_since_timestamp_seconds', {
      talos_cluster: 'staging',
      kind: 'talos-upgrade',
      state: 'awaiting-approval',
    });
    const requested = sampleValue(waiting, 'talos_chatops_approval_requested_timestamp_seconds', { talos_cluster: 'staging' });
    expect(locked).toBeGreaterThan(testStarted);
    expect(requested).toBeGreaterThanOrEqual(locked!);
    expect(requested).toBeLessThanOrEqual(Date.now() / 1000);
    expect(waiting.filter((s) => s.name.startsWith('talos_chatops_cluster_locked') && s.labels.talos_cluster === 'production')).toEqual([]);

    await approve(h, request, USERS.carol, CHANNELS.staging);
    expect((await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging)).text).toContain('completed');

    const after = await scrape(h);
    expect(
      sampleValue(after, 'talos_chatops_operations_total', { talos_cluster: 'staging', kind: 'talos-upgrade', result: 'completed' }),
    ).toBe(1);
    expect(
      after.filter(
        (s) =>
          s.name === 'talos_chatops_cluster_locked_since_timestamp_seconds' ||
          s.name === 'talos_chatops_approval_requested_timestamp_seconds',
      ),
    ).toEqual([]);
    expect(sampleValue(after, 'talos_chatops_waiting_approvals', { talos_cluster: 'staging' })).toBe(0);
    for (const kind of ['snapshot', 'upgrade-worker', 'upgrade-control-plane', 'verify']) {
      expect([kind, sampleValue(after, 'talos_chatops_step_duration_seconds_count', { kind, status: 'done' })]).toEqual([kind, 1]);
    }
    expect(sampleValue(after, 'talos_chatops_step_duration_seconds_sum', { kind: 'upgrade-worker', status: 'done' })).toBeGreaterThan(0);
    expect(sampleValue(after, 'talos_chatops_exec_duration_seconds_count', { binary: 'talosctl', subcommand: 'upgrade' })).toBe(2);
    expect(sampleValue(after, 'talos_chatops_exec_duration_seconds_count', { binary: 'talosctl', subcommand: 'etcd snapshot' })).toBe(1);
    const talosctlCalls = (samples: Sample[]): number =>
      samples
        .filter((s) => s.name === 'talos_chatops_exec_duration_seconds_count' && s.labels.binary === 'talosctl')
        .reduce((sum, s) => sum + s.value, 0);
    expect(talosctlCalls(after)).toBeGreaterThan(talosctlCalls(before));
    expect(sampleValue(after, 'talos_chatops_queue_jobs', { queue: 'talos-ops', state: 'waiting' })).toBe(0);
  });

  it('answers /readyz with 503 naming Redis while Redis is down, and 200 again once it is back', async () => {
    await h.redis.stop();
    const down = await get(h.httpPort, '/readyz');
    expect(down.status).toBe(503);
    expect(down.body).toMatch(/^not ready: .*\bredis\b/);
    expect(down.body).not.toContain('slack');
    expect((await get(h.httpPort, '/healthz')).status).toBe(200);
    // Scrape-time gauges give up on a Redis that does not answer; the rest still serves, the readiness of Redis as 0.
    const metrics = await get(h.httpPort, '/metrics');
    expect(metrics.status).toBe(200);
    expect(sampleValue(parsePrometheusText(metrics.body), 'talos_chatops_ready', { probe: 'redis' })).toBe(0);
    expect(sampleValue(parsePrometheusText(metrics.body), 'talos_chatops_ready', { probe: 'slack' })).toBe(1);

    await h.redis.restart();
    const ready = await h.slack.waitFor(
      async () => {
        const answer = await get(h.httpPort, '/readyz');
        return answer.status === 200 && answer;
      },
      { timeoutMs: 20_000, intervalMs: 200, description: '/readyz to answer 200 once Redis is back' },
    );
    expect(ready).toMatchObject({ status: 200, body: 'ready\n' });
  });
});

describe('ops endpoints in HTTP mode', () => {
  let h: Harness;

  beforeAll(async () => {
    h = await startHarness({ http: true });
  });

  afterAll(async () => {
    await h?.stop();
  });

  it("serves /healthz, /readyz and /metrics on the port that takes Slack's requests", async () => {
    expect(await get(h.httpPort, '/healthz')).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await get(h.httpPort, '/readyz')).toMatchObject({ status: 200, body: 'ready\n' });
    const metrics = await get(h.httpPort, '/metrics');
    expect(metrics.status).toBe(200);
    expect(metricTypes(metrics.body).talos_chatops_operations_total).toBe('counter');

    const ack = await h.slack.sendSlashCommandHttp(`http://127.0.0.1:${h.httpPort}/slack/events`, {
      user: USERS.alice,
      channel: CHANNELS.production,
      text: 'help',
    });
    expect(ack.status).toBe(200);
    expect(ack.body).toContain('/talos health [cluster]');
  });

  it('refuses commands that still reach a stopping replica, with what to do, and keeps its endpoints up', async () => {
    // A gate whose probe hangs keeps a job running, so the replica drains for a while after SIGTERM.
    h.sim.faults.set('production', { hang: ['etcd status'] });
    const events = `http://127.0.0.1:${h.httpPort}/slack/events`;
    const started = await h.slack.sendSlashCommandHttp(events, { user: USERS.alice, channel: CHANNELS.production, text: 'health' });
    expect(started.body).toContain('Running the health gate');
    await h.slack.waitFor(() => h.bot.logLines().some((l) => l.msg === 'health gate started'), { timeoutMs: 10_000 });
    const jobsBefore = h.bot.logLines().filter((l) => l.msg === 'command enqueued').length;

    const stopped = h.bot.stop();
    for (const deadline = Date.now() + 10_000; (await get(h.httpPort, '/readyz')).status === 200 && Date.now() < deadline;);
    const refused = await h.slack.sendSlashCommandHttp(events, { user: USERS.alice, channel: CHANNELS.production, text: 'health' });
    const healthy = await get(h.httpPort, '/healthz');

    expect(refused.status).toBe(200);
    expect(refused.body).toContain('This replica of the bot is stopping. Nothing was done; run the command again in a moment.');
    expect(healthy).toMatchObject({ status: 200, body: 'ok\n' });
    expect(await stopped).toBe(0);
    expect(h.bot.logLines().filter((l) => l.msg === 'command enqueued')).toHaveLength(jobsBefore);
  });
});
