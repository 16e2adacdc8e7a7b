import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Message } from '../slack-emulator/index.ts';
import { CHANNELS, startHarness, USERS, type Harness } from '../support/harness.ts';
import { waitForSettled } from '../support/settled.ts';
import { opIdOf } from '../support/upgrade-flow.ts';

/** Every gate of the runbook's production list, in the order the thread lists them. */
const GATE_TITLES = [
  'Three control planes on three Proxmox hosts',
  'Scheduling allowed on control planes',
  'Kubernetes endpoint is a virtual IP',
  'talosctl knows every control-plane address',
  'Every node labelled with its Proxmox host',
  'Longhorn replicas kept apart by Proxmox host',
  'Longhorn data disk and user volume on every node',
  'Longhorn system extensions on every node',
  'longhorn-system enforces privileged Pod Security',
  'Flux reconciles the cluster path',
  'Production inventory, Flux instance and bootstrap inputs',
  'Recovery systems reachable without Kubernetes',
  'Every ADR 006 backup scheduled',
  'Staging rehearsals',
  "Staging has production's shape",
  'Talos-compatible monitoring and alerts',
];
/** Only production's report compares staging's shape with its own. */
const STAGING_GATE_TITLES = GATE_TITLES.filter((t) => t !== "Staging has production's shape");
const SIGN_OFF = 'talos-gate-sign-off';
const MANUAL = [
  'Production inventory, Flux instance and bootstrap inputs',
  'Recovery systems reachable without Kubernetes',
  'Every ADR 006 backup scheduled',
  'Staging rehearsals',
  'Talos-compatible monitoring and alerts',
];

let h: Harness;

beforeAll(async () => {
  h = await startHarness({
    inventory: {
      extra: {
        production: {
          kubernetesEndpoint: 'https://10.0.30.10:6443',
          fluxPath: './clusters/production',
          // Once a year: the bot's own etcd snapshot schedule exists, and fires in no test.
          schedules: { snapshot: { cron: '0 3 1 1 *', keepLast: 30 } },
        },
        // The checked-in staging inventory: its endpoint is the control plane's own address, and it declares no Flux path.
        staging: { kubernetesEndpoint: 'https://10.0.20.204:6443' },
      },
    },
  });
});

afterAll(async () => {
  await h?.stop();
});

beforeEach(() => {
  h.sim.faults.clear('production');
  h.sim.faults.clear('staging');
});

interface Report {
  ack: string;
  root: Message;
  replies: Message[];
}

/** `/talos gates` through Slack, then the finished root message and its thread. */
async function gates(text = 'gates', channel: string = CHANNELS.production, user: string = USERS.alice): Promise<Report> {
  const before = h.slack.channelMessages(channel).length;
  const ack = await h.command(text, { channel, user });
  const root = await h.slack.waitFor(
    () => {
      const latest = h.slack.channelMessages(channel).slice(before)[0];
      if (!latest || !/production-ready|could not be checked/.test(latest.text)) return undefined;
      const expected = channel === CHANNELS.production ? GATE_TITLES.length : STAGING_GATE_TITLES.length;
      return h.slack.thread(channel, latest.ts).length === expected ? latest : undefined;
    },
    { timeoutMs: 30_000, description: 'a finished readiness report' },
  );
  return { ack, root, replies: h.slack.thread(channel, root.ts) };
}

function gate(report: Report, title: string): Message {
  const found = report.replies.find((r) => r.text.includes(title));
  if (!found) throw new Error(`no reply for ${title}: ${report.replies.map((r) => r.text).join('\n')}`);
  return found;
}

/** What an operator sees of a reply: its blocks (evidence included) and its text. */
function shown(message: Message): string {
  return JSON.stringify(message.blocks ?? []) + message.text;
}

