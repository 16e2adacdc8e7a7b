import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { storedOperation } from '../support/stored-operation.ts';
import { overrideTwice, requestUpgrade, tickAll, waitForRootState, type Plan } from '../support/upgrade-flow.ts';

// The runbook's "Change machine configuration" from Slack: a reviewed plan applied in staging, the same commit
// promoted to production, refusals that change nothing, and a new control plane watched until it votes.

let h: Harness;

beforeAll(async () => {
  // A join is watched for at most this long: the stuck-learner case waits for it to run out.
  // Debug logs: the sensitive-values test proves nothing of a plan reaches even those.
  h = await startHarness({ env: { NODE_READY_TIMEOUT_SECONDS: '4', POLL_INTERVAL_MS: '100', LOG_LEVEL: 'debug' } });
}, 120_000);

afterAll(async () => {
  await h?.stop();
});

const APPLY = 'talos-op-start';

function hasButton(message: Message | undefined, actionId: string): boolean {
  return JSON.stringify(message?.blocks ?? []).includes(`"action_id":"${actionId}"`);
}

/** `/talos plan` in a cluster's channel, as @alice: the root message once planned or refused. */
async function plan(channel: string): Promise<Plan> {
  return requestUpgrade(h, 'plan', { channel });
}

/** Clicks a button of the plan; an Apply with every checkbox of the plan ticked (the boot ISO compared), as an approver who checked. */
async function click(p: Plan, user: string, channel: string, actionId = APPLY): Promise<void> {
  const ticks = actionId === APPLY ? tickAll(h, channel, p.root.ts) : {};
  await h.slack.clickButton({ user, channel, messageTs: p.root.ts, actionId, ticks });
}

async function whisperTo(user: string, channel: string, pattern: RegExp): Promise<string> {
  const found = await h.slack.waitFor(() => h.slack.ephemerals(channel, user).find((e) => pattern.test(e.text)), {
    description: `a reply to ${user} matching ${pattern}`,
  });
  return found.text;
}

function applies(cluster: string) {
  return h.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === cluster && c.argv[0] === 'apply');
}

/** A text as it sits inside the JSON of Block Kit blocks (quotes escaped). */
function inBlocks(text: string): string {
  return JSON.stringify(text).slice(1, -1);
}

/** Every value in Redis, whatever its type, as text. */
async function redisContents(url: string): Promise<string> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const parts: string[] = [];
    for (const key of await redis.keys('*')) {
      const type = await redis.type(key);
      if (type === 'string') parts.push(key, (await redis.get(key)) ?? '');
      else if (type === 'hash') parts.push(key, JSON.stringify(await redis.hgetall(key)));
      else if (type === 'list') parts.push(key, JSON.stringify(await redis.lrange(key, 0, -1)));
      else if (type === 'set') parts.push(key, JSON.stringify(await redis.smembers(key)));
      else if (type === 'zset') parts.push(key, JSON.stringify(await redis.zrange(key, '0', '-1')));
      else if (type === 'stream') parts.push(key, JSON.stringify(await redis.xrange(key, '-', '+')));
      else parts.push(key, `<${type}>`);
    }
    return parts.join('\n');
  } finally {
    redis.disconnect();
  }
}

/** Everything Redis ever wrote to its append-only files: keys since deleted or expired included. */
async function redisAppendOnlyFiles(dir: string): Promise<string> {
  const aof = join(dir, 'appendonlydir');
  const names = await readdir(aof).catch(() => [] as string[]);
  const texts = await Promise.all(names.map((n) => readFile(join(aof, n), 'latin1')));
  return texts.join('\n');
}

/** An operation as the bot stored it in Redis. */
async function redisOperation(harness: Harness, opId: string): Promise<string | null> {
  const redis = new Redis(harness.redis.url, { maxRetriesPerRequest: 1 });
  try {
    return await redis.get(`talos:op:${opId}`);
  } finally {
    redis.disconnect();
  }
}

function recordOf(opId: string, state = 'completed') {
  return h.slack.uploadedFiles().find((f) => f.filename === `${opId}-maintenance-record.md` && f.title.includes(state));
}

