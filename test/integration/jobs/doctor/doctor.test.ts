import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WebClient } from '@slack/web-api';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { runDoctor, type DoctorDeps } from '../../../../jobs/doctor/doctor.ts';
import { postDoctorAtStart } from '../../../../src/bootstrap/doctor.ts';
import type { DoctorFinding } from '../../../../src/chat/doctor-report.ts';
import type { ClusterAccess, ClusterSession } from '../../../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../../../src/cluster/tofu.ts';
import { parseInventory } from '../../../../src/config/inventory.ts';
import { createLogger } from '../../../../src/log/logger.ts';
import { SecretScrubber } from '../../../../src/log/secret-scrubber.ts';
import type { ChatPort } from '../../../../src/port/chat-port.ts';
import { REQUIRED_BOT_SCOPES } from '../../../../src/slack/required-scopes.ts';
import { createSlackSelf } from '../../../../src/slack/slack-self.ts';
import { createTalosctlBinaries } from '../../../../src/talos/talosctl-binary.ts';
import { createTalosctlDownloader } from '../../../../src/talos/talosctl-download.ts';
import { useRedisFixture } from '../../../support/redis-fixture.ts';
import { startRedisServer, type RedisServer } from '../../../support/redis-server.ts';
import { startSlackEmulator, type SlackEmulator } from '../../../slack-emulator/index.ts';

// The doctor against the real parts: the Slack emulator (auth.test's x-oauth-scopes,
// conversations.members), a real redis-server, real directories. tofu and the clusters' API are
// the edge, faked here as the bot sees them.

const PRD = 'C0MAINTPRD';
const STG = 'G0MAINTSTG';
const CANARY_TALOSCONFIG = 'context: prod\nkey: talosKeyCanary0123456789abcdefXYZ\n';
const CANARY_KUBECONFIG = 'users:\n- user:\n    token: kubeTokenCanary0123456789abcdefXYZ\n';
const CANARIES = ['talosKeyCanary0123456789abcdefXYZ', 'kubeTokenCanary0123456789abcdefXYZ'];

const redis = useRedisFixture();
let work: string;
let emu: SlackEmulator | undefined;

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'doctor-'));
  await mkdir(join(work, 'snap-prd'));
  await writeFile(join(work, 'not-a-dir'), '');
  await mkdir(join(work, 'bin'));
  await writeFile(join(work, 'bin', 'talosctl-v1.13.9'), '', { mode: 0o755 });
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

function inventory(prdWindows = "[{ start: '0 22 * * 2', durationMinutes: 120, timeZone: Europe/Berlin }]") {
  const cluster = (name: string, fields: Record<string, string>): string =>
    `  ${name}:\n` +
    Object.entries({
      controlPlanes: '[10.0.30.11]',
      installerPlatform: 'nocloud',
      hostLabel: 'example.org/proxmox-host',
      operators: '[U0ALICE]',
      approvers: '[U0CAROL]',
      ...fields,
    })
      .map(([k, v]) => `    ${k}: ${v}`)
      .join('\n') +
    '\n';
  return parseInventory(
    'clusters:\n' +
      cluster('production', {
        environment: 'production',
        channel: PRD,
        terraformDir: '/srv/tf/production',
        snapshotDir: join(work, 'snap-prd'),
        maintenanceWindows: prdWindows,
      }) +
      cluster('staging', {
        environment: 'staging',
        channel: STG,
        terraformDir: '/srv/tf/staging',
        controlPlanes: '[10.0.20.11]',
        snapshotDir: join(work, 'not-a-dir'),
      }),
    'clusters.yaml',
  );
}

/** tofu as the bot runs it (`output -json`), per Terraform directory; `hang` never answers until aborted. */
function fakeTofu(byDir: Record<string, Record<string, { sensitive: boolean; value: unknown }> | 'hang'>): Tofu {
  return {
    outputRaw: () => Promise.reject(new Error('outputs are read with output -json')),
    run(dir, _args, options) {
      const outputs = byDir[dir];
      if (outputs === 'hang') {
        return new Promise((_resolve, reject) => options?.signal?.addEventListener('abort', () => reject(new Error('tofu was stopped'))));
      }
      return Promise.resolve({ command: ['tofu'], stdout: JSON.stringify(outputs ?? {}), stderr: '', exitCode: 0, durationMs: 1 });
    },
  };
}

