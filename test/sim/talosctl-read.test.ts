import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe } from 'vitest';
import { simTest, tableRows } from './sim-fixture.ts';
import { buildInfo } from './versions.ts';

const it = simTest();

const PRD = ['10.0.30.11', '10.0.30.12', '10.0.30.13'];

describe.concurrent('talosctl version', () => {
  it('prints the client block and one server block per node, tab-indented with exact label spacing', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['version', '--nodes', '10.0.30.11,10.0.30.12']);

    const client = buildInfo('v1.11.6');
    const server = buildInfo('v1.11.6');
    const serverBlock = (node: string): string =>
      `\tNODE:        ${node}\n\tTag:         v1.11.6\n\tSHA:         ${server.sha}\n\tBuilt:       \n\tGo version:  ${server.goVersion}\n\tOS/Arch:     linux/amd64\n\tEnabled:     RBAC\n`;
    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe(
      `Client:\n\tTag:         v1.11.6\n\tSHA:         ${client.sha}\n\tBuilt:       \n\tGo version:  ${client.goVersion}\n\tOS/Arch:     linux/amd64\n` +
        `Server:\n${serverBlock('10.0.30.11')}${serverBlock('10.0.30.12')}`,
    );
  });

  it('shortens only the client block with --short and skips the API with --client', async ({ f, expect }) => {
    const short = await f.talosctl('staging', ['version', '--short', '-n', '10.0.20.204']);
    const client = await f.talosctl('staging', ['version', '--client'], { version: 'v1.12.11' });

    expect(short.stdout.split('\n').slice(0, 3)).toEqual(['Talos v1.11.6', 'Server:', '\tNODE:        10.0.20.204']);
    expect(client.stdout).toMatch(/^Client:\n\tTag:         v1\.12\.11\n/);
    expect(client.stdout).not.toContain('Server:');
  });

  it('warns about an unreachable node and still prints the others (client 1.11)', async ({ f, expect }) => {
    f.sim.faults.set('production', { nodeUnreachable: ['10.0.30.13'] });

    const result = await f.talosctl('production', ['version', '-n', '10.0.30.11,10.0.30.13']);

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      'WARNING: 1 error occurred:\n\t* 10.0.30.13: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp 10.0.30.13:50000: connect: no route to host"\n\n\n',
    );
    expect(result.stdout).toContain('\tNODE:        10.0.30.11\n');
    expect(result.stdout).not.toContain('10.0.30.13');
  });

  it('refuses to run without --nodes', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['version']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe(
      'nodes are not set for the command: please use `--nodes` flag or configuration file to set the nodes to run the command against\n',
    );
  });

  it('rejects credentials no cluster issued with a TLS handshake error', async ({ f, expect }) => {
    const forged = join(f.dir, 'forged-talosconfig');
    writeFileSync(forged, f.sim.talosconfig('production').replace(/key: .*/, 'key: LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0K'));

    const result = await f.talosctl('production', ['--talosconfig', forged, 'etcd', 'status', '-n', '10.0.30.11']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('authentication handshake failed');
    expect(f.sim.calls.at(-1)?.cluster).toBeUndefined();
  });

  it('answers an unknown subcommand like cobra does', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['frobnicate', '-n', '10.0.30.11']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^unknown command "frobnicate" for "talosctl"\nUsage:/);
  });
});