describe('a routine change: staging first, then the same commit in production', () => {
  let stagingOp: string;
  let commit: string;

  it("plans in staging, refuses Apply from the requester and from non-approvers, applies exactly the saved plan on an approver's click, then gates", async () => {
    // Arrange: one reviewed change for both clusters, committed once.
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.changePatch('production');
    commit = await h.sim.terraform.commit('Talos patch: sysctl for both clusters');

    // Act
    const p = await plan(CHANNELS.staging);
    stagingOp = p.opId;
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    // The message that pages the approvers, as it was before anyone acted (it is edited to the outcome afterwards).
    const request = await h.slack.waitFor(() => h.slack.thread(CHANNELS.staging, p.root.ts).find((m) => /click \*Apply\*/.test(m.text)), {
      description: 'the message paging the approvers',
    });
    await click(p, USERS.alice, CHANNELS.staging);
    const requester = await whisperTo(USERS.alice, CHANNELS.staging, /Only approvers/);
    await click(p, USERS.eve, CHANNELS.staging);
    const stranger = await whisperTo(USERS.eve, CHANNELS.staging, /Only approvers/);
    expect(applies('staging')).toEqual([]);
    await click(p, USERS.carol, CHANNELS.staging);
    const done = await waitForRootState(h, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    // Assert
    expect(JSON.stringify(planned.blocks)).toContain(commit.slice(0, 12));
    expect(hasButton(planned, APPLY)).toBe(true);
    expect(request.text).toContain('<@U0CAROL>');
    expect(h.slack.message(CHANNELS.staging, request.ts)?.text).toMatch(/^✅ Applied by <@U0CAROL> .* · gate passed/);
    expect(requester).toContain('Only approvers of *staging* may apply');
    expect(stranger).toContain('Only approvers');
    expect(done.text).toContain('completed');
    const [apply, ...more] = applies('staging');
    expect(more).toEqual([]);
    expect(apply?.argv.slice(0, 3)).toEqual(['apply', '-input=false', '-no-color']);
    expect(apply?.argv.at(-1)).toMatch(/tfplan$/);
    expect(h.sim.calls.some((c) => c.bin === 'tofu' && c.argv.includes('-auto-approve'))).toBe(false);
    const thread = h.slack.thread(CHANNELS.staging, p.root.ts);
    expect(thread.some((m) => /tofu apply\* finished on staging/.test(m.text))).toBe(true);
    expect(h.slack.uploadedFiles().some((f) => f.filename === `${p.opId}-tofu-apply.log` && /Apply complete!/.test(f.content))).toBe(true);
    expect(h.slack.uploadedFiles().some((f) => f.filename === `${p.opId}-tofu-plan.txt`)).toBe(true);
    const record = recordOf(p.opId);
    expect(record?.content).toContain(`- Commit: ${commit}`);
    expect(record?.content).toMatch(/- Terraform plan: \d+ to change; sha256 [0-9a-f]{64}/);
    expect(record?.content).toMatch(/- Snapshot: staging-\S+-rev\d+ \(\d+ bytes, sha256 [0-9a-f]{64}/);
    expect(record?.content).toMatch(/- Validation: health gate passed after the apply/);
    expect(record?.content).toContain('## Terraform plan as reviewed (tofu show)');
  }, 120_000);

  it('refuses production without the staging apply, then promotes the same commit once staging passed its gate', async () => {
    // Act: the production plan names the staging apply of the same commit.
    const p = await plan(CHANNELS.production);
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/);
    await click(p, USERS.alice, CHANNELS.production);
    const fourEyes = await whisperTo(USERS.alice, CHANNELS.production, /Only approvers/);
    await click(p, USERS.carol, CHANNELS.production);
    const done = await waitForRootState(h, p, /completed|stopped|cancelled/, CHANNELS.production, 90_000);
    await waitForSettled(h);

    // Assert
    const shown = JSON.stringify(planned.blocks);
    expect(shown).toContain(`applied to staging by <@${USERS.carol}>`);
    expect(shown).toContain('gate passed');
    expect(shown).toContain(stagingOp);
    expect(hasButton(planned, 'talos-op-override')).toBe(false);
    expect(fourEyes).toContain('Only approvers');
    expect(done.text).toContain('completed');
    expect(applies('production')).toHaveLength(1);
    expect(recordOf(p.opId)?.content).toContain(`Applied to staging first: ${stagingOp} by ${USERS.carol}`);
  }, 120_000);

  it('refuses production Apply for a commit staging never applied until an approver overrides', async () => {
    // Arrange: a new commit that only production's inputs change.
    await h.sim.terraform.changePatch('production');
    await h.sim.terraform.commit('production only');
    const before = applies('production').length;

    // Act
    const p = await plan(CHANNELS.production);
    const planned = await waitForRootState(h, p, /waiting for an approver's Apply/);
    await click(p, USERS.carol, CHANNELS.production);
    const refused = await whisperTo(USERS.carol, CHANNELS.production, /Override first/);
    await h.slack.clickButton({ user: USERS.alice, channel: CHANNELS.production, messageTs: p.root.ts, actionId: 'talos-op-cancel' });
    await waitForRootState(h, p, /cancelled/);
    await waitForSettled(h);

    // Assert
    expect(JSON.stringify(planned.blocks)).toContain('was not applied to staging with its gate passed');
    expect(hasButton(planned, 'talos-op-override')).toBe(true);
    expect(refused).toContain('no apply of commit');
    expect(applies('production')).toHaveLength(before);
  }, 60_000);
});

describe('bad input changes nothing', () => {
  it('never offers a plan that replaces the cluster secrets, and offers a new plan instead', async () => {
    // Arrange
    await h.sim.terraform.replaceSecrets('staging');
    await h.sim.terraform.commit('replace the secrets (a migration)');
    const before = applies('staging').length;

    // Act
    const p = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);
    // Undo the declared change for the next tests.
    await h.sim.terraform.declare('staging', (inputs) => {
      inputs.talos_secrets_generation -= 1;
    });
    await h.sim.terraform.commit('keep the secrets');

    // Assert
    expect(JSON.stringify(refused.blocks)).toContain('cluster migration');
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(hasButton(refused, 'talos-plan-again')).toBe(true);
    expect(applies('staging')).toHaveLength(before);
    expect(h.sim.events.some((e) => e.kind === 'secrets-replaced')).toBe(false);
  }, 60_000);

  it('never offers a plan that forgets the cluster secrets and creates new ones (lifecycle.destroy = false), as a replacement', async () => {
    // Arrange: OpenTofu 1.12 plans this replacement as ["forget","create"].
    await h.sim.terraform.setLifecycle('staging', 'talos_machine_secrets.this', { destroy: false });
    await h.sim.terraform.replaceSecrets('staging');
    await h.sim.terraform.commit('new secrets, keeping the old object');
    const before = applies('staging').length;

    // Act
    const p = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);
    await h.sim.terraform.declare('staging', (inputs) => {
      inputs.talos_secrets_generation -= 1;
      delete inputs.lifecycle;
    });
    await h.sim.terraform.commit('keep the secrets');

    // Assert
    const shown = JSON.stringify(refused.blocks);
    expect(shown).toContain('`talos_machine_secrets.this` forgets the cluster secrets and generates new ones');
    expect(shown).toContain('cluster migration');
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(hasButton(refused, 'talos-plan-again')).toBe(true);
    expect(applies('staging')).toHaveLength(before);
    expect(h.sim.events.some((e) => e.kind === 'secrets-replaced')).toBe(false);
  }, 60_000);

  it("refuses a plan that forgets a node's VM and Talos configuration (lifecycle.destroy = false, a removed block), naming each resource", async () => {
    // Arrange: a worker's key leaves `talos_nodes` while the configuration keeps the objects on removal: OpenTofu plans ["forget"].
    let gone = '';
    let kept: unknown;
    let lifecycle: Record<string, object> | undefined;
    await h.sim.terraform.declare('staging', (inputs) => {
      gone = Object.entries(inputs.talos_nodes).find(([, n]) => n.role === 'worker')![0];
      kept = inputs.talos_nodes[gone];
      delete inputs.talos_nodes[gone];
      lifecycle = inputs.lifecycle;
      inputs.lifecycle = {
        ...lifecycle,
        'proxmox_virtual_environment_vm.talos': { destroy: false },
      };
      // The node's configuration apply leaves through a `removed` block instead.
      inputs.removed = [{ from: `talos_machine_configuration_apply.this[${JSON.stringify(gone)}]`, destroy: false }];
    });
    await h.sim.terraform.commit('stop managing a worker');
    const before = applies('staging').length;

    // Act
    const p = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);
    await h.sim.terraform.declare('staging', (inputs) => {
      inputs.talos_nodes[gone] = kept as (typeof inputs.talos_nodes)[string];
      inputs.lifecycle = lifecycle;
      delete inputs.removed;
    });
    await h.sim.terraform.commit('manage the worker again');

    // Assert
    const stored = await storedOperation(h, p.opId);
    const shown = JSON.stringify(refused.blocks);
    expect(stored.state).toBe('refused');
    expect(stored.refusals).toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          new RegExp(`^\`proxmox_virtual_environment_vm\\.talos\\["${gone}"\\]\` removes a Talos VM from the Terraform state`),
        ),
        expect.stringMatching(new RegExp(`^\`talos_machine_configuration_apply\\.this\\["${gone}"\\]\` removes the Talos resource`)),
      ]),
    );
    expect(shown).toContain("outside Terraform's ownership");
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(applies('staging')).toHaveLength(before);
  }, 60_000);

  it('never offers a plan holding an action it does not recognise, and names the resource and the action', async () => {
    // Arrange: a plan as a newer OpenTofu might write it.
    const address = 'talos_machine_configuration_apply.this["talos-stg-w-1"]';
    h.sim.faults.set('staging', { tofuPlanActions: { [address]: ['Archive'] } });
    const before = applies('staging').length;

    // Act
    const p = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);
    h.sim.faults.clear('staging', 'tofuPlanActions');

    // Assert
    const shown = JSON.stringify(refused.blocks);
    expect(shown).toContain(inBlocks(`\`${address}\` has the action ["Archive"], which the bot does not recognise`));
    expect(shown).not.toContain('the plan changes nothing');
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(applies('staging')).toHaveLength(before);
  }, 60_000);

  it('shows a plan from a tree with uncommitted changes but never offers it', async () => {
    // Arrange
    await h.sim.terraform.changePatch('staging');

    // Act
    const p = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, p, /refused/, CHANNELS.staging);
    await waitForSettled(h);

    // Assert
    const shown = JSON.stringify(refused.blocks);
    expect(shown).toContain('uncommitted changes');
    expect(shown).toContain('cluster.auto.tfvars.json');
    expect(hasButton(refused, APPLY)).toBe(false);
    await h.sim.terraform.commit('the patch, committed');
  }, 60_000);

  it('refuses a plan tofu calls stale and applies nothing; Plan again gives a fresh one', async () => {
    // Arrange
    const p = await plan(CHANNELS.staging);
    await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    h.sim.terraform.touchState('staging');
    const serial = h.sim.terraform.serial('staging');

    // Act
    await click(p, USERS.carol, CHANNELS.staging);
    const stopped = await waitForRootState(h, p, /stopped|completed/, CHANNELS.staging, 60_000);
    await h.slack.clickButton({ user: USERS.bob, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: 'talos-plan-again' });
    const again = await whisperTo(USERS.bob, CHANNELS.staging, /Planning again as/);
    // A stale client clicks the button it still shows.
    await h.slack.clickButton({
      user: USERS.bob,
      channel: CHANNELS.staging,
      messageTs: p.root.ts,
      actionId: 'talos-plan-again',
      value: `${p.opId}.replan`,
    });
    const twice = await whisperTo(USERS.bob, CHANNELS.staging, /already planned again/);
    await waitForSettled(h);

    // Assert
    expect(stopped.text).toContain('stopped at the first failure');
    expect(JSON.stringify(h.slack.message(CHANNELS.staging, p.root.ts)?.blocks)).toContain('stale');
    expect(h.sim.terraform.serial('staging')).toBe(serial);
    expect(again).toMatch(/op-[a-z0-9]+/);
    expect(twice).toContain('Nothing changed');
    expect(recordOf(p.opId, 'failed')?.content).toContain('- Result: failed');
    // The stopped change holds the cluster until it is cancelled.
    await h.command(`cancel ${p.opId}`, { channel: CHANNELS.staging });
    await waitForRootState(h, p, /cancelled/, CHANNELS.staging);
    await waitForSettled(h);
    const fresh = h.slack.channelMessages(CHANNELS.staging).find((m) => m.text.includes(/op-[a-z0-9]+/.exec(again)![0]));
    expect(fresh?.text).toMatch(/Terraform change: staging/);
  }, 90_000);
});

