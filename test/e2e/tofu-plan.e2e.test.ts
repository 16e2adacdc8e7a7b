import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { CallRecord, ClusterFaults } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});

afterAll(async () => {
  await h?.stop();
});

beforeEach(() => {
  h.sim.faults.clear('production');
  h.sim.faults.clear('staging');
});

interface PlanRun {
  ack: string;
  root: Message;
  fmt: Message;
  validate: Message;
  changes: Message;
  /** The tofu commands this run started. */
  tofu: CallRecord[];
}

function tofuCalls(since: number): CallRecord[] {
  return h.sim.calls.slice(since).filter((c) => c.bin === 'tofu');
}

/** `/talos plan` through Slack, then the finished root message, its three replies and the tofu calls. */
async function plan(faults: ClusterFaults = {}): Promise<PlanRun> {
  h.sim.faults.set('production', faults);
  const channel = CHANNELS.production;
  const before = h.slack.channelMessages(channel).length;
  const since = h.sim.calls.length;
  const ack = await h.command('plan');
  const root = await h.slack.waitFor(
    () => {
      const latest = h.slack.channelMessages(channel).slice(before)[0];
      if (!latest || latest.text.startsWith('⏳')) return undefined;
      return h.slack.thread(channel, latest.ts).length === 3 ? latest : undefined;
    },
    { timeoutMs: 30_000, description: 'a finished plan summary' },
  );
  const [fmt, validate, changes] = h.slack.thread(channel, root.ts) as [Message, Message, Message];
  return { ack, root, fmt, validate, changes, tofu: tofuCalls(since) };
}

function shown(message: Message): string {
  return JSON.stringify(message.blocks ?? []) + message.text;
}

function outFile(run: PlanRun): string {
  const out = run.tofu.find((c) => c.argv[0] === 'plan')?.argv.find((a) => a.startsWith('-out='));
  if (out === undefined) throw new Error('tofu plan ran without -out');
  return out.slice('-out='.length);
}