describe.concurrent('talosctl etcd', () => {
  it('prints status with PROTOCOL and STORAGE for 1.11+ clients and %016x ids agreeing on the leader', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['etcd', 'status', '--nodes', PRD.join(',')]);

    const [header, ...rows] = tableRows(result.stdout);
    expect(result.exitCode).toBe(0);
    expect(header).toEqual([
      'NODE',
      'MEMBER',
      'DB SIZE',
      'IN USE',
      'LEADER',
      'RAFT INDEX',
      'RAFT TERM',
      'RAFT APPLIED INDEX',
      'LEARNER',
      'PROTOCOL',
      'STORAGE',
      'ERRORS',
    ]);
    expect(rows.map((r) => r[0])).toEqual(PRD);
    for (const row of rows) {
      expect(row[1]).toMatch(/^[0-9a-f]{16}$/);
      expect(row[2]).toBe('21 MB');
      expect(row[3]).toMatch(/^\d+\.\d MB \(\d+\.\d\d%\)$/);
      expect(row[4]).toBe(rows[0]?.[1]);
      expect(row).toHaveLength(11);
    }
    expect(result.stdout.split('\n')[1]).toMatch(/false {5}3\.6\.5 {6}3\.6\.0 {5}$/);
  });

  it('drops PROTOCOL and STORAGE for a 1.10 client', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['etcd', 'status', '-n', '10.0.20.204'], { version: 'v1.10.9' });

    expect(tableRows(result.stdout)[0]).toEqual([
      'NODE',
      'MEMBER',
      'DB SIZE',
      'IN USE',
      'LEADER',
      'RAFT INDEX',
      'RAFT TERM',
      'RAFT APPLIED INDEX',
      'LEARNER',
      'ERRORS',
    ]);
  });

  it('shows no leader, and a member that disagrees, as each member sees it', async ({ f, expect }) => {
    f.sim.faults.set('production', { etcdNoLeader: true });
    const none = tableRows((await f.talosctl('production', ['etcd', 'status', '-n', PRD.join(',')])).stdout).slice(1);
    f.sim.faults.set('production', { etcdNoLeader: undefined, etcdLeaderDisagreement: ['10.0.30.13'] });
    const split = tableRows((await f.talosctl('production', ['etcd', 'status', '-n', PRD.join(',')])).stdout).slice(1);

    expect(none.map((r) => [r[4], r[11]])).toEqual(PRD.map(() => ['0000000000000000', 'etcdserver: no leader']));
    expect(split[2]?.[4]).toBe(split[2]?.[1]);
    expect(split[0]?.[4]).toBe(split[0]?.[1]);
    expect(split[1]?.[4]).toBe(split[0]?.[1]);
  });

  it('reports the worker as a partial failure of etcd status', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['etcd', 'status', '-n', '10.0.20.204,10.0.20.205']);

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toBe(
      'WARNING: 1 error occurred:\n\t* 10.0.20.205: rpc error: code = Unimplemented desc = etcd is only available on control plane nodes\n\n\n',
    );
    expect(tableRows(result.stdout).map((r) => r[0])).toEqual(['NODE', '10.0.20.204']);
  });

  it('lists members from each node view, ordered by member id as etcd orders them', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['etcd', 'members', '-n', '10.0.30.12']);

    const rows = tableRows(result.stdout);
    expect(rows[0]).toEqual(['NODE', 'ID', 'HOSTNAME', 'PEER URLS', 'CLIENT URLS', 'LEARNER']);
    const ids = rows.slice(1).map((r) => BigInt(`0x${r[1] ?? ''}`));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
    expect(
      rows
        .slice(1)
        .map((r) => [r[0], r[2], r[3]])
        .sort((a, b) => String(a[1]).localeCompare(String(b[1]))),
    ).toEqual([
      ['10.0.30.12', 'talos-prd-cp-1', 'https://10.0.30.11:2380'],
      ['10.0.30.12', 'talos-prd-cp-2', 'https://10.0.30.12:2380'],
      ['10.0.30.12', 'talos-prd-cp-3', 'https://10.0.30.13:2380'],
    ]);
  });

  it('writes a snapshot through a .part file with a sha256 trailer and growing revisions', async ({ f, expect }) => {
    const first = await f.talosctl('production', ['etcd', 'snapshot', 'one.db', '-n', '10.0.30.11']);
    const second = await f.talosctl('production', ['etcd', 'snapshot', join(f.dir, 'two.db'), '-n', '10.0.30.12']);

    const bytes = readFileSync(join(f.dir, 'one.db'));
    const body = bytes.subarray(0, bytes.length - 32);
    expect(first.exitCode).toBe(0);
    expect(bytes.length % 512).toBe(32);
    expect(bytes.subarray(bytes.length - 32).equals(createHash('sha256').update(body).digest())).toBe(true);
    expect(existsSync(join(f.dir, 'one.db.part'))).toBe(false);
    const [saved, info] = first.stdout.split('\n');
    expect(saved).toBe(`etcd snapshot saved to "one.db" (${bytes.length} bytes)`);
    expect(info).toMatch(/^snapshot info: hash [0-9a-f]{8}, revision \d+, total keys \d+, total size \d+$/);
    const revision = (text: string): number => Number(/revision (\d+)/.exec(text)?.[1]);
    expect(revision(second.stdout)).toBeGreaterThan(revision(first.stdout));
  });

  it('takes snapshots from one control plane only', async ({ f, expect }) => {
    const many = await f.talosctl('production', ['etcd', 'snapshot', 'x.db', '-n', '10.0.30.11,10.0.30.12']);
    const worker = await f.talosctl('staging', ['etcd', 'snapshot', 'x.db', '-n', '10.0.20.205']);

    expect(many.stderr).toBe('command "etcd snapshot" is not supported with multiple nodes\n');
    expect(worker.exitCode).toBe(1);
    expect(worker.stderr).toContain('etcd snapshot is only available on control plane nodes');
  });
});