describe('/talos gates on production', () => {
  it('passes every gate the bot can see, and is not ready while the by-hand gates wait for a sign-off', async () => {
    const since = h.sim.calls.length;

    const report = await gates();

    expect(report.ack).toContain('Checking *production* against the runbook');
    expect(report.root.text).toBe(
      `❌ Production gates of production: not production-ready: Staging has production's shape; not signed off: ${MANUAL.join('; ')} (10 passed, 1 failed, 0 signed off, 5 to sign off)`,
    );
    // The simulated staging has one control plane: production's report says what to change there.
    const shape = gate(report, "Staging has production's shape");
    expect(shape.text).toMatch(/^❌ /);
    expect(shape.text).toContain('staging is not shaped like production');
    expect(shape.text).toContain('run 3 control planes on staging (it has 1)');
    expect(report.replies.map((r) => GATE_TITLES.findIndex((t) => r.text.includes(`${t}:`)))).toEqual(GATE_TITLES.map((_, i) => i));
    for (const title of STAGING_GATE_TITLES) {
      expect(gate(report, title).text.startsWith(MANUAL.includes(title) ? '✋' : '✅')).toBe(true);
    }
    expect(gate(report, 'Three control planes').text).toContain('3 control planes on 3 hosts (pve1, pve2, pve3)');
    expect(gate(report, 'Kubernetes endpoint').text).toContain(
      "10.0.30.10 is the virtual IP every control plane's machine configuration declares",
    );
    expect(shown(gate(report, 'talosctl knows'))).toContain('talosconfig endpoints: 10.0.30.11, 10.0.30.12, 10.0.30.13');
    expect(gate(report, 'Longhorn system extensions').text).toContain('siderolabs/iscsi-tools, siderolabs/util-linux-tools on all 3 nodes');
    expect(gate(report, 'Flux reconciles').text).toContain('2 Kustomizations reconcile from ./clusters/production');
    expect(gate(report, 'Longhorn replicas kept apart').text).toContain(
      'replica-soft-anti-affinity is false and every node is on a host of its own (pve1, pve2, pve3)',
    );
    expect(gate(report, 'Longhorn data disk').text).toContain("all 3 nodes keep Longhorn's data on a user volume of its own");
    expect(gate(report, 'Talos-compatible monitoring').text).toContain('the bot sees 2 alert rules and 1 ServiceMonitor');
    // Read-only: the session reads etcd's members (the estate), then every node is asked for its extensions and its volumes.
    // The staging session, opened for the shape check, reads staging's etcd members alongside.
    const calls = h.sim.calls.slice(since).filter((c) => c.bin === 'talosctl');
    const onStaging = (c: (typeof calls)[number]) => c.argv.join(',').includes('10.0.20.204');
    expect(calls.filter(onStaging).map((c) => c.argv.slice(0, 2))).toEqual([['etcd', 'members']]);
    const talosctl = calls.filter((c) => !onStaging(c));
    expect(talosctl.map((c) => c.argv.slice(0, 4))).toEqual([
      ['etcd', 'members', '--talosconfig', talosctl[0]!.argv[3]!],
      ['get', 'extensions', '-o', 'json'],
      ['get', 'volumestatus', '-o', 'json'],
      ['get', 'machineconfig', '-o', 'json'],
    ]);
    expect(talosctl[0]?.argv).toEqual(expect.arrayContaining(['--nodes', '10.0.30.11,10.0.30.12,10.0.30.13']));
  });

  it('fails the endpoint gate for an address no node has when no control plane declares it as its virtual IP', async () => {
    const cluster = h.sim.cluster('production');
    const vip = cluster.vip;
    delete cluster.vip;
    try {
      const report = await gates();

      const endpoint = gate(report, 'Kubernetes endpoint');
      expect(endpoint.text).toMatch(/^❌ /);
      expect(endpoint.text).toContain('10.0.30.10 is no Talos virtual IP (no control plane declares a virtual IP)');
      expect(endpoint.text).toContain("set machine.network.interfaces[].vip.ip to it in every control plane's machine configuration");
      expect(shown(endpoint)).toContain('10.0.30.11  machine.network.interfaces[].vip.ip: &lt;none&gt;');
      expect(report.root.text).toContain('not production-ready: Kubernetes endpoint is a virtual IP');
    } finally {
      cluster.vip = vip;
    }
  });

  it('fails the monitoring gate when the API serves no prometheus-operator objects, saying what to install', async () => {
    const cluster = h.sim.cluster('production');
    const monitoring = cluster.kube.monitoring;
    delete cluster.kube.monitoring;
    try {
      const report = await gates();

      const shownGate = gate(report, 'Talos-compatible monitoring');
      expect(shownGate.text).toMatch(/^❌ /);
      expect(shownGate.text).toContain('the API serves no prometheusrules.monitoring.coreos.com or servicemonitors.monitoring.coreos.com');
      expect(report.root.text).toContain("not production-ready: Staging has production's shape; Talos-compatible monitoring and alerts");
    } finally {
      cluster.kube.monitoring = monitoring;
    }
  });

  it('is open to channel members who are not operators', async () => {
    const report = await gates('gates', CHANNELS.production, USERS.eve);
    expect(report.root.text).toContain('production-ready');
    expect(JSON.stringify(report.root.blocks)).toContain(`<@${USERS.eve}>`);
  });

  it('posts nothing from the talosconfig but its endpoints, and removes the credentials', async () => {
    await gates();
    const talosconfig = h.sim.talosconfig('production');
    // The end of the base64 CA is unique to this cluster (its start is the PEM header every CA shares).
    const ca = /\bca: (\S+)/.exec(talosconfig)?.[1]?.slice(-48);
    expect(ca).toHaveLength(48);
    expect(h.slack.allTraffic()).not.toContain(ca);
    expect(h.bot.logs()).not.toContain(ca);
    expect(h.slack.allTraffic()).not.toContain(h.sim.canary);
    expect(h.bot.logs()).not.toContain(h.sim.canary);
    expect(h.bot.logs()).toContain('readiness gates finished');
    const { readdir } = await import('node:fs/promises');
    expect(await readdir(h.env.CREDENTIALS_DIR!)).toEqual([]);
  });

  it('fails the gates whose probe could not be read instead of passing them', async () => {
    h.sim.faults.set('production', { kubeFail: ['/api/v1/nodes'] });

    const report = await gates();

    expect(report.root.text).toContain(
      'not production-ready: Three control planes on three Proxmox hosts; Scheduling allowed on control planes',
    );
    expect(gate(report, 'Three control planes').text).toMatch(/^❌ .*could not read the Kubernetes nodes/);
    expect(gate(report, 'Every node labelled').text).toMatch(/^❌/);
    // Gates that do not need the node list still report.
    expect(gate(report, 'longhorn-system enforces').text).toMatch(/^✅/);
    expect(h.bot.running()).toBe(true);
  });

  it('fails the extensions gate when talosctl cannot list them, and bounds a hanging call', async () => {
    h.sim.faults.set('production', { fail: { 'get extensions': 'rpc error: code = PermissionDenied desc = not authorized' } });
    const refused = await gates();
    expect(gate(refused, 'Longhorn system extensions').text).toMatch(/^❌ .*could not read the system extensions: .*PermissionDenied/);
    expect(refused.root.text).toContain('not production-ready: Longhorn system extensions on every node');

    h.sim.faults.set('production', { fail: undefined, hang: ['get'] });
    const hung = await gates();
    expect(gate(hung, 'Longhorn system extensions').text).toContain('could not read the system extensions: timed out after 5s');
    expect(gate(hung, 'Three control planes').text).toMatch(/^✅/);
  });

  it('names only the node that is down when it is the first one asked, after asking each node alone', async () => {
    // talosctl ≤ 1.13 prints nothing at all for a multi-node read whose first node is down.
    h.sim.faults.set('production', { nodeUnreachable: ['10.0.30.11'] });
    const since = h.sim.calls.length;

    const report = await gates();
    h.sim.faults.clear('production', 'nodeUnreachable');

    const text = gate(report, 'Longhorn system extensions').text;
    expect(text).toMatch(/^❌ /);
    expect(text).toContain('10.0.30.11 did not answer');
    expect(text).not.toContain('10.0.30.12 did not answer');
    expect(text).not.toContain('10.0.30.13 did not answer');
    expect(text).not.toContain('could not read the system extensions');
    const asked = h.sim.calls
      .slice(since)
      .filter((c) => c.bin === 'talosctl' && c.argv[0] === 'get')
      .map((c) => c.argv[c.argv.indexOf('--nodes') + 1]);
    expect(asked).toEqual(expect.arrayContaining(['10.0.30.11,10.0.30.12,10.0.30.13', '10.0.30.11', '10.0.30.12', '10.0.30.13']));
  });
});