/** The clusters' Kubernetes API, as the session's `kube.listNodes` answers: each node's osImage. */
function fakeAccess(versions: Record<string, string[]>): ClusterAccess {
  return {
    withSession: (cluster, _signal, run) =>
      run({
        cluster,
        kube: {
          listNodes: () => Promise.resolve(versions[cluster.name]!.map((v) => ({ status: { nodeInfo: { osImage: `Talos (${v})` } } }))),
        },
      } as unknown as ClusterSession),
  };
}

const GOOD_OUTPUTS = {
  talosconfig: { sensitive: true, value: CANARY_TALOSCONFIG },
  talos_kubeconfig: { sensitive: true, value: CANARY_KUBECONFIG },
  talos_image_factory_schematic_id: { sensitive: false, value: 'a'.repeat(64) },
};

async function deps(overrides: Partial<DoctorDeps> & { scopes?: string[] } = {}): Promise<DoctorDeps> {
  emu = await startSlackEmulator({
    channels: [
      { id: PRD, name: 'maint-production', members: ['U0ALICE'] },
      { id: STG, name: 'maint-staging', botMember: false, members: ['U0ALICE'] },
    ],
    ...(overrides.scopes === undefined ? {} : { scopes: overrides.scopes }),
  });
  const client = new WebClient(emu.botToken, { slackApiUrl: emu.apiUrl, retryConfig: { retries: 0 } });
  return {
    inventory: inventory(),
    slack: createSlackSelf(client),
    requiredScopes: REQUIRED_BOT_SCOPES,
    tofu: fakeTofu({ '/srv/tf/production': GOOD_OUTPUTS, '/srv/tf/staging': { talosconfig: GOOD_OUTPUTS.talosconfig } }),
    scrubber: new SecretScrubber(),
    access: fakeAccess({ production: ['v1.13.9', 'v1.13.9'], staging: ['v1.12.5'] }),
    binaries: createTalosctlBinaries(join(work, 'bin')),
    redis: { url: redis.server.url, client: redis.client() },
    // A Monday noon in Berlin: the next window opens Tuesday 22:00 Berlin.
    now: () => new Date('2026-12-07T11:00:00Z'),
    checkTimeoutMs: 5000,
    // Started without the downward API: the doctor warns once that it cannot tell where it runs.
    placement: { nodeName: undefined, hostIp: undefined, podIp: undefined },
    ...overrides,
  };
}

function find(findings: DoctorFinding[], check: string, cluster?: string): DoctorFinding {
  const found = findings.find((f) => f.check === check && f.cluster === cluster);
  if (found === undefined) throw new Error(`no finding ${check} ${cluster ?? ''}: ${JSON.stringify(findings)}`);
  return found;
}

