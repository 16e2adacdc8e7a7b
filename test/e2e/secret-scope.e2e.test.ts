/**
 * What counts as a secret, through the real bot: a Terraform setting that names the cluster is
 * not one, so operations and approval requests keep the cluster's name; a secret that would blank
 * out a cluster name stops the start; and no child process can read the Slack tokens, neither in
 * its own environment nor in the bot's `/proc/<pid>/environ`.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { Operation } from '../../src/ops/operation.ts';
import { CHANNELS, startHarness, type Harness } from '../support/harness.ts';
import { clickStart, requestUpgrade, waitForApprovalRequest } from '../support/upgrade-flow.ts';

const TARGET = 'v1.12.11';
/** A provider token with a quote and a backslash: written escaped in JSON, where the scrubber must find it too. */
const HOSTILE_TOKEN = `pve"tok\\en-${crypto.randomUUID()}`;
let h: Harness;

afterEach(async () => {
  await h?.stop();
});

async function storedOp(opId: string): Promise<Operation> {
  const client = new Redis(h.redis.url, { maxRetriesPerRequest: 1 });
  try {
    return Operation.parse(JSON.parse((await client.get(`talos:op:${opId}`)) ?? 'null'));
  } finally {
    client.disconnect();
  }
}

describe('Terraform settings are not secrets', () => {
  it('stores an operation of production with its cluster, and its approval request names it, with TF_VAR_environment=production', async () => {
    // Arrange
    h = await startHarness({ env: { TF_VAR_environment: 'production', TF_VAR_proxmox_api_token: HOSTILE_TOKEN } });

    // Act
    const plan = await requestUpgrade(h, `upgrade talos ${TARGET}`);
    await clickStart(h, plan);
    const request = await waitForApprovalRequest(h, plan);

    // Assert
    const op = await storedOp(plan.opId);
    expect(op).toMatchObject({ cluster: 'production', channel: CHANNELS.production });
    expect(op.target.version).toBe(TARGET);
    expect(plan.root.text).toContain('production');
    expect(request.text).toContain('production');
    expect(request.text).toContain(TARGET);
    expect(h.slack.allTraffic()).not.toContain('[REDACTED]');
    for (const form of [HOSTILE_TOKEN, JSON.stringify(HOSTILE_TOKEN).slice(1, -1)]) {
      expect(h.slack.allTraffic()).not.toContain(form);
      expect(h.bot.logs()).not.toContain(form);
    }
  });

  it('refuses to start with a secret equal to a cluster name, naming the variable', async () => {
    // Arrange
    h = await startHarness({ deferStart: true });
    h.env.TF_VAR_proxmox_api_token = 'production';

    // Act
    const start = h.bot.start();

    // Assert
    await expect(start).rejects.toThrow(/TF_VAR_proxmox_api_token: its value equals a value of the cluster inventory/);
  });
});

describe('the Slack tokens and child processes', () => {
  it('keeps the tokens out of the environment of a talosctl the bot runs, and out of the bot environ it could read', async () => {
    // Arrange: the tokens come from files; talosctl is a wrapper that records what it can see, then runs the simulated one.
    h = await startHarness({ deferStart: true });
    const secrets = join(h.dir, 'secrets');
    const seen = join(h.dir, 'seen');
    await mkdir(secrets, { mode: 0o700 });
    await mkdir(seen);
    const tokens = { SLACK_BOT_TOKEN: h.env.SLACK_BOT_TOKEN!, SLACK_APP_TOKEN: h.env.SLACK_APP_TOKEN!, REDIS_URL: h.env.REDIS_URL! };
    for (const [name, value] of Object.entries(tokens)) {
      await writeFile(join(secrets, name), `${value}\n`, { mode: 0o600 });
      delete h.env[name];
      h.env[`${name}_FILE`] = join(secrets, name);
    }
    const wrapper = join(h.dir, 'talosctl');
    await writeFile(
      wrapper,
      `#!/bin/bash
env > "${seen}/own-$$.txt"
tr '\\0' '\\n' < /proc/$PPID/environ > "${seen}/parent-$$.txt"
exec "${h.sim.env({ talosctl: 'binary' }).TALOSCTL_BIN}" "$@"
`,
    );
    await chmod(wrapper, 0o755);
    h.env.TALOSCTL_BIN = wrapper;

    // Act
    await h.bot.start();
    await h.slack.waitForConnections(1);
    await requestUpgrade(h, `upgrade talos ${TARGET}`);

    // Assert
    const files = readdirSync(seen);
    expect(files.filter((f) => f.startsWith('own-')).length).toBeGreaterThan(0);
    expect(files.filter((f) => f.startsWith('parent-')).length).toBeGreaterThan(0);
    const leaks = files.flatMap((file) => {
      const text = readFileSync(join(seen, file), 'utf8');
      const names = Object.keys(tokens).filter((name) => text.includes(tokens[name as keyof typeof tokens]) || text.includes(`${name}=`));
      return names.map((name) => `${file}: ${name}`);
    });
    expect(leaks).toEqual([]);
  });
});