describe('what the estate shows of Longhorn', () => {
  it('fails the placement gate when Longhorn may put two replicas of a volume on one node, with the setting to change', async () => {
    const settings = h.sim.cluster('production').kube.longhornSettings;
    settings['replica-soft-anti-affinity'] = 'true';
    try {
      const report = await gates();

      const placement = gate(report, 'Longhorn replicas kept apart');
      expect(placement.text).toMatch(/^❌ /);
      expect(placement.text).toContain('replica-soft-anti-affinity is true: Longhorn may put two replicas of a volume on one node');
      expect(placement.text).toContain('patch settings.longhorn.io replica-soft-anti-affinity --type merge -p \'{"value":"false"}\'');
      expect(shown(placement)).toContain('replica-zone-soft-anti-affinity: true');
      expect(report.root.text).toContain('not production-ready: Longhorn replicas kept apart by Proxmox host');
    } finally {
      delete settings['replica-soft-anti-affinity'];
    }
  });

  it('fails the placement gate for a replicated workload not spread over the host label, naming it and its peers', async () => {
    const kube = h.sim.cluster('production').kube;
    kube.unspreadWorkloads = ['apps/podinfo'];
    try {
      const report = await gates();

      const placement = gate(report, 'Longhorn replicas kept apart');
      expect(placement.text).toMatch(/^❌ /);
      expect(placement.text).toContain('Deployment apps/podinfo can put every replica on one host');
      expect(shown(placement)).toContain('StatefulSet apps/postgres (3 replicas): topologySpreadConstraints example.org/proxmox-host');
      expect(shown(placement)).toContain('warning: Deployment kube-system/coredns (2 replicas): no spread');
    } finally {
      delete kube.unspreadWorkloads;
    }
  });

  it('fails the storage gate for a node whose Longhorn disk is a directory user volume on EPHEMERAL, as talosctl shows it', async () => {
    const shape = h.sim.cluster('production').shape.nodes.find((n) => n.hostname === 'talos-prd-cp-2');
    expect(shape).toBeDefined();
    shape!.longhornVolumeType = 'directory';
    try {
      const report = await gates();

      const storage = gate(report, 'Longhorn data disk');
      expect(storage.text).toMatch(/^❌ /);
      expect(storage.text).toContain('talos-prd-cp-2: disk default-disk-');
      expect(storage.text).toContain('at /var/mnt/longhorn, user volume u-longhorn is a directory on EPHEMERAL');
      expect(storage.text).not.toContain('talos-prd-cp-1:');
      expect(shown(storage)).toContain('user volumes: u-longhorn (directory)');
      expect(report.root.text).toContain('not production-ready: Longhorn data disk and user volume on every node');
    } finally {
      delete shape!.longhornVolumeType;
    }
  });
});