describe('/talos plan', () => {
  it('runs fmt, validate, plan and show in the Terraform directory and reports no changes', async () => {
    const run = await plan();

    expect(run.ack).toContain('read-only: nothing is applied');
    expect(run.root.text).toBe('✅ Terraform plan of production: no changes.');
    expect(run.fmt.text).toMatch(/^✅ \*tofu fmt -check -recursive\*/);
    expect(run.validate.text).toMatch(/^✅ \*tofu validate\*/);
    expect(run.changes.text).toMatch(/^✅ \*tofu plan\*: no changes/);
    const file = outFile(run);
    expect(run.tofu.map((c) => c.argv)).toEqual([
      ['fmt', '-check', '-recursive'],
      ['validate', '-no-color'],
      ['plan', '-detailed-exitcode', '-lock=false', '-input=false', '-no-color', `-out=${file}`],
      ['show', '-json', file],
    ]);
    const terraformDir = resolve(h.sim.cluster('production').terraformDir);
    expect(run.tofu.every((c) => resolve(c.cwd) === terraformDir)).toBe(true);
    // The plan file lived in a private directory that is gone afterwards.
    expect(dirname(dirname(file))).toBe(h.env.CREDENTIALS_DIR);
    expect(existsSync(dirname(file))).toBe(false);
    expect(await readdir(h.env.CREDENTIALS_DIR!)).toEqual([]);
  });

  it('lists the changes grouped by provider, with their actions', async () => {
    const run = await plan({ tofuPlan: 'changes' });

    expect(run.root.text).toBe('📝 Terraform plan of production: 1 to change; inspect every Talos and Proxmox change.');
    expect(run.changes.text).toMatch(/^📝 \*tofu plan\*: 1 to change/);
    expect(shown(run.changes)).toContain('Talos\\n  ~ update   talos_machine_configuration_apply.this[\\"talos-prd-cp-1\\"]');
    expect(shown(run.changes)).not.toContain('DANGER');
    expect(shown(run.changes)).not.toContain('talos_machine_secrets');
  });

  it('flags a replacement of the cluster secrets in red as a cluster migration', async () => {
    const run = await plan({ tofuPlan: 'replace-secrets' });

    expect(run.root.text).toMatch(/^🟥 DANGER: the Terraform plan of production must not be applied: talos_machine_secrets\.this replaces the cluster secrets: a cluster migration, not maintenance: stop/);
    expect(JSON.stringify(run.root.blocks)).toContain('🟥 *DANGER*: `talos_machine_secrets.this`');
    expect(shown(run.changes)).toContain('-/+ replace  talos_machine_secrets.this (replace_because_cannot_update) 🟥 DANGER');
    expect(run.changes.text).toMatch(/^🟥 \*tofu plan\*: 1 to replace/);
  });

  it('flags a replacement of a Talos VM in red', async () => {
    const run = await plan({ tofuPlan: 'replace-vm' });

    expect(run.root.text).toContain('🟥 DANGER');
    expect(run.root.text).toContain('proxmox_virtual_environment_vm.talos["talos-prd-cp-1"] replaces a Talos VM');
    expect(shown(run.changes)).toContain('Proxmox\\n-/+ replace  proxmox_virtual_environment_vm.talos[\\"talos-prd-cp-1\\"]');
    expect(shown(run.changes)).not.toContain('talos_machine_secrets.this');
  });

  it('reports unformatted files and still plans', async () => {
    const run = await plan({ tofuFmtUnformatted: ['main.tf', 'modules/nodes/nodes.tf'] });

    expect(run.root.text).toBe('✅ Terraform plan of production: no changes. tofu fmt: 2 files not formatted.');
    expect(run.fmt.text).toContain('⚠️ *tofu fmt -check -recursive*: 2 files not formatted: run `tofu fmt -recursive`');
    expect(shown(run.fmt)).toContain('main.tf\\nmodules/nodes/nodes.tf');
    expect(run.tofu.map((c) => c.argv[0])).toEqual(['fmt', 'validate', 'plan', 'show']);
  });

  it('reports a tofu error by its diagnostic, removes the plan file and keeps running', async () => {
    const run = await plan({ tofuPlan: 'error' });

    expect(run.root.text).toBe('❌ tofu plan failed for production: Error: Error acquiring the state lock.');
    expect(run.changes.text).toMatch(/^❌ \*tofu plan\* failed; nothing was applied/);
    expect(shown(run.changes)).toContain('ConditionalCheckFailedException');
    expect(run.tofu.map((c) => c.argv[0])).toEqual(['fmt', 'validate', 'plan']);
    expect(existsSync(dirname(outFile(run)))).toBe(false);
    expect(h.bot.running()).toBe(true);
  });

  it('never applies and never reads credentials', () => {
    const tofu = h.sim.calls.filter((c) => c.bin === 'tofu');
    expect(tofu.length).toBeGreaterThanOrEqual(20);
    expect(tofu.filter((c) => c.argv.includes('apply') || c.argv.includes('output'))).toEqual([]);
    expect(h.sim.calls.filter((c) => c.bin === 'talosctl')).toEqual([]);
  });
});

describe('/talos plan refusals', () => {
  async function refused(text: string, user: string, channel: string): Promise<string> {
    const posted = h.slack.channelMessages(channel).length;
    const calls = h.sim.calls.length;
    const ack = await h.command(text, { user, channel });
    await waitForSettled(h);
    expect(h.slack.channelMessages(channel).length).toBe(posted);
    expect(h.sim.calls.length).toBe(calls);
    return ack;
  }

  it('refuses a channel member who is not an operator', async () => {
    expect(await refused('plan', USERS.eve, CHANNELS.production)).toContain('Only operators of *production* may start a Terraform plan');
  });

  it('refuses an approver who is not an operator', async () => {
    expect(await refused('plan', USERS.carol, CHANNELS.production)).toContain('Only operators of *production*');
  });

  // Asked for in staging's channel, the plan of production goes to production's channel: see links-and-channels.e2e.test.ts.
  it('refuses a plan asked for in a channel that belongs to no cluster', async () => {
    expect(await refused('plan production', USERS.alice, CHANNELS.random)).toContain('This channel belongs to no cluster');
  });
});