describe.concurrent('talosctl service', () => {
  it('renders the single-service block with events newest first', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['service', 'etcd', '--nodes', '10.0.30.11']);

    const lines = result.stdout.trimEnd().split('\n');
    expect(lines.slice(0, 4)).toEqual(['NODE     10.0.30.11', 'ID       etcd', 'STATE    Running', 'HEALTH   OK']);
    expect(lines[4]).toMatch(/^EVENTS {3}\[Running\]: Health check successful \(\S+ ago\)$/);
    expect(lines[5]).toMatch(/^ {9}\[Running\]: Started task etcd \(PID \d+\) for container etcd \(\S+ ago\)$/);
    expect(lines.at(-1)).toMatch(/^ {9}\[Waiting\]: Waiting for service "cri" to be "up"/);
  });

  it('shows an unhealthy etcd with its last health message', async ({ f, expect }) => {
    f.sim.faults.set('production', { etcdUnhealthy: { '10.0.30.12': 'Running' } });

    const result = await f.talosctl('production', ['service', 'etcd', '-n', '10.0.30.12']);

    expect(result.stdout).toContain(
      'STATE                 Running\nHEALTH                Fail\nLAST HEALTH MESSAGE   context deadline exceeded\n',
    );
  });

  it('says etcd is not registered on a worker', async ({ f, expect }) => {
    const result = await f.talosctl('staging', ['service', 'etcd', '-n', '10.0.20.205']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe('service "etcd" is not registered on any nodes\n');
  });

  it('lists every service of a node', async ({ f, expect }) => {
    const rows = tableRows((await f.talosctl('staging', ['service', '-n', '10.0.20.204'])).stdout);

    expect(rows[0]).toEqual(['NODE', 'SERVICE', 'STATE', 'HEALTH', 'LAST CHANGE', 'LAST EVENT']);
    expect(rows.find((r) => r[1] === 'etcd')?.slice(2, 4)).toEqual(['Running', 'OK']);
  });
});