describe('the backups Kubernetes shows', () => {
  it("shows the schedules it sees and fails once Longhorn's only backup job is gone", async () => {
    const seen = gate(await gates(), 'Every ADR 006 backup scheduled');
    expect(seen.text).toMatch(/^✋ .*confirm by hand the rest of the ADR 006 backup table/);
    expect(shown(seen)).toContain('etcd snapshots by the bot: 0 3 1 1 * (UTC), keep last 30');
    expect(shown(seen)).toContain('Longhorn recurring job backup-nightly: task backup, 0 2 * * *, retain 14, groups default');

    const kube = h.sim.cluster('production').kube;
    const jobs = kube.recurringJobs;
    kube.recurringJobs = [{ name: 'snapshot-hourly', task: 'snapshot', cron: '0 * * * *', retain: 24, groups: ['default'] }];
    try {
      const report = await gates();
      const failed = gate(report, 'Every ADR 006 backup scheduled');
      expect(failed.text).toMatch(/^❌ /);
      expect(failed.text).toContain('Longhorn has no recurring backup job (snapshot-hourly only snapshots on the same disks)');
      expect(failed.text).toContain('create a RecurringJob (recurringjobs.longhorn.io) with task: backup in the default group');
      expect(report.root.text).toContain('not production-ready: Every ADR 006 backup scheduled');
    } finally {
      kube.recurringJobs = jobs;
    }
  });
});

