import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { READ_QUEUE } from '../../src/queue/job-schemas.ts';
import type { ClusterFaults } from '../sim/index.ts';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';

/** The eight checks of the runbook's gate, in the order the thread lists them, then the agreement of the estate's sources and the comparison with what Terraform declares. */
const CHECK_TITLES = [
  'talosctl version',
  'talosctl health',
  'talosctl service etcd',
  'talosctl etcd status',
  'Kubernetes nodes',
  'Kubernetes pods',
  'Flux',
  'PodDisruptionBudgets',
  'Nodes by every source',
  'Versions declared in Terraform',
];

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

interface GateRun {
  ack: string;
  root: Message;
  replies: Message[];
}

/** `/talos health` through Slack, then the finished root message and its thread. */
async function health(text = 'health', channel: string = CHANNELS.production): Promise<GateRun> {
  const before = h.slack.channelMessages(channel).length;
  const ack = await h.command(text, { channel });
  const root = await h.slack.waitFor(
    () => {
      const latest = h.slack.channelMessages(channel).slice(before)[0];
      if (!latest || !/Health gate (passed|failed)/.test(latest.text)) return undefined;
      // The evidence file comes last, after the replies.
      return h.slack.thread(channel, latest.ts).some((m) => (m.files ?? []).length > 0) ? latest : undefined;
    },
    { timeoutMs: 30_000, description: 'a finished health gate' },
  );
  return { ack, root, replies: h.slack.thread(channel, root.ts).filter((m) => (m.files ?? []).length === 0) };
}

function reply(run: GateRun, title: string): Message {
  const found = run.replies.find((r) => r.text.includes(title));
  if (!found) throw new Error(`no reply for ${title}: ${run.replies.map((r) => r.text).join('\n')}`);
  return found;
}

/** The evidence file attached to a gate's thread. */
function evidenceOf(run: GateRun): string {
  const file = h.slack.uploadedFiles().find((f) => f.thread_ts === run.root.ts);
  if (!file) throw new Error('no evidence file in the thread');
  return file.content;
}

function replyText(message: Message): string {
  return JSON.stringify(message.blocks ?? []) + message.text;
}

async function gateWith(faults: ClusterFaults): Promise<GateRun> {
  h.sim.faults.set('production', faults);
  return health();
}