describe.concurrent('talosctl get', () => {
  it('lists extensions with the schematic entry, as a table and as concatenated JSON objects', async ({ f, expect }) => {
    const schematic = f.sim.cluster('production').terraform.defaultSchematic;
    const table = tableRows((await f.talosctl('production', ['get', 'extensions', '-n', '10.0.30.11'])).stdout);
    const json = (await f.talosctl('production', ['get', 'extensions', '-n', '10.0.30.11', '-o', 'json'])).stdout;

    // The runbook's design: the default schematic every control plane runs carries both Longhorn extensions.
    expect(table[0]).toEqual(['NODE', 'NAMESPACE', 'TYPE', 'ID', 'VERSION', 'NAME', 'VERSION']);
    expect(table.slice(1).map((r) => [r[3], r[5]])).toEqual([
      ['0', 'iscsi-tools'],
      ['1', 'util-linux-tools'],
      ['2', 'schematic'],
    ]);
    expect(table.at(-1)?.[6]).toBe(schematic);
    const objects = json
      .split(/\n(?=\{)/)
      .map((o) => JSON.parse(o) as { node: string; spec: { image: string; metadata: { name: string; version: string; author: string } } });
    expect(objects.map((o) => o.spec.metadata.name)).toEqual(['iscsi-tools', 'util-linux-tools', 'schematic']);
    expect(objects.at(-1)?.spec).toMatchObject({
      image: '2.sqsh',
      metadata: { name: 'schematic', version: schematic, author: 'Image Factory (https://factory.talos.dev)' },
    });
    expect(json).toMatch(/^\{\n {4}"metadata": \{/);
  });

  it("on several nodes (client ≤ 1.13) lists a failed node's error without its name and exits 1", async ({ f, expect }) => {
    f.sim.faults.set('production', { nodeUnreachable: ['10.0.30.12'] });

    const result = await f.talosctl('production', ['get', 'extensions', '-n', '10.0.30.11,10.0.30.12,10.0.30.13', '-o', 'json']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toMatch(/^1 error occurred:\n\t\* rpc error: code = Unavailable desc = [^\n]+\n\n\n$/);
    expect(result.stderr).not.toMatch(/\* 10\.0\.30\.12: /);
    const nodes = result.stdout.split(/\n(?=\{)/).map((o) => (JSON.parse(o) as { node: string }).node);
    expect([...new Set(nodes)]).toEqual(['10.0.30.11', '10.0.30.13']);
  });

  it('on several nodes (client ≤ 1.13) fails with empty stdout when the first node is down: the resource is resolved there', async ({
    f,
    expect,
  }) => {
    f.sim.faults.set('production', { nodeUnreachable: ['10.0.30.11'] });

    const result = await f.talosctl('production', ['get', 'extensions', '-n', '10.0.30.11,10.0.30.12', '-o', 'json']);

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(/^rpc error: code = Unavailable desc = /);
  });

  it('reports members and machine status', async ({ f, expect }) => {
    const members = tableRows((await f.talosctl('staging', ['get', 'members', '-n', '10.0.20.204'])).stdout);
    const status = tableRows((await f.talosctl('staging', ['get', 'machinestatus', '-n', '10.0.20.205'])).stdout);

    expect(members[0]).toEqual(['NODE', 'NAMESPACE', 'TYPE', 'ID', 'VERSION', 'HOSTNAME', 'MACHINE TYPE', 'OS', 'ADDRESSES']);
    expect(members[2]?.slice(5)).toEqual(['talos-stg-w-1', 'worker', 'Talos (v1.11.6)', '["10.0.20.205"]']);
    expect(status[1]).toEqual(['10.0.20.205', 'runtime', 'MachineStatus', 'machine', '21', 'running', 'true']);
  });
});

describe.concurrent('talosctl health', () => {
  it('passes every check in order on stderr with an empty stdout', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['health', '-n', '10.0.30.11', '--wait-timeout', '5s']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines[0]).toBe('discovered nodes: ["10.0.30.11" "10.0.30.12" "10.0.30.13"]');
    expect(lines.filter((l) => / (OK|SKIP)$/.test(l))).toHaveLength(16);
    expect(lines).toContain('waiting for kube-proxy to report ready: SKIP');
  });

  it('keeps reporting a failing check until --wait-timeout, then fails with the deadline error as a 1.13 or older client prints it', async ({
    f,
    expect,
  }) => {
    f.sim.faults.set('staging', { nodeNotReady: ['talos-stg-w-1'] });
    const started = Date.now();

    const result = await f.talosctl('staging', [
      'health',
      '-n',
      '10.0.20.204',
      '--control-plane-nodes',
      '10.0.20.204',
      '--worker-nodes',
      '10.0.20.205',
      '--wait-timeout',
      '400ms',
    ]);

    expect(Date.now() - started).toBeGreaterThanOrEqual(400);
    expect(result.exitCode).toBe(1);
    // The server sends its node list first even when the client named the nodes (v1alpha1_cluster.go).
    expect(result.stderr.startsWith('discovered nodes: ["10.0.20.204" "10.0.20.205"]\n')).toBe(true);
    expect(result.stderr).toContain('waiting for all k8s nodes to report ready: some nodes are not ready: [talos-stg-w-1]\n');
    expect(result.stderr.endsWith('healthcheck error: rpc error: code = DeadlineExceeded desc = context deadline exceeded\n')).toBe(true);
  });

  it('waits for every CoreDNS pod to be ready on a server before 1.13, as K8sPodReadyAssertion does', async ({ f, expect }) => {
    f.sim.faults.set('staging', { podsNotReady: ['coredns'] });

    const result = await f.talosctl('staging', ['health', '-n', '10.0.20.204', '--wait-timeout', '300ms']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain(
      'waiting for coredns to report ready: no ready pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"\n',
    );
  });

  it('prints the discovered nodes only when it discovered them, when run on the client', async ({ f, expect }) => {
    const named = await f.talosctl('staging', [
      'health',
      '-n',
      '10.0.20.204',
      '--server=false',
      '--control-plane-nodes',
      '10.0.20.204',
      '--worker-nodes',
      '10.0.20.205',
      '--wait-timeout',
      '5s',
    ]);

    expect(named.exitCode).toBe(0);
    expect(named.stderr).not.toContain('discovered nodes');
  });

  it('skips node readiness and CoreDNS on a 1.13 server whose Talos installed no CNI, even with a node not ready', async ({
    f,
    expect,
  }) => {
    for (const node of f.sim.cluster('staging').nodes) node.talosVersion = 'v1.13.9';
    f.sim.faults.set('staging', { nodeNotReady: ['talos-stg-w-1'] });

    const result = await f.talosctl('staging', ['health', '-n', '10.0.20.204', '--wait-timeout', '5s'], { version: 'v1.13.9' });

    expect(result.exitCode).toBe(0);
    expect(result.stderr).toContain('waiting for all k8s nodes to report ready: SKIP\n');
    expect(result.stderr).toContain('waiting for coredns to report ready: SKIP\n');
  });
});

describe.concurrent('fault injection on probes', () => {
  it('hangs a probe until the caller kills it, and records the call as unfinished', async ({ f, expect }) => {
    f.sim.faults.set('production', { hang: ['etcd status'] });

    const result = await f.talosctlUntilHung('production', ['etcd', 'status', '-n', '10.0.30.11']);
    await f.sim.waitFor(() => f.sim.calls.at(-1)?.endedAt !== undefined);

    expect(result.hung).toBe('fault: etcd status');
    expect(f.sim.calls.at(-1)).toMatchObject({ hung: 'fault: etcd status', exitCode: null, cluster: 'production' });
  });

  it('fails a probe with the given message', async ({ f, expect }) => {
    f.sim.faults.set('production', { fail: { service: 'rpc error: code = Unavailable desc = apid is restarting' } });

    const result = await f.talosctl('production', ['service', 'etcd', '-n', '10.0.30.11']);

    expect(result).toMatchObject({ exitCode: 1, stdout: '', stderr: 'rpc error: code = Unavailable desc = apid is restarting\n' });
  });
});