describe('/talos gates on the staging shape', () => {
  it('is not production-ready and says why', async () => {
    const report = await gates('gates', CHANNELS.staging);

    expect(report.root.text).toBe(
      '❌ Production gates of staging: not production-ready: Three control planes on three Proxmox hosts; Scheduling allowed on control planes; ' +
        'Kubernetes endpoint is a virtual IP; Longhorn replicas kept apart by Proxmox host; Longhorn data disk and user volume on every node; ' +
        'longhorn-system enforces privileged Pod Security; Every ADR 006 backup scheduled; ' +
        `not signed off: ${['Flux reconciles the cluster path', 'Production inventory, Flux instance and bootstrap inputs', 'Recovery systems reachable without Kubernetes', 'Staging rehearsals', 'Talos-compatible monitoring and alerts'].join('; ')} ` +
        '(3 passed, 7 failed, 0 signed off, 5 to sign off)',
    );
    expect(gate(report, 'Three control planes').text).toMatch(
      /^❌ .*1 control plane on 1 host \(pve5\): Kubernetes lists 1 control plane, 3 are needed/,
    );
    expect(gate(report, 'Scheduling allowed').text).toContain('talos-stg-cp-1 is tainted node-role.kubernetes.io/control-plane:NoSchedule');
    expect(gate(report, 'Kubernetes endpoint').text).toContain(
      'https://10.0.20.204:6443 is the address of node talos-stg-cp-1 (10.0.20.204)',
    );
    // Staging runs production's default schematic, so its nodes carry Longhorn's extensions as production's do.
    expect(gate(report, 'Longhorn system extensions').text).toMatch(/^✅/);
    expect(gate(report, 'longhorn-system enforces').text).toContain('there is no longhorn-system namespace');
    // No fluxPath in the staging inventory: the paths seen are listed for a person to judge.
    const flux = gate(report, 'Flux reconciles');
    expect(flux.text).toMatch(/^✋ .*no fluxPath.*\.\/clusters\/staging, \.\/clusters\/staging\/apps/);
    expect(gate(report, 'Every node labelled').text).toMatch(/^✅/);
    expect(gate(report, 'talosctl knows').text).toMatch(/^✅/);
    expect(JSON.stringify(report.root.blocks)).toContain('Not production-ready:');
  });
});

describe('staging rehearsals from the bot records', () => {
  it('ticks off an etcd snapshot once one completed on staging', async () => {
    const before = gate(await gates(), 'Staging rehearsals');
    expect(shown(before)).toContain('☐ etcd restore: check by hand (no completed etcd snapshot on staging');
    expect(shown(before)).toContain('☐ Talos upgrade: no completed talos-upgrade on staging');

    const snapshotAck = await h.command('snapshot', { channel: CHANNELS.staging, user: USERS.alice });
    const opId = opIdOf(snapshotAck);
    await h.slack.waitFor(() => h.slack.channelMessages(CHANNELS.staging).find((m) => m.text.includes(opId) && m.text.startsWith('✅')), {
      timeoutMs: 30_000,
      description: 'the staging snapshot',
    });

    const after = gate(await gates(), 'Staging rehearsals');
    expect(after.text).toMatch(/^✋/);
    expect(shown(after)).toMatch(
      new RegExp(
        `◐ etcd restore: etcd snapshot ${opId} completed \\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2} UTC; the restore itself: check by hand`,
      ),
    );
    // A snapshot is not an upgrade rehearsal.
    expect(shown(after)).toContain('☐ Talos upgrade: no completed talos-upgrade on staging');
    expect(shown(after)).toContain('staging has one control plane: expand it to three first');
  });
});

/** The [Sign off] of a gate's reply, clicked by `user`. */
async function clickSignOff(report: Report, title: string, user: string, channel: string = CHANNELS.production): Promise<void> {
  await h.slack.clickButton({ user, channel, messageTs: gate(report, title).ts, actionId: SIGN_OFF });
}

async function ephemeral(user: string, pattern: RegExp, channel: string = CHANNELS.production): Promise<string> {
  const found = await h.slack.waitFor(() => h.slack.ephemerals(channel, user).find((e) => pattern.test(e.text)), {
    description: `an answer to ${user} matching ${pattern}`,
  });
  return found.text;
}

/** The sign-offs kept for a cluster, as Redis holds them. */
async function signOffsKept(cluster: string): Promise<Record<string, { by: string; evidence: string; shape: unknown }>> {
  const redis = new Redis(h.redis.url, { maxRetriesPerRequest: null });
  try {
    const fields = await redis.hgetall(`talos:signoffs:${cluster}`);
    return Object.fromEntries(Object.entries(fields).map(([gate, raw]) => [gate, JSON.parse(raw) as never]));
  } finally {
    redis.disconnect();
  }
}