describe('runDoctor', () => {
  it('reports every check, the good and the bad, each with its fix', async () => {
    // Act
    const findings = await runDoctor(await deps());

    // Assert: what is right.
    expect(find(findings, 'Slack scopes').status).toBe('ok');
    expect(find(findings, 'Channel membership', 'production').status).toBe('ok');
    expect(find(findings, 'Terraform outputs', 'production').status).toBe('ok');
    expect(find(findings, 'talosctl', 'production')).toMatchObject({ status: 'ok' });
    expect(find(findings, 'Redis authentication').status).toBe('ok');
    expect(find(findings, 'Redis persistence').status).toBe('ok');
    expect(find(findings, 'Redis eviction').status).toBe('ok');
    expect(find(findings, 'Snapshot directory', 'production').status).toBe('ok');
    // The next window, as a Slack date token each reader sees in their own zone: Tuesday 22:00 Berlin is 21:00 UTC.
    const window = find(findings, 'Maintenance windows', 'production');
    expect(window.status).toBe('ok');
    expect(window.found).toContain(`<!date^${Date.parse('2026-12-08T21:00:00Z') / 1000}^`);

    // Assert: what is wrong, each with a fix.
    const membership = find(findings, 'Channel membership', 'staging');
    expect(membership.status).toBe('fail');
    // The bot's name as Slack answers auth.test: the app manifest's bot user.
    const manifest = parseYaml(readFileSync(new URL('../../../../manifests/slack-app.yaml', import.meta.url), 'utf8')) as {
      features: { bot_user: { display_name: string } };
    };
    expect(membership.fix).toContain(`/invite @${manifest.features.bot_user.display_name}\``);
    const outputs = find(findings, 'Terraform outputs', 'staging');
    expect(outputs.status).toBe('fail');
    expect(outputs.found).toContain('"talos_kubeconfig" (kubeconfig)');
    expect(outputs.found).toContain('"talos_image_factory_schematic_id" (schematicId)');
    const talosctl = find(findings, 'talosctl', 'staging');
    expect(talosctl.status).toBe('fail');
    expect(talosctl.fix).toContain('talosctl-v1.12.5');
    expect(find(findings, 'Snapshot directory', 'staging').status).toBe('fail');
    expect(findings.filter((f) => f.status !== 'ok').every((f) => f.fix !== undefined)).toBe(true);
  });

  it('says which version rule is off when Terraform declares no version the bot can read, and why', async () => {
    // Arrange: production declares its Talos version; staging names a Kubernetes output that does not exist.
    const production = { ...GOOD_OUTPUTS, talos_version: { sensitive: false, value: 'v1.13.9' } };
    const d = await deps({ tofu: fakeTofu({ '/srv/tf/production': production, '/srv/tf/staging': GOOD_OUTPUTS }) });
    d.inventory.clusters.find((c) => c.name === 'staging')!.declaredVersions = { kubernetes: 'k8s_version' };

    // Act
    const findings = (await runDoctor(d)).filter((f) => f.check === 'Declared versions');

    // Assert
    expect(findings.filter((f) => f.cluster === 'production').map((f) => [f.status, f.found])).toEqual([
      ['ok', expect.stringContaining('Terraform declares Talos v1.13.9 (output talos_version)')],
      [
        'warn',
        expect.stringContaining(
          'the rule "apply only after every node runs the declared Kubernetes version" is off, and Kubernetes drift is not reported: Terraform has no output talos_kubernetes_version',
        ),
      ],
    ]);
    const staging = findings.filter((f) => f.cluster === 'staging');
    expect(staging.map((f) => f.status)).toEqual(['warn', 'warn']);
    expect(staging[1]!.found).toContain('Terraform has no output k8s_version');
    expect(staging[1]!.fix).toContain('declaredVersions.kubernetes');
  });

  it('names each scope the token lacks, from auth.test', async () => {
    // Arrange: installed without usergroups:read.
    const scopes = Object.keys(REQUIRED_BOT_SCOPES).filter((s) => s !== 'usergroups:read');

    // Act
    const findings = await runDoctor(await deps({ scopes }));

    // Assert
    const finding = find(findings, 'Slack scopes');
    expect(finding.status).toBe('fail');
    expect(finding.found).toContain('`usergroups:read`');
    expect(finding.found).not.toContain('`chat:write`');
    expect(emu!.callsTo('auth.test')).toHaveLength(1);
  });

  it('fails the eviction check of a Redis that evicts, and the authentication check of one without a password', async () => {
    // Arrange
    const admin = redis.client();
    await admin.config('SET', 'maxmemory-policy', 'allkeys-lru');
    const dir = await mkdtemp(join(tmpdir(), 'doctor-open-redis-'));
    let open: RedisServer | undefined;
    try {
      open = await startRedisServer(dir, { password: false });

      // Act
      const evicting = await runDoctor(await deps());
      await emu?.close();
      const anonymous = await runDoctor(await deps({ redis: { url: open.url, client: redis.client() } }));

      // Assert
      expect(find(evicting, 'Redis eviction')).toMatchObject({ status: 'fail', fix: 'run Redis with maxmemory-policy noeviction' });
      expect(find(anonymous, 'Redis authentication').status).toBe('fail');
    } finally {
      await admin.config('SET', 'maxmemory-policy', 'noeviction');
      await open?.stop();
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('reports a check that hangs past its bound, and every other check still reports', async () => {
    // Arrange: production's tofu never answers.
    const d = await deps({ checkTimeoutMs: 1000 });
    d.tofu = fakeTofu({ '/srv/tf/production': 'hang', '/srv/tf/staging': GOOD_OUTPUTS });

    // Act
    const findings = await runDoctor(d);

    // Assert
    expect(find(findings, 'Terraform outputs', 'production')).toMatchObject({ status: 'fail' });
    expect(find(findings, 'Terraform outputs', 'production').found).toContain('no answer within');
    expect(find(findings, 'Terraform outputs', 'staging').status).toBe('ok');
    expect(find(findings, 'Redis eviction').status).toBe('ok');
    expect(find(findings, 'Slack scopes').status).toBe('ok');
  });

  it('with downloads on, counts on the cache or the next plan, and downloads nothing itself', async () => {
    // Arrange: the cache holds v1.12.5's client; the release server is unreachable, so a download would fail the check.
    const cacheDir = join(work, 'cache');
    await mkdir(cacheDir, { recursive: true, mode: 0o700 });
    await writeFile(join(cacheDir, 'talosctl-v1.12.5'), '', { mode: 0o700 });
    // The sum of the empty file, as a download records it beside the binary.
    await writeFile(join(cacheDir, 'talosctl-v1.12.5.sha256'), `${createHash('sha256').digest('hex')}  talosctl-v1.12.5\n`);
    const downloader = createTalosctlDownloader({ baseUrl: 'https://127.0.0.1:9', cacheDir, timeoutMs: 1000, maxBytes: 1 << 20 });
    const d = await deps({ downloader, access: fakeAccess({ production: ['v1.14.0'], staging: ['v1.12.5'] }) });

    // Act
    const findings = await runDoctor(d);

    // Assert
    expect(find(findings, 'talosctl', 'staging')).toMatchObject({ status: 'ok' });
    expect(find(findings, 'talosctl', 'staging').found).toContain('download cache');
    expect(find(findings, 'talosctl', 'production')).toMatchObject({ status: 'ok' });
    expect(find(findings, 'talosctl', 'production').found).toContain('the next plan downloads it');
    expect((await readdir(cacheDir)).sort()).toEqual(['talosctl-v1.12.5', 'talosctl-v1.12.5.sha256']);
  });

  it('fails the talosctl check for a cached binary that changed after its download, and deletes it', async () => {
    // Arrange: the cache holds v1.12.5's client, but not the bytes its recorded sum is of.
    const cacheDir = join(work, 'cache');
    await mkdir(cacheDir, { recursive: true, mode: 0o700 });
    await writeFile(join(cacheDir, 'talosctl-v1.12.5'), '#!/bin/sh\necho changed\n', { mode: 0o700 });
    await writeFile(join(cacheDir, 'talosctl-v1.12.5.sha256'), `${createHash('sha256').digest('hex')}  talosctl-v1.12.5\n`);
    const downloader = createTalosctlDownloader({ baseUrl: 'https://127.0.0.1:9', cacheDir, timeoutMs: 1000, maxBytes: 1 << 20 });
    const d = await deps({ downloader, access: fakeAccess({ production: ['v1.14.0'], staging: ['v1.12.5'] }) });

    // Act
    const findings = await runDoctor(d);

    // Assert
    expect(find(findings, 'talosctl', 'staging')).toMatchObject({ status: 'fail' });
    expect(find(findings, 'talosctl', 'staging').found).toContain('changed on disk after its download');
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('fails when no window is declared for production, and warns of `always`', async () => {
    const d = await deps();
    d.inventory = inventory('[]');
    const none = find(await runDoctor(d), 'Maintenance windows', 'production');
    d.inventory = inventory('always');
    const always = find(await runDoctor(d), 'Maintenance windows', 'production');
    expect(none.status).toBe('fail');
    expect(none.found).toBe('none declared, so production refuses every mutating operation');
    expect(always.status).toBe('warn');
    expect(always.found).toContain('production changes are taken at any time');
  });
});

/** The clusters' Nodes as the Kubernetes API lists them: each name with its InternalIP and Hostname entries. */
function nodesAccess(nodes: Record<string, { name: string; address: string }[] | Error>): ClusterAccess {
  return {
    withSession: (cluster, _signal, run) =>
      run({
        cluster,
        kube: {
          listNodes: () => {
            const listed = nodes[cluster.name]!;
            if (listed instanceof Error) return Promise.reject(listed);
            return Promise.resolve(
              listed.map((n) => ({
                metadata: { name: n.name },
                status: {
                  addresses: [
                    { type: 'InternalIP', address: n.address },
                    { type: 'Hostname', address: n.name },
                  ],
                },
              })),
            );
          },
        },
      } as unknown as ClusterSession),
  };
}

describe('where the bot runs', () => {
  const NODES = {
    production: [
      { name: 'talos-prd-cp-1', address: '10.0.30.11' },
      { name: 'talos-prd-w-1', address: '10.0.30.21' },
    ],
    staging: [{ name: 'talos-stg-cp-1', address: '10.0.20.11' }],
  };

  it('fails for the cluster whose Node the bot runs on, naming the node and what it refuses, and passes the others', async () => {
    // Arrange: the pod runs on production's worker, as the downward API says.
    const d = await deps({
      access: nodesAccess(NODES),
      placement: { nodeName: 'talos-prd-w-1', hostIp: '10.0.30.21', podIp: '10.244.1.7' },
    });

    // Act
    const findings = await runDoctor(d);

    // Assert
    const production = find(findings, 'Where the bot runs', 'production');
    expect(production.status).toBe('fail');
    expect(production.found).toMatch(/^the bot runs on talos-prd-w-1, a node of production \(BOT_NODE_NAME talos-prd-w-1\): /);
    expect(production.found).toContain('would stay on the cluster they are meant to rescue');
    expect(production.fix).toContain('run the bot outside production');
    expect(production.fix).toContain('another snapshotDir is not enough');
    expect(find(findings, 'Where the bot runs', 'staging')).toMatchObject({
      status: 'ok',
      found:
        'the bot runs on node talos-prd-w-1, host IP 10.0.30.21, pod IP 10.244.1.7, none of the nodes of staging: its snapshots land off the cluster',
    });
  });

  it('finds the cluster by the host IP alone, when it is a node address no Node name matches', async () => {
    // Arrange: a bot on the host network of a node the inventory lists (no node name given).
    const d = await deps({
      access: nodesAccess({ production: [], staging: [] }),
      placement: { nodeName: undefined, hostIp: '10.0.20.11', podIp: undefined },
    });

    // Act
    const findings = await runDoctor(d);

    // Assert
    expect(find(findings, 'Where the bot runs', 'staging')).toMatchObject({ status: 'fail' });
    expect(find(findings, 'Where the bot runs', 'staging').found).toMatch(
      /^the bot runs on 10\.0\.20\.11, a node of staging \(BOT_HOST_IP 10\.0\.20\.11\)/,
    );
    expect(find(findings, 'Where the bot runs', 'production').status).toBe('ok');
  });

  it('warns when the Nodes cannot be read, after comparing the addresses it has', async () => {
    // Arrange
    const d = await deps({
      access: nodesAccess({ production: new Error('connect ECONNREFUSED 10.0.30.11:6443'), staging: NODES.staging }),
      placement: { nodeName: 'talos-mgmt-w-1', hostIp: '10.0.50.21', podIp: undefined },
    });

    // Act
    const findings = await runDoctor(d);

    // Assert
    const production = find(findings, 'Where the bot runs', 'production');
    expect(production.status).toBe('warn');
    expect(production.found).toContain('connect ECONNREFUSED 10.0.30.11:6443');
    expect(production.found).toContain('the node name was not compared');
  });

  it('warns once, for the whole bot, when the deployment does not say where it runs', async () => {
    // Act
    const findings = (await runDoctor(await deps())).filter((f) => f.check === 'Where the bot runs');

    // Assert
    expect(findings).toHaveLength(1);
    expect(findings[0]!.status).toBe('warn');
    expect(findings[0]!.cluster).toBeUndefined();
    expect(findings[0]!.found).toContain('BOT_NODE_NAME, BOT_HOST_IP and BOT_POD_IP are unset');
    expect(findings[0]!.fix).toContain('downward API');
  });
});

describe('the doctor at start', () => {
  it('posts the report to DOCTOR_CHANNEL, and no credential the checks read reaches Slack or the log', async () => {
    // Arrange: the outputs hold credentials, as real ones do.
    const d = await deps();
    const lines: string[] = [];
    const logger = createLogger({
      level: 'debug',
      scrubber: d.scrubber,
      destination: new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) }),
    });
    const posted: { channel: string; text: string }[] = [];
    const chat: Pick<ChatPort, 'post'> = {
      post: (channel, message) => {
        posted.push({ channel, text: JSON.stringify(message) });
        return Promise.resolve({ ts: '1.0' });
      },
    };

    // Act
    await postDoctorAtStart({ channel: 'C0DOCTOR', chat, logger, scrubber: d.scrubber }, () => runDoctor(d));

    // Assert
    expect(posted.map((p) => p.channel)).toEqual(['C0DOCTOR']);
    expect(posted[0]!.text).toContain('Doctor at start');
    expect(posted[0]!.text).toContain('Terraform outputs · staging');
    const log = lines.join('');
    expect(log).toContain('doctor at start');
    for (const canary of CANARIES) {
      expect(posted[0]!.text).not.toContain(canary);
      expect(log).not.toContain(canary);
    }
  });

  it('posts nothing without DOCTOR_CHANNEL', async () => {
    let ran = false;
    const chat: Pick<ChatPort, 'post'> = { post: () => Promise.reject(new Error('posted')) };
    await postDoctorAtStart(
      {
        channel: undefined,
        chat,
        logger: createLogger({ level: 'silent', scrubber: new SecretScrubber() }),
        scrubber: new SecretScrubber(),
      },
      () => {
        ran = true;
        return Promise.resolve([]);
      },
    );
    expect(ran).toBe(false);
  });
});
