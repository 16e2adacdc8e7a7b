import { afterEach, describe, expect, it } from 'vitest';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { approve, clickStart, requestUpgrade, waitForApprovalRequest, waitForRootState } from '../support/upgrade-flow.ts';

let h: Harness;

afterEach(async () => {
  await h?.stop();
});

describe('JSON logs', () => {
  it('name the cluster on every line that names an operation, and the node on every node step line', async () => {
    h = await startHarness({ env: { LOG_LEVEL: 'debug' } });
    const plan = await requestUpgrade(h, 'upgrade talos v1.12.11', { channel: CHANNELS.staging });
    await clickStart(h, plan, USERS.alice, CHANNELS.staging);
    await approve(h, await waitForApprovalRequest(h, plan, CHANNELS.staging), USERS.carol, CHANNELS.staging);
    expect((await waitForRootState(h, plan, /completed|stopped/, CHANNELS.staging)).text).toContain('completed');

    const lines = h.bot.logLines();
    const withOp = lines.filter((l) => l.op === plan.opId);
    expect(withOp.length).toBeGreaterThan(10);
    expect(withOp.filter((l) => l.cluster !== 'staging')).toEqual([]);
    const nodeLines = withOp.filter((l) =>
      ['talosctl upgrade progress', 'node step finished', 'approval requested'].includes(String(l.msg)),
    );
    expect(nodeLines.length).toBeGreaterThan(2);
    expect(nodeLines.filter((l) => !['10.0.20.204', '10.0.20.205'].includes(String(l.node)))).toEqual([]);
    // Every line of the bot is JSON, the same fields in every line.
    const text = h.bot
      .logs()
      .split('\n')
      .filter((l) => l !== '');
    expect(text.filter((l) => !l.startsWith('{'))).toEqual([]);
  });
});

describe('LOG_PRETTY=true', () => {
  it('starts, logs human-readable lines, and stops with exit code 0', async () => {
    h = await startHarness({ env: { LOG_PRETTY: 'true' } });
    expect((await fetch(`http://127.0.0.1:${h.httpPort}/healthz`)).status).toBe(200);
    await h.command('health');
    await h.slack.waitFor(() => h.slack.channelMessages(CHANNELS.production).find((m) => /Health gate (passed|failed)/.test(m.text)), {
      timeoutMs: 30_000,
    });

    expect(await h.bot.stop()).toBe(0);

    const logs = h.bot.logs();
    expect(logs).toMatch(/^\[\d{2}:\d{2}:\d{2}\.\d{3}\] INFO: bot started$/m);
    expect(logs).toMatch(/INFO: health gate started\n\s+service: "talos-chatops"\n\s+op: "health-/);
    // Flushed before the exit: the last line of the shutdown made it out.
    expect(logs).toMatch(/INFO: stopped\n\s+service: "talos-chatops"\n\s+forced: false/);
    expect(logs.split('\n').filter((l) => l.startsWith('{'))).toEqual([]);
  });
});