describe('signing off the gates only a person can judge', () => {
  it('reads not ready until an approver signs off every by-hand gate, and keeps who, when and the evidence', async () => {
    const first = await gates();
    expect(first.root.text).toContain("not production-ready: Staging has production's shape; not signed off:");
    expect(first.root.text).toContain('Recovery systems reachable without Kubernetes');
    // Only the by-hand gates carry the button.
    expect(JSON.stringify(gate(first, 'Three control planes').blocks)).not.toContain(SIGN_OFF);
    expect(JSON.stringify(gate(first, 'Recovery systems').blocks)).toContain(SIGN_OFF);

    // An operator who is no approver is refused, and nothing is kept.
    await clickSignOff(first, 'Recovery systems', USERS.alice);
    expect(await ephemeral(USERS.alice, /Only approvers of \*production\*/)).toContain('Nothing changed.');
    expect(h.slack.modals(USERS.alice)).toEqual([]);
    expect(await signOffsKept('production')).toEqual({});

    // The approver signs off one gate, with a note as evidence.
    await clickSignOff(first, 'Recovery systems', USERS.carol);
    const modal = await h.slack.waitFor(() => h.slack.modals(USERS.carol).find((m) => m.open), { description: 'the sign-off modal' });
    const empty = await h.slack.submitView(USERS.carol, modal.viewId, { evidence: '   ' });
    expect(empty.errors).toEqual({ evidence: 'Paste a link or write a note that shows the gate holds.' });
    await h.slack.submitView(USERS.carol, modal.viewId, { evidence: 'https://wiki.example.org/dr-drill-2026-11' });
    expect(await ephemeral(USERS.carol, /You signed off `out-of-cluster-dependencies` on \*production\*/)).toContain('until the cluster');
    const kept = await signOffsKept('production');
    expect(Object.keys(kept)).toEqual(['out-of-cluster-dependencies']);
    expect(kept['out-of-cluster-dependencies']).toMatchObject({
      by: USERS.carol,
      evidence: 'https://wiki.example.org/dr-drill-2026-11',
      shape: { controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'], workers: [] },
    });

    // The same button again: already signed off, nothing changed.
    await clickSignOff(first, 'Recovery systems', USERS.carol);
    expect(await ephemeral(USERS.carol, /already signed off `out-of-cluster-dependencies`/)).toContain('Nothing changed.');

    const second = await gates();
    expect(second.root.text).toContain("not production-ready: Staging has production's shape; not signed off:");
    expect(second.root.text).not.toContain('Recovery systems reachable without Kubernetes;');
    const recovery = gate(second, 'Recovery systems');
    expect(recovery.text).toMatch(
      /^🖊️ Recovery systems reachable without Kubernetes: signed off — .*\(signed off by U0CAROL .*evidence: https:\/\/wiki\.example\.org\/dr-drill-2026-11\)$/,
    );
    expect(JSON.stringify(recovery.blocks)).not.toContain(SIGN_OFF);

    // A button of the older report is stale once a newer report exists.
    await clickSignOff(first, 'Every ADR 006 backup', USERS.carol);
    expect(await ephemeral(USERS.carol, /from an older `\/talos gates` report of \*production\*/)).toContain('Nothing changed.');

    // Every other by-hand gate signed off from the newest report: production-ready.
    for (const title of MANUAL.filter((t) => t !== 'Recovery systems reachable without Kubernetes')) {
      const before = h.slack.modals(USERS.carol).length;
      await clickSignOff(second, title, USERS.carol);
      const opened = await h.slack.waitFor(() => h.slack.modals(USERS.carol)[before], { description: `the sign-off modal of ${title}` });
      await h.slack.submitView(USERS.carol, opened.viewId, { evidence: `checked ${title}` });
    }
    await h.slack.waitFor(
      () =>
        h.slack.ephemerals(CHANNELS.production, USERS.carol).filter((e) => e.text.startsWith('🖊️ You signed off')).length === MANUAL.length
          ? true
          : undefined,
      { description: 'every by-hand gate signed off' },
    );
    expect(Object.keys(await signOffsKept('production')).sort()).toEqual([
      'backups-scheduled',
      'flux-bootstrap',
      'monitoring',
      'out-of-cluster-dependencies',
      'staging-rehearsals',
    ]);
    const third = await gates();
    expect(third.root.text).toBe(
      "❌ Production gates of production: not production-ready: Staging has production's shape (10 passed, 1 failed, 5 signed off, 0 to sign off)",
    );
  });
});

describe('answers that run nothing', () => {
  it('refuses a channel that belongs to no cluster', async () => {
    const posted = h.slack.channelMessages(CHANNELS.random).length;
    const calls = h.sim.calls.length;

    const ack = await h.command('gates production', { channel: CHANNELS.random });
    await waitForSettled(h);

    expect(ack).toContain('This channel belongs to no cluster');
    expect(h.slack.channelMessages(CHANNELS.random).length).toBe(posted);
    expect(h.sim.calls.length).toBe(calls);
  });
});