describe('sensitive values of the plan', () => {
  it('never reach Slack, the logs or Redis through /talos plan and Apply, though tofu show -json prints them in plain text', async () => {
    // Arrange: a committed patch; the plan's JSON carries the secrets canary (talos_machine_secrets) and the canary (the credentials outputs).
    await h.sim.terraform.changePatch('staging');
    await h.sim.terraform.commit('a patch, for the secrets check');

    // Act
    const p = await plan(CHANNELS.staging);
    await waitForRootState(h, p, /waiting for an approver's Apply/, CHANNELS.staging);
    await click(p, USERS.carol, CHANNELS.staging);
    const done = await waitForRootState(h, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    // Assert: the values were there to leak, in what the bot read from tofu show -json.
    const shown = h.sim.calls.filter(
      (c) => c.bin === 'tofu' && c.cluster === 'staging' && c.argv[0] === 'show' && c.argv.includes('-json'),
    );
    expect(shown.length).toBeGreaterThanOrEqual(2);
    expect(done.text).toContain('completed');
    const planFile = `${p.opId}-tofu-plan.txt`;
    expect(h.slack.uploadedFiles().some((f) => f.filename === planFile && f.content.includes('Plan: 0 to add'))).toBe(true);
    const stored = await redisContents(h.redis.url);
    const written = await redisAppendOnlyFiles(join(h.dir, 'redis'));
    // What is searched holds the operation, so an empty read cannot pass for a clean one.
    expect(stored).toContain(p.opId);
    expect(written).toContain(p.opId);
    for (const canary of [h.sim.secretsCanary, h.sim.canary]) {
      expect(h.slack.allTraffic()).not.toContain(canary);
      expect(
        h.slack
          .uploadedFiles()
          .filter((f) => f.content.includes(canary))
          .map((f) => f.filename),
      ).toEqual([]);
      expect(h.bot.logs()).not.toContain(canary);
      expect(stored).not.toContain(canary);
      expect(written).not.toContain(canary);
    }
  }, 120_000);
});

describe('adding a control plane', () => {
  it('watches a new control plane until it votes: stops while it stays a learner, refuses another add until every member reports the same leader, and a Retry sees it vote', async () => {
    // Arrange: the new control plane's etcd member is not promoted until the fault clears.
    h.sim.faults.set('staging', { etcdLearnerStuck: ['talos-stg-cp-2'] });
    await h.sim.terraform.addNode('staging', { hostname: 'talos-stg-cp-2', address: '10.0.20.12', role: 'controlplane', host: 'pve1' });
    await h.sim.terraform.commit('add talos-stg-cp-2');
    const first = await plan(CHANNELS.staging);
    const planned = await waitForRootState(h, first, /waiting for an approver's Apply/, CHANNELS.staging);

    // Act: the watch runs out while the member is a learner; then another add is planned.
    await click(first, USERS.carol, CHANNELS.staging);
    const stopped = await waitForRootState(h, first, /stopped|completed/, CHANNELS.staging, 90_000);
    await h.sim.terraform.addNode('staging', { hostname: 'talos-stg-w-2', address: '10.0.20.22', role: 'worker', host: 'pve1' });
    await h.sim.terraform.commit('add talos-stg-w-2');
    const second = await plan(CHANNELS.staging);
    const refused = await waitForRootState(h, second, /refused/, CHANNELS.staging);
    // Act: once the member is promoted, a Retry of the watch sees it vote, and the gate counts it.
    h.sim.faults.clear('staging', 'etcdLearnerStuck');
    const retry = await h.slack.waitFor(
      () =>
        h.slack.thread(CHANNELS.staging, first.root.ts).find((m) => hasButton(h.slack.message(CHANNELS.staging, m.ts), 'talos-op-retry')),
      { description: 'the Retry offer' },
    );
    await h.slack.clickButton({ user: USERS.bob, channel: CHANNELS.staging, messageTs: retry.ts, actionId: 'talos-op-retry' });
    const done = await waitForRootState(h, first, /completed/, CHANNELS.staging, 90_000);
    await waitForSettled(h);

    // Assert
    expect(JSON.stringify(planned.blocks)).toContain('watch talos-stg-cp-2 join');
    expect(stopped.text).toContain('stopped at the first failure');
    const thread = h.slack.thread(CHANNELS.staging, first.root.ts);
    // The stop as it was posted, before the Retry edited it: the evidence names the learner.
    expect(JSON.stringify(h.slack.versions(CHANNELS.staging, retry.ts)[0]?.blocks)).toContain(
      'talos-stg-cp-2: etcd learner, not yet a voting member',
    );
    expect(JSON.stringify(refused.blocks)).toContain('Before you add another node, wait for all members to report the same leader');
    expect(hasButton(refused, APPLY)).toBe(false);
    expect(done.text).toContain('completed');
    const texts = thread.map((m) => m.text).join('\n');
    expect(texts).toMatch(/talos-stg-cp-2 \(10\.0\.20\.12\) joined as a control plane/);
    expect(texts).toContain('talos-stg-cp-2: voting etcd member');
    expect(texts).toContain("This bot's inventory lists the nodes of staging: add it to `controlPlanes` or `workers` there");
    expect(texts).toContain('counting 10.0.20.12');
    expect(applies('staging').filter((c) => c.argv.at(-1)?.includes(first.opId))).toHaveLength(1);
    expect(h.sim.calls.some((c) => c.bin === 'talosctl' && c.argv.includes('bootstrap'))).toBe(false);
  }, 240_000);
});

describe('a production window', () => {
  let w: Harness;

  afterAll(async () => {
    await w?.stop();
  });

  it('refuses an Apply clicked outside the maintenance window and applies nothing', async () => {
    // Arrange: production's only window opens six hours from now; the change was applied in staging already.
    const opensAt = new Date(Date.now() + 6 * 3600_000);
    const window = { start: `${opensAt.getUTCMinutes()} ${opensAt.getUTCHours()} * * *`, durationMinutes: 60, timeZone: 'UTC' };
    w = await startHarness({ inventory: { extra: { production: { maintenanceWindows: [window] } } } });
    await w.sim.terraform.changePatch('production');
    await w.sim.terraform.commit('production patch');
    const p = await requestUpgrade(w, 'plan', { channel: CHANNELS.production });
    await waitForRootState(w, p, /waiting for an approver's Apply/);

    // Act: an approver overrides the missing staging apply, then clicks Apply outside the window.
    await overrideTwice(w, p);
    await w.slack.clickButton({ user: USERS.carol, channel: CHANNELS.production, messageTs: p.root.ts, actionId: APPLY });
    const refused = await w.slack.waitFor(() => w.slack.ephemerals(CHANNELS.production, USERS.carol).find((e) => /window/.test(e.text)), {
      description: 'the window refusal',
    });
    await waitForSettled(w);

    // Assert
    expect(refused.text).toContain('Nothing changed');
    expect(w.slack.message(CHANNELS.production, p.root.ts)?.text).toContain("waiting for an approver's Apply");
    expect(w.sim.calls.filter((c) => c.bin === 'tofu' && c.argv[0] === 'apply')).toEqual([]);
  }, 120_000);
});

describe('an Apply that a failure spent', () => {
  let r: Harness;

  afterAll(async () => {
    await r?.stop();
  });

  it('never runs tofu apply on a Retry by the requester: an approver other than the requester approves the apply again first', async () => {
    // Arrange: staging with four eyes, the requester an approver too; a reviewed plan, and a node that turns NotReady before the
    // Apply, so the gate before the apply fails.
    r = await startHarness({
      inventory: { approvers: [USERS.carol, USERS.alice, 'S0SRE'], extra: { staging: { requireDistinctApprover: true } } },
    });
    await r.sim.terraform.changePatch('staging');
    await r.sim.terraform.commit('a patch that a failed gate holds up');
    const p = await requestUpgrade(r, 'plan', { channel: CHANNELS.staging });
    await waitForRootState(r, p, /waiting for an approver's Apply/, CHANNELS.staging);
    const node = r.sim.cluster('staging').nodes[0]!.address;
    r.sim.faults.set('staging', { nodeNotReady: [node] });
    const tofuApplies = () => r.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === 'staging' && c.argv[0] === 'apply');
    const withButton = (actionId: string) => () =>
      r.slack
        .thread(CHANNELS.staging, p.root.ts)
        .find((m) => JSON.stringify(r.slack.message(CHANNELS.staging, m.ts)?.blocks ?? []).includes(`"action_id":"${actionId}"`));

    // Act: the approver's Apply; the gate before the apply stops it. The requester fixes the node and clicks Retry.
    await r.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY });
    await waitForRootState(r, p, /stopped/, CHANNELS.staging, 60_000);
    const stop = await r.slack.waitFor(withButton('talos-op-retry'), { description: 'the Retry offer' });
    const stopBlocks = JSON.stringify(r.slack.message(CHANNELS.staging, stop.ts)?.blocks ?? []);
    r.sim.faults.clear('staging', 'nodeNotReady');
    await r.slack.clickButton({ user: USERS.alice, channel: CHANNELS.staging, messageTs: stop.ts, actionId: 'talos-op-retry' });
    const request = await r.slack.waitFor(withButton('talos-step-approve'), { description: 'a fresh approval request of the apply' });
    await waitForRootState(r, p, /waiting for approval/, CHANNELS.staging);
    const beforeApproval = tofuApplies().length;
    // The requester cannot approve it; the approver whose Apply the failure spent can.
    await r.slack.clickButton({ user: USERS.alice, channel: CHANNELS.staging, messageTs: request.ts, actionId: 'talos-step-approve' });
    await r.slack.waitFor(() => r.slack.ephemerals(CHANNELS.staging, USERS.alice).find((e) => /four eyes/.test(e.text)), {
      description: 'the four-eyes refusal',
    });
    const afterRequester = tofuApplies().length;
    await r.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: request.ts, actionId: 'talos-step-approve' });
    const done = await waitForRootState(r, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);
    await waitForSettled(r);

    // Assert
    expect(stopBlocks).not.toContain('upgrade-k8s');
    expect(stopBlocks).toContain('A step that needs an approval asks for it again');
    expect(beforeApproval).toBe(0);
    expect(afterRequester).toBe(0);
    expect(request.text).toMatch(/^🔐 staging · Terraform apply · approve tofu apply of the reviewed plan/);
    expect(done.text).toContain('completed');
    expect(tofuApplies()).toHaveLength(1);
    const op = JSON.parse((await redisOperation(r, p.opId)) ?? '{}') as {
      steps: { id: string; kind: string }[];
      approvals: { step: string; state: string; by?: string }[];
    };
    expect(op.steps.find((s) => s.kind === 'tofu-apply')?.id).toBe('tofu-apply');
    expect(op.approvals.map((a) => [a.step, a.state, a.by])).toEqual([
      ['tofu-apply', 'spent', USERS.carol],
      ['tofu-apply', 'approved', USERS.carol],
    ]);
  }, 240_000);
});