describe('/talos health on the healthy production cluster', () => {
  it('acks at once, posts the verdict with who and how long, and threads every check on one line of one reply, with the evidence attached', async () => {
    const run = await health();

    expect(run.ack).toContain('Running the health gate on *production*');
    expect(run.root.text).toMatch(/^✅ Health gate passed: production \(\d/);
    const rootBlocks = JSON.stringify(run.root.blocks);
    expect(rootBlocks).toContain(`<@${USERS.alice}>`);
    expect(rootBlocks).toMatch(/Took\*\\n[\d.]+ (ms|s)/);
    expect(rootBlocks).not.toContain('talos-gate-again');
    expect(run.replies).toHaveLength(1);
    const lines = run.replies[0]!.text.split('\n');
    expect(lines.map((l) => CHECK_TITLES.findIndex((t) => l.startsWith(`✅ ${t}`)))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const file = h.slack.uploadedFiles().find((f) => f.filename?.startsWith('health-gate-production-'));
    expect(file?.content).toMatch(/PASSED {2}talosctl etcd status \(10\.0\.30\.11, 10\.0\.30\.12, 10\.0\.30\.13\)/);
    expect(file?.content).toMatch(/10\.0\.30\.11 +member/);
    // Every replica reads the verdict back from Redis for /talos status.
    expect(await h.command('status')).toMatch(
      new RegExp(`\\nLast health gate: ✅ passed <!date\\^\\d+\\^[^>]+> · \`/talos health\` by <@${USERS.alice}>`),
    );
  });

  it('edits the replies of an earlier run when its job runs again, never a second set', async () => {
    const run = await health();
    h.sim.faults.set('production', { fluxStalled: ['apps'] });

    // A job whose lock lapsed runs again with the data it stored: the root message it posted.
    const redis = new Redis(h.redis.url, { maxRetriesPerRequest: null });
    const queue = new Queue(READ_QUEUE, { connection: redis });
    try {
      const data = {
        cluster: 'production',
        channel: CHANNELS.production,
        requestedBy: USERS.alice,
        requestedAt: new Date().toISOString(),
        rootTs: run.root.ts,
      };
      await queue.add('health', data, { jobId: 'health-rerun-1' });
      await h.slack.waitFor(() => /Health gate failed/.test(h.slack.message(CHANNELS.production, run.root.ts)?.text ?? ''), {
        timeoutMs: 30_000,
      });
      await h.slack.waitFor(() => !/Flux/.test(h.slack.message(CHANNELS.production, run.replies[0]!.ts)?.text ?? 'Flux'), {
        timeoutMs: 10_000,
      });
    } finally {
      await queue.close();
      redis.disconnect();
    }

    // The earlier run's reply now holds the eight passing checks; the failing one is edited into the file's place, never posted twice.
    const thread = h.slack.thread(CHANNELS.production, run.root.ts);
    expect(thread[0]!.ts).toBe(run.replies[0]!.ts);
    expect(thread[0]!.text.split('\n')).toHaveLength(9);
    expect(thread.filter((m) => m.text.includes('Flux')).length).toBeLessThanOrEqual(1);
  });

  it('asks every control plane for etcd status and names each node explicitly', async () => {
    const since = h.sim.calls.length;
    await health();
    const calls = h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl');
    const etcdStatus = calls.find((c) => c.argv.includes('status'));
    expect(etcdStatus?.argv).toEqual(expect.arrayContaining(['--nodes', '10.0.30.11,10.0.30.12,10.0.30.13']));
    // One call asks every control plane for its etcd service; each reply names its node.
    const services = calls.filter((c) => c.argv[0] === 'service').map((c) => c.argv[c.argv.indexOf('--nodes') + 1]);
    expect(services).toEqual(['10.0.30.11,10.0.30.12,10.0.30.13']);
    expect(calls.every((c) => c.argv.includes('--nodes') && c.argv.includes('--talosconfig'))).toBe(true);
    expect(calls.every((c) => !c.argv.join(' ').includes('10.0.30.10'))).toBe(true);
  });
});

describe('/talos health stops and names the cause', () => {
  it('fails when etcd has no leader', async () => {
    const run = await gateWith({ etcdNoLeader: true });
    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(reply(run, 'etcd status').text).toMatch(/^❌.*leader/i);
    expect(await h.command('status')).toMatch(/\nLast health gate: ❌ failed <!date\^\d+\^/);
  });

  it('fails when members disagree on the leader', async () => {
    const run = await gateWith({ etcdLeaderDisagreement: ['10.0.30.13'] });
    expect(reply(run, 'etcd status').text).toMatch(/^❌.*(disagree|leader)/i);
    expect(run.root.text).toContain('failed');
  });

  it('fails when a control-plane etcd service is unhealthy', async () => {
    const run = await gateWith({ etcdUnhealthy: { '10.0.30.12': 'Running' } });
    const etcd = reply(run, 'service etcd');
    expect(etcd.text).toMatch(/^❌/);
    expect(replyText(etcd)).toContain('10.0.30.12');
  });

  it('fails when a node is NotReady', async () => {
    const run = await gateWith({ nodeNotReady: ['10.0.30.13'] });
    const nodes = reply(run, 'Kubernetes nodes');
    expect(nodes.text).toMatch(/^❌/);
    expect(replyText(nodes)).toContain('talos-prd-cp-3');
  });

  it('fails when a node is cordoned', async () => {
    const run = await gateWith({ nodeCordoned: ['10.0.30.11'] });
    expect(reply(run, 'Kubernetes nodes').text).toMatch(/^❌.*cordon/i);
  });

  it('fails when a node is unreachable', async () => {
    const run = await gateWith({ nodeUnreachable: ['10.0.30.12'] });
    expect(run.root.text).toContain('failed');
    expect(reply(run, 'talosctl version').text).toMatch(/^❌.*10\.0\.30\.12/);
    expect(reply(run, 'Kubernetes nodes').text).toMatch(/^❌/);
    // The merged etcd service call still gives the unreachable node its own evidence, and the others theirs.
    const etcd = replyText(reply(run, 'service etcd'));
    expect(etcd).toMatch(/10\.0\.30\.12: .*(rpc error|connection|unreachable|refused)/i);
    expect(etcd).toContain('10.0.30.11');
  });

  it('fails on a stalled Kustomization and shows its message', async () => {
    const run = await gateWith({ fluxStalled: ['apps'] });
    const flux = reply(run, 'Flux');
    expect(flux.text).toMatch(/^❌/);
    expect(replyText(flux)).toMatch(/flux-system\/apps.*Stalled/);
    expect(JSON.stringify(run.root.blocks)).toContain('Flux');
  });

  it('fails on a Kustomization whose Ready=False turned half a minute ago: every retry restamps the transition', async () => {
    const run = await gateWith({ fluxFailingRecently: ['apps'] });
    const flux = reply(run, 'Flux');
    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(flux.text).toMatch(/^❌/);
    expect(replyText(flux)).toContain('Kustomization flux-system/apps: Ready=False (HealthCheckFailed');
  });

  it('fails on a HelmRelease failing for an hour, read between retries with a fresh transition', async () => {
    const run = await gateWith({ fluxNotReady: ['podinfo'] });
    expect(reply(run, 'Flux').text).toMatch(/^❌/);
    expect(replyText(reply(run, 'Flux'))).toContain('HelmRelease apps/podinfo: Ready=False (UpgradeFailed');
  });

  it('fails on a Kustomization caught at the start of a retry, by its revisions and history', async () => {
    const run = await gateWith({ fluxRetrying: ['apps'] });
    const flux = replyText(reply(run, 'Flux'));
    expect(reply(run, 'Flux').text).toMatch(/^❌/);
    expect(flux).toMatch(
      /Kustomization flux-system\/apps: revision main@sha1:[0-9a-f]+ attempted, .* applied: the last attempt failed \(HealthCheckFailed\), failing since 60 min ago/,
    );
  });

  it('only warns on a Kustomization applying a new revision for the first time', async () => {
    const run = await gateWith({ fluxReconciling: ['apps'] });
    expect(run.root.text).toContain('✅ Health gate passed: production');
    expect(reply(run, 'Flux').text).toMatch(/^⚠️/);
    expect(replyText(reply(run, 'Flux'))).toMatch(
      /flux-system\/apps: revision .* attempted, .* applied, attempted for \d+ s; reconciliation in progress/,
    );
  });

  it('reports suspended Flux objects without failing on them', async () => {
    const run = await gateWith({ fluxSuspended: ['apps'] });
    expect(run.root.text).toContain('✅ Health gate passed');
    // A passing check's evidence is in the attached file, not the one-line reply.
    expect(evidenceOf(run)).toContain('Kustomization flux-system/apps: suspended: not evaluated');
  });

  it('fails when a PodDisruptionBudget allows no disruption', async () => {
    const run = await gateWith({ pdbBlocked: ['postgres'] });
    const pdb = reply(run, 'PodDisruptionBudgets');
    expect(pdb.text).toMatch(/^❌/);
    expect(replyText(pdb)).toContain('apps/postgres');
  });

  it('reports a probe that hangs as a failed check with its timeout, not a crash', async () => {
    const run = await gateWith({ hang: ['etcd status'] });
    const etcd = reply(run, 'etcd status');
    expect(etcd.text).toMatch(/^❌.*timed out after 5s/);
    expect(reply(run, 'Kubernetes nodes').text).toMatch(/^✅/);
    expect(h.bot.running()).toBe(true);
  });

  it('reports a probe that errors as a failed check with its error', async () => {
    const run = await gateWith({ kubeFail: ['/apis/policy/v1'] });
    expect(reply(run, 'PodDisruptionBudgets').text).toMatch(/^❌/);
    expect(run.root.text).toContain('failed');
  });
});

describe('/talos health on the staging shape', () => {
  it('passes with its single control plane as the only etcd address', async () => {
    const since = h.sim.calls.length;
    const run = await health('health', CHANNELS.staging);
    expect(run.root.text).toContain('✅ Health gate passed: staging');
    const etcd = h.sim.calls.slice(since).find((c) => c.bin === 'talosctl' && c.argv.includes('status'));
    expect(etcd?.argv[etcd.argv.indexOf('--nodes') + 1]).toBe('10.0.20.204');
  });
});

describe('answers that change nothing', () => {
  async function refusal(text: string, channel: string = CHANNELS.production): Promise<string> {
    const posted = h.slack.channelMessages(channel).length;
    const jobsBefore = h.sim.calls.length;
    const ack = await h.command(text, { channel });
    await waitForSettled(h);
    expect(h.slack.channelMessages(channel).length).toBe(posted);
    expect(h.sim.calls.length).toBe(jobsBefore);
    return ack;
  }

  it('lists the commands for /talos help', async () => {
    const ack = await refusal('help');
    expect(ack).toContain('/talos health [cluster]');
    expect(ack).toContain('/talos upgrade talos <version> [cluster]');
  });

  it('refuses an unknown subcommand with the command list', async () => {
    expect(await refusal('reboot everything')).toMatch(/`\/talos reboot` is not a command[\s\S]*\/talos help/);
  });

  it('refuses an unknown cluster and names the known ones', async () => {
    expect(await refusal('health qa')).toContain('There is no cluster named `qa`. Known clusters: staging, production.');
  });

  it('refuses a command from a channel that belongs to no cluster', async () => {
    expect(await refusal('health production', CHANNELS.random)).toContain('This channel belongs to no cluster');
  });

  it('refuses shell metacharacters before anything else', async () => {
    expect(await refusal('health $(id)')).toContain('contains characters a `/talos` argument never has');
  });
});

describe('credentials', () => {
  it('never lets the canary from the talosconfig or kubeconfig reach Slack or the logs', async () => {
    await health();
    expect(h.sim.talosconfig('production')).toContain(h.sim.canary);
    expect(h.sim.kubeconfig('production')).toContain(h.sim.canary);
    // The job logs its end after its last reply is answered: wait for the line rather than race it.
    await h.slack.waitFor(() => h.bot.logs().includes('health gate finished') || undefined, {
      description: 'the health gate to log its end',
    });
    expect(h.slack.allTraffic()).not.toContain(h.sim.canary);
    expect(h.bot.logs()).not.toContain(h.sim.canary);
  });

  it('blanks a credential that a failing tool echoes back', async () => {
    const token = h.sim.cluster('production').credentials.token;
    const run = await gateWith({ fail: { 'etcd status': `Unauthorized: bearer token ${token} rejected` } });
    expect(reply(run, 'etcd status').text).toMatch(/^❌.*\[REDACTED\]/);
    expect(h.slack.allTraffic()).not.toContain(h.sim.canary);
    expect(h.bot.logs()).not.toContain(h.sim.canary);
  });

  it('removes the private credential directory after each job', async () => {
    await health();
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(h.env.CREDENTIALS_DIR!)).toEqual([]);
  });
});

describe('/talos health on a Talos 1.13 cluster whose CNI is Cilium (Talos installed none)', () => {
  let versions: Map<string, string>;

  beforeEach(() => {
    const nodes = h.sim.cluster('production').nodes;
    versions = new Map(nodes.map((n) => [n.address, n.talosVersion]));
    for (const node of nodes) node.talosVersion = 'v1.13.9';
  });

  afterEach(() => {
    for (const node of h.sim.cluster('production').nodes) node.talosVersion = versions.get(node.address) ?? node.talosVersion;
  });

  it('passes, saying which checks Talos skipped and that the gate judged them itself', async () => {
    const run = await health();

    expect(run.root.text).toContain('✅ Health gate passed: production');
    const talos = evidenceOf(run);
    expect(talos).toContain('skipped: all k8s nodes to report ready, kube-proxy to report ready, coredns to report ready');
    expect(talos).toContain('through Kubernetes: CoreDNS ready');
  });

  it('fails when CoreDNS is not ready, although talosctl health skipped CoreDNS and exited 0', async () => {
    const run = await gateWith({ podsNotReady: ['coredns'] });

    expect(run.root.text).toContain('❌ Health gate failed: production');
    expect(reply(run, 'talosctl health').text).toMatch(/^❌.*CoreDNS is not ready: CoreDNS ready on 0 of 2 pods/);
  });

  it('fails on a NotReady node through its own Kubernetes check, although Talos skipped node readiness', async () => {
    const run = await gateWith({ nodeNotReady: ['10.0.30.13'] });

    expect(reply(run, 'talosctl health').text).toMatch(/^✅/);
    expect(reply(run, 'Kubernetes nodes').text).toMatch(/^❌/);
    expect(run.root.text).toContain('❌ Health gate failed: production');
  });
});