describe('a routine apply that takes no node away', () => {
  let r: Harness;

  afterAll(async () => {
    await r?.stop();
  });

  it('is not refused by a disruption budget only a drain would meet, and says no drain is judged here', async () => {
    // Arrange: apps/podinfo allows no disruption on staging; the change replaces no VM.
    r = await startHarness();
    r.sim.faults.set('staging', { pdbBlocked: ['podinfo'] });
    await r.sim.terraform.changePatch('staging');
    await r.sim.terraform.commit('a sysctl patch while a budget allows no disruption');

    // Act
    const p = await requestUpgrade(r, 'plan', { channel: CHANNELS.staging });
    const planned = await waitForRootState(r, p, /waiting for an approver's Apply|refused/, CHANNELS.staging);
    await r.slack.clickButton({ user: USERS.carol, channel: CHANNELS.staging, messageTs: p.root.ts, actionId: APPLY });
    const done = await waitForRootState(r, p, /completed|stopped|cancelled/, CHANNELS.staging, 90_000);

    // Assert
    expect(planned.text).toContain("waiting for an approver's Apply");
    expect(JSON.stringify(planned.blocks)).toContain('No drain judged here: the plan replaces or destroys no VM');
    expect(done.text).toContain('completed');
    const applied = r.sim.calls.filter((c) => c.bin === 'tofu' && c.cluster === 'staging' && c.argv[0] === 'apply');
    expect(applied).toHaveLength(1);
  }, 180_000);
});
