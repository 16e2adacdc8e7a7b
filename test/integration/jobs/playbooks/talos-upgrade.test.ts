import { describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Operation } from '../../../../src/ops/operation.ts';
import { schematicId } from '../../../sim/schematics.ts';
import { productionShape, stagingShape } from '../../../sim/shapes.ts';
import { playbookMoves, threeControlPlanesAndAWorker, usePlaybookEstate } from '../../../../test/support/playbook-estate.ts';
import type { EngineFixture } from '../../../../test/support/engine-fixture.ts';
import { TALOSCONFIG, type FakeCluster } from '../../../../test/support/fake-cluster.ts';
import { useRedisFixture } from '../../../../test/support/redis-fixture.ts';

const redis = useRedisFixture();
let f: EngineFixture;
let cluster: FakeCluster;
const estate = usePlaybookEstate(redis, (e) => ({ f, cluster } = e));

/** The engine on another cluster than the default one: `other`, with `options` for its fake cluster. */
const onCluster = estate.on;

const { preflight, run, stored, start, approve, stopMessage } = playbookMoves(() => f);

describe('a Talos upgrade', () => {
  const image = (schematic: string): string => `factory.talos.dev/nocloud-installer/${schematic}:v1.11.6`;

  /** Planned on a cluster running v1.11.5, then started; the worker was meanwhile upgraded by hand. */
  async function startedWithWorkerOnTarget(): Promise<Operation> {
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });
    await preflight(op.id);
    await start(op.id);
    cluster.runsWithFallback('10.0.30.21', 'v1.11.6', 'v1.11.5');
    return op;
  }

  it('skips a worker already on the target without talosctl upgrade, waits for an approval before a control plane, then upgrades it through the others', async () => {
    // Arrange
    const op = await startedWithWorkerOnTarget();

    // Act
    await run(op.id);
    const waiting = await stored(op.id);
    const upgradesBeforeApproval = cluster.talosctlCalls('upgrade');
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(waiting.state).toBe('awaiting-approval');
    expect(waiting.steps.map((s) => [s.id, s.status])).toEqual([
      ['snapshot', 'done'],
      ['node-10.0.30.21', 'skipped'],
      ['node-10.0.30.11', 'pending'],
      ['node-10.0.30.12', 'pending'],
      ['node-10.0.30.13', 'pending'],
      ['verify', 'pending'],
    ]);
    expect(waiting.steps[1]!.detail).toBe('already on v1.11.6; not upgraded again');
    expect(waiting.approvals.map((a) => [a.step, a.state])).toEqual([['node-10.0.30.11', 'pending']]);
    expect(upgradesBeforeApproval).toEqual([]);
    const stepImage = image(cluster.model.terraform.defaultSchematic);
    expect(cluster.talosctlCalls('upgrade')).toEqual([
      [
        'upgrade',
        '--image',
        stepImage,
        '--wait',
        '--timeout',
        '20s',
        '--talosconfig',
        TALOSCONFIG,
        '--endpoints',
        '10.0.30.12,10.0.30.13',
        '--nodes',
        '10.0.30.11',
      ],
    ]);
    const after = await stored(op.id);
    expect(after.state).toBe('awaiting-approval');
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')).toMatchObject({ status: 'done', fromVersion: 'v1.11.5' });
    expect(after.approvals.map((a) => [a.step, a.state])).toEqual([
      ['node-10.0.30.11', 'approved'],
      ['node-10.0.30.12', 'pending'],
    ]);
    expect(cluster.node('10.0.30.11').talosVersion).toBe('v1.11.6');
  });

  it('stops an approved control-plane step before talosctl when Terraform now declares another schematic than the stored image', async () => {
    // Arrange
    const op = await startedWithWorkerOnTarget();
    await run(op.id);
    const planned = cluster.model.terraform.defaultSchematic;
    const declared = schematicId(['siderolabs/qemu-guest-agent']);
    cluster.model.terraform.defaultSchematic = declared;
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(
      'what the bot stored for this step no longer matches the nodes the sources show and the rules; nothing was run',
    );
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')).toMatchObject({ status: 'failed', image: image(planned) });
    expect(after.steps.find((s) => s.id === 'node-10.0.30.11')?.issuedAt).toBeUndefined();
    // A Retry derives the image again before anything is sent: it is offered, and nothing of the step is in flight.
    expect(after.retry).toMatchObject({ step: 'node-10.0.30.11', state: 'offered' });
    expect(after.retry?.resume).toBeUndefined();
    expect(after.failure).toBeUndefined();
    expect(stopMessage(after)).toContain(`the rules derive ${image(declared)} for 10.0.30.11 now; plan the upgrade again`);
    expect(cluster.talosctlCalls('upgrade')).toEqual([]);
    expect(cluster.node('10.0.30.11').talosVersion).toBe('v1.11.5');
    expect(await f.deps.lock.holder('production')).toBe(op.id);
  });
});

describe('the version rules of the runbook', () => {
  it('refuses a minor upgrade from a patch that is not the latest of the running minor, and says to patch first as an operation of its own', async () => {
    // Arrange: every node runs v1.11.5; the Image Factory lists v1.11.6.
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      'the cluster runs v1.11.5, not v1.11.6, the latest patch of 1.11: patch first, as an operation of its own (`/talos upgrade talos v1.11.6`), then upgrade to v1.12.11; the runbook takes the latest patch of each minor before the next minor',
    );
  });

  it('plans the same minor upgrade from the latest patch of the running minor', async () => {
    // Arrange
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(after.state).toBe('planned');
    expect(after.target).toMatchObject({ version: 'v1.12.11', fromVersion: 'v1.11.6' });
  });

  const clientChecked = [
    { kind: 'talos-upgrade' as const, target: { version: 'v1.11.6' }, where: 'the cluster' },
    { kind: 'k8s-upgrade' as const, target: { version: '1.34.2' }, where: 'the cluster' },
    { kind: 'node-rollback' as const, target: { node: '10.0.30.12' }, where: '10.0.30.12' },
    { kind: 'node-remove' as const, target: { node: '10.0.30.21' }, where: '10.0.30.21' },
  ];

  it.each(clientChecked)(
    'refuses a $kind when the one talosctl binary is another version than the running Talos',
    async ({ kind, target, where }) => {
      // Arrange: TALOSCTL_BIN names one talosctl, v1.11.6; the cluster runs v1.11.5.
      onCluster(threeControlPlanesAndAWorker(), { talosctlBinary: 'v1.11.6' });
      const op = await f.operation({ kind, state: 'preflight', target });

      // Act
      await preflight(op.id);

      // Assert
      const after = await stored(op.id);
      expect(after.state).toBe('refused');
      expect(after.refusals).toContain(
        `talosctl is v1.11.6 but ${where} runs v1.11.5; the runbook needs a matching client: install talosctl v1.11.5 (or put talosctl-v1.11.5 in the TALOSCTL_BIN directory)`,
      );
      expect(cluster.talosctlCalls('version --client')).not.toEqual([]);
    },
  );

  it.each(clientChecked)('takes a $kind when the one talosctl binary matches the running Talos', async ({ kind, target }) => {
    // Arrange
    onCluster(threeControlPlanesAndAWorker(), { talosctlBinary: 'v1.11.5' });
    const op = await f.operation({ kind, state: 'preflight', target });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(['planned', 'running']).toContain(after.state);
    expect(cluster.talosctlCalls('version --client')).not.toEqual([]);
  });
});

describe('a re-install on the running version', () => {
  const image = (schematic: string): string => `factory.talos.dev/nocloud-installer/${schematic}:v1.11.5`;

  it('is refused when every node already runs the schematic the rules derive', async () => {
    // Arrange
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      'the cluster already runs v1.11.5 with that schematic on every node: nothing to upgrade or re-install',
    ]);
  });

  it('re-installs only the nodes whose schematic Terraform changed, the control plane after an approval, and checks the schematic each runs', async () => {
    // Arrange: Terraform now declares qemu-guest-agent; two control planes already run it.
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    const before = cluster.model.terraform.defaultSchematic;
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of ['10.0.30.11', '10.0.30.12']) cluster.node(cp).schematic = declared;
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });

    // Act
    await preflight(op.id);
    const planned = await stored(op.id);
    await start(op.id);
    await run(op.id);
    const waiting = await stored(op.id);
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(planned.state).toBe('planned');
    expect(planned.steps.map((s) => [s.id, s.kind, s.image])).toEqual([
      ['snapshot', 'snapshot', undefined],
      ['node-10.0.30.21', 'upgrade-worker', image(declared)],
      ['node-10.0.30.13', 'upgrade-control-plane', image(declared)],
      ['verify', 'verify', undefined],
    ]);
    expect(planned.notes).toEqual([
      `A re-install on v1.11.5, the version every node runs: only the installer image changes, on 10.0.30.13 (default class) from schematic ${before} to ${declared}; ` +
        `10.0.30.21 (default class) from schematic ${before} to ${declared}. Each node reboots into it, with the same approvals as an upgrade.`,
    ]);
    // Every node is of the default class: that is for the record, not the plan.
    expect(planned.mechanics).toEqual([
      'Installer class of each node, and why: 10.0.30.11: default (a control plane, on the default schematic); 10.0.30.12: default (a control plane, on the default schematic); ' +
        '10.0.30.13: default (a control plane: the runbook gives the Longhorn installer to Longhorn workers only); ' +
        `10.0.30.21: default (runs schematic ${before}, neither output's; no node of the cluster runs or is declared in the Longhorn class).`,
    ]);
    expect(waiting.state).toBe('awaiting-approval');
    expect(waiting.approvals.map((a) => [a.step, a.state])).toEqual([['node-10.0.30.13', 'pending']]);
    expect(waiting.steps.find((s) => s.id === 'node-10.0.30.21')).toMatchObject({ status: 'done', fromVersion: 'v1.11.5' });
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.audit.map((e) => e.event)).toEqual(
      expect.arrayContaining([
        're-installed: worker talos-prd-w-1 (10.0.30.21, host pve1)',
        're-installed: control plane talos-prd-cp-3 (10.0.30.13, host pve3)',
      ]),
    );
    expect(cluster.talosctlCalls('upgrade').map((c) => [c[2], c[c.indexOf('--nodes') + 1]])).toEqual([
      [image(declared), '10.0.30.21'],
      [image(declared), '10.0.30.13'],
    ]);
    expect(cluster.events.filter((e) => e.kind === 'upgrade-start').map((e) => [e.node, e.fromVersion, e.toVersion])).toEqual([
      ['10.0.30.21', 'v1.11.5', 'v1.11.5'],
      ['10.0.30.13', 'v1.11.5', 'v1.11.5'],
    ]);
    for (const node of cluster.model.nodes)
      expect([node.address, node.talosVersion, node.schematic]).toEqual([node.address, 'v1.11.5', declared]);
    // The completed operation records the class of each node it installed, for a later Terraform change of a schematic.
    const recorded = await f.deps.nodeClasses.read('production');
    expect(Object.fromEntries([...recorded.byNode].map(([node, r]) => [node, [r.class, r.schematic, r.op]]))).toEqual({
      '10.0.30.13': ['default', declared, op.id],
      '10.0.30.21': ['default', declared, op.id],
    });
  });

  it('skips a node that already runs the new schematic when its step comes, without talosctl upgrade', async () => {
    // Arrange: planned for the worker only; someone re-installed it by hand before the run.
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of cluster.model.nodes.filter((n) => n.role === 'controlplane')) cp.schematic = declared;
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });
    await preflight(op.id);
    await start(op.id);
    cluster.node('10.0.30.21').schematic = declared;

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    expect(after.steps.find((s) => s.id === 'node-10.0.30.21')).toMatchObject({
      status: 'skipped',
      detail: `already runs v1.11.5 with schematic ${declared}; not re-installed`,
    });
    expect(cluster.talosctlCalls('upgrade')).toEqual([]);
  });

  it('stops when the node comes back on the version but without the new schematic (a silent A/B revert)', async () => {
    // Arrange
    const declared = cluster.declareSchematic(['siderolabs/qemu-guest-agent']);
    const before = cluster.model.terraform.defaultSchematic;
    cluster.model.terraform.defaultSchematic = declared;
    for (const cp of cluster.model.nodes.filter((n) => n.role === 'controlplane')) cp.schematic = declared;
    cluster.model.faults.upgradeSilentRevert = ['10.0.30.21'];
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.5' } });
    await preflight(op.id);
    await start(op.id);

    // Act
    await run(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('failed');
    expect(after.reason).toBe(
      `10.0.30.21 came back on v1.11.5 with schematic ${before}, not v1.11.5 with the new schematic: Talos booted the previous image on its own (an A/B fallback; the new image probably could not boot)`,
    );
    expect(stopMessage(after)).toContain(`expected schematic ${declared} (${image(declared)}), node runs ${before}`);
    // Talos already went back: no Rollback, and only an approver's explicit word tries the node again, from scratch.
    expect(after.failure).toBeUndefined();
    expect(after.retry).toMatchObject({ step: 'node-10.0.30.21', resume: 'reissue', explicit: 'Retry the upgrade of this node' });
  });
});

describe('the Longhorn node class', () => {
  // The runbook's design: three control planes on the default schematic (which carries iscsi-tools and
  // util-linux-tools), plus a Longhorn worker built from talos_longhorn_installer_image and a default worker.
  const longhornShape = productionShape({
    nodes: [
      ...productionShape().nodes,
      { hostname: 'talos-prd-w-1', address: '10.0.30.21', role: 'worker', host: 'pve1', longhorn: true, installer: 'longhorn' },
      { hostname: 'talos-prd-w-2', address: '10.0.30.22', role: 'worker', host: 'pve2' },
    ],
  });
  const installer = (schematic: string, version = 'v1.12.11'): string => `factory.talos.dev/nocloud-installer/${schematic}:${version}`;
  const OLD = schematicId(['siderolabs/iscsi-tools']);

  /** The Longhorn estate on v1.11.6, ready for an upgrade to v1.12.11. */
  function onLonghornCluster(): { defaultSchematic: string; longhorn: string } {
    onCluster(longhornShape);
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    return { defaultSchematic: cluster.model.terraform.defaultSchematic, longhorn: cluster.model.terraform.longhornSchematic! };
  }

  async function planned(version = 'v1.12.11'): Promise<Operation> {
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version } });
    await preflight(op.id);
    return stored(op.id);
  }

  it("gives each node the installer of the schematic it runs: the control planes keep the default one, though it carries Longhorn's extensions", async () => {
    // Arrange
    const { defaultSchematic, longhorn } = onLonghornCluster();

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.steps.filter((s) => s.node !== undefined).map((s) => [s.node, s.image])).toEqual([
      ['10.0.30.21', installer(longhorn)],
      ['10.0.30.22', installer(defaultSchematic)],
      ['10.0.30.11', installer(defaultSchematic)],
      ['10.0.30.12', installer(defaultSchematic)],
      ['10.0.30.13', installer(defaultSchematic)],
    ]);
    expect(after.notes).toContain(
      'Installer class of each node, and why: 10.0.30.11: default (a control plane, on the default schematic); 10.0.30.12: default (a control plane, on the default schematic); ' +
        '10.0.30.13: default (a control plane, on the default schematic); 10.0.30.21: Longhorn (runs the Longhorn schematic (talos_longhorn_installer_image)); ' +
        '10.0.30.22: default (runs the default schematic (talos_image_factory_schematic_id)).',
    );
  });

  it('refuses a version upgrade while a control plane runs the Longhorn schematic, and moves it to the default one when asked for on the running version', async () => {
    // Arrange
    const { defaultSchematic, longhorn } = onLonghornCluster();
    cluster.node('10.0.30.12').schematic = longhorn;

    // Act
    const upgrade = await planned();
    const reinstall = await planned('v1.11.6');

    // Assert
    expect(upgrade.state).toBe('refused');
    expect(upgrade.refusals).toEqual([
      `10.0.30.12 is a control plane and runs the Longhorn schematic ${longhorn} (talos_longhorn_installer_image), but the runbook gives the Longhorn installer to Longhorn workers only, ` +
        `so a control plane takes the default schematic ${defaultSchematic} (talos_image_factory_schematic_id). Moving it is a same-version extension change, not part of a version upgrade: ` +
        'ask for it as such (`/talos upgrade talos v1.11.6`), then upgrade',
    ]);
    expect(reinstall.refusals).toEqual([]);
    expect(reinstall.steps.filter((s) => s.node !== undefined).map((s) => [s.node, s.image])).toEqual([
      ['10.0.30.12', installer(defaultSchematic, 'v1.11.6')],
    ]);
    expect(reinstall.notes).toContain(
      `A re-install on v1.11.6, the version every node runs: only the installer image changes, on 10.0.30.12 (default class) from schematic ${longhorn} to ${defaultSchematic}. Each node reboots into it, with the same approvals as an upgrade.`,
    );
  });

  it('refuses a worker on neither schematic with no evidence, naming the three schematics and how to declare its class', async () => {
    // Arrange: Terraform changed a schematic; the worker still runs one that neither output names.
    const { defaultSchematic, longhorn } = onLonghornCluster();
    cluster.node('10.0.30.22').schematic = cluster.declareSchematic(['siderolabs/iscsi-tools']);

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toEqual([
      `10.0.30.22 is a worker that runs schematic ${OLD}, neither the default schematic ${defaultSchematic} (talos_image_factory_schematic_id) nor the Longhorn schematic ${longhorn} (talos_longhorn_installer_image); ` +
        'the bot has recorded no class for it and the inventory declares none, while the cluster has Longhorn nodes, so its installer cannot be chosen safely. ' +
        'Declare its class in the inventory: add it to longhornNodes if it is a Longhorn worker, or to defaultClassNodes if it is not, then plan again',
    ]);
    expect(after.steps.find((s) => s.node === '10.0.30.22')).toBeUndefined();
  });

  it('places a worker on neither schematic by the class recorded at its last completed operation, before the inventory', async () => {
    // Arrange
    const { longhorn } = onLonghornCluster();
    cluster.node('10.0.30.21').schematic = cluster.declareSchematic(['siderolabs/iscsi-tools']);
    f.deps.inventory.clusters[0]!.defaultClassNodes = ['10.0.30.21'];
    await f.deps.nodeClasses.write(
      'production',
      new Map([['10.0.30.21', { class: 'longhorn', schematic: OLD, op: 'op-earlier', at: '2026-11-01T10:00:00.000Z' }]]),
    );

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.steps.find((s) => s.node === '10.0.30.21')?.image).toBe(installer(longhorn));
    expect(after.notes.find((n) => n.startsWith('Installer class'))).toContain(
      `10.0.30.21: Longhorn (runs schematic ${OLD}, neither output's; the bot recorded it in the longhorn class when op-earlier completed)`,
    );
  });

  it("ignores a record that is not the bot's, says so, and then takes the inventory's declaration", async () => {
    // Arrange: someone wrote the record by hand.
    const { defaultSchematic } = onLonghornCluster();
    cluster.node('10.0.30.21').schematic = OLD;
    cluster.node('10.0.30.22').schematic = OLD;
    f.deps.inventory.clusters[0]!.longhornNodes = ['10.0.30.21'];
    f.deps.inventory.clusters[0]!.defaultClassNodes = ['10.0.30.22'];
    await redis
      .client()
      .hset(
        'talos:node-class:production',
        '10.0.30.22',
        JSON.stringify({ class: 'longhorn', schematic: 'not-a-schematic', op: 'x', at: 'yesterday' }),
      );

    // Act
    const after = await planned();

    // Assert
    expect(after.refusals).toEqual([]);
    expect(after.notes).toContain(
      "The bot's record of the node class of 10.0.30.22 is not one it writes (edited or corrupt), so it was ignored: those nodes' classes come from what they run and the inventory.",
    );
    expect(after.steps.find((s) => s.node === '10.0.30.22')?.image).toBe(installer(defaultSchematic));
    expect(after.notes.find((n) => n.startsWith('Installer class'))).toContain(
      `10.0.30.21: Longhorn (runs schematic ${OLD}, neither output's; the inventory declares it (longhornNodes))`,
    );
  });

  it('refuses a Longhorn installer output that is the generic installer', async () => {
    // Arrange
    const { longhorn } = onLonghornCluster();
    cluster.model.faults.tofuOutputs = { talos_longhorn_installer_image: `factory.talos.dev/installer/${longhorn}:v1.11.6` };

    // Act
    const after = await planned();

    // Assert
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      `cannot derive the installer image: talos_longhorn_installer_image is "factory.talos.dev/installer/${longhorn}:v1.11.6", the generic Image Factory installer (factory.talos.dev/installer/…), which can rename eth0 and cut the node off the network: Terraform must output factory.talos.dev/nocloud-installer/<schematic>:<version>`,
    );
    expect(after.steps.filter((s) => s.image !== undefined)).toEqual([]);
  });

  it("gives the default installer to a worker that runs Longhorn's extensions on the default schematic, in a cluster without a Longhorn output", async () => {
    // Arrange: every node of the default cluster runs the default schematic, which carries iscsi-tools and util-linux-tools.
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.refusals).toEqual([]);
    expect(after.steps.find((s) => s.node === '10.0.30.21')?.image).toBe(
      `factory.talos.dev/nocloud-installer/${cluster.model.terraform.defaultSchematic}:v1.11.6`,
    );
  });

  it('refuses a worker declared a Longhorn worker when Terraform outputs no Longhorn installer', async () => {
    // Arrange
    cluster.node('10.0.30.21').schematic = OLD;
    f.deps.inventory.clusters[0]!.longhornNodes = ['10.0.30.21'];
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toContain(
      `10.0.30.21 is of the Longhorn node class (it runs schematic ${OLD}, neither output's; the inventory declares it (longhornNodes)), but Terraform outputs no talos_longhorn_installer_image: its installer cannot be chosen`,
    );
  });
});

describe('one control plane', () => {
  it('says in the plan that talosctl has no other endpoint, and polls the rebooting node back through itself without hanging', async () => {
    // Arrange: while it reboots, the only control plane does not answer at all (no refused connection),
    // and it stays down until the bot has given up on a call to it.
    onCluster(stagingShape({ talosVersion: 'v1.11.5' }));
    f.deps.timeouts.probeMs = 1000;
    cluster.model.faults.silentWhileRebooting = ['10.0.20.204'];
    cluster.model.faults.holdReboot = async (node) => {
      if (node.address !== '10.0.20.204') return;
      while (!cluster.calls.some((c) => c.hung !== undefined && c.endedAt !== undefined)) await sleep(10);
    };
    const op = await f.operation({ kind: 'talos-upgrade', cluster: 'staging', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);
    const planned = await stored(op.id);
    await start(op.id, 'staging');
    await run(op.id);
    await approve(op.id);
    await run(op.id);

    // Assert
    expect(planned.consequences).toEqual([
      expect.stringMatching(/^⚠ Only control plane: the Kubernetes API and etcd are down while \S+ reboots; the bot waits up to \d+ min/),
    ]);
    expect(planned.mechanics).toContainEqual(
      expect.stringContaining('10.0.20.204 is the only control plane: while it reboots, talosctl has no other endpoint.'),
    );
    expect(planned.notes.join(' ')).not.toContain('talos#11830');
    const after = await stored(op.id);
    expect(after.state).toBe('completed');
    const upgrades = cluster.talosctlCalls('upgrade');
    // The worker goes through the control plane and is waited on; the control plane is only asked.
    expect(upgrades.map((c) => [c[c.indexOf('--nodes') + 1], c.includes('--wait'), c.includes('--wait=false')])).toEqual([
      ['10.0.20.205', true, false],
      ['10.0.20.204', false, true],
    ]);
    const hung = cluster.calls.filter((c) => c.hung !== undefined);
    expect(hung.length).toBeGreaterThan(0);
    // Each was given up by the bot at its bound (the process went away unanswered), none waited out the reboot.
    expect(hung.map((c) => c.exitCode)).toEqual(hung.map(() => null));
    expect(cluster.node('10.0.20.204').talosVersion).toBe('v1.11.6');
  });

  it('stops at the node-ready deadline when the only control plane does not come back, with the last bounded poll', async () => {
    // Arrange: the node stays down until the test brings it up; the bot gives a node two seconds.
    onCluster(stagingShape({ talosVersion: 'v1.11.5' }));
    f.deps.timeouts.probeMs = 500;
    f.deps.timeouts.nodeReadyMs = 2000;
    cluster.model.faults.silentWhileRebooting = ['10.0.20.204'];
    let bringUp = (): void => undefined;
    const up = new Promise<void>((resolve) => (bringUp = resolve));
    cluster.model.faults.holdReboot = (node) => (node.address === '10.0.20.204' ? up : undefined);
    const op = await f.operation({ kind: 'talos-upgrade', cluster: 'staging', state: 'preflight', target: { version: 'v1.11.6' } });
    await preflight(op.id);
    await start(op.id, 'staging');
    await run(op.id);
    await approve(op.id);

    // Act
    await run(op.id);

    // Assert: the run ended on its own bounds, with the node still down.
    const after = await stored(op.id);
    expect(cluster.node('10.0.20.204').stage).toBe('rebooting');
    bringUp();
    expect(after.state).toBe('failed');
    expect(after.reason).toBe('10.0.20.204 was not back and Ready within 2 s');
    expect(stopMessage(after)).toContain('talosctl: no answer within 1 s');
  });
});

describe('the Talos upgrade preflight before any talosctl download', () => {
  /** The versions the preflight asks talosctl for: each one a download when the image does not carry it. */
  function recordClientRequests(): (string | undefined)[] {
    const asked: (string | undefined)[] = [];
    const access = f.deps.access;
    f.deps.access = {
      withSession: (c, signal, work) =>
        access.withSession(c, signal, (session) =>
          work({
            ...session,
            talosctl: (version, options) => {
              asked.push(version);
              return session.talosctl(version, options);
            },
          }),
        ),
    };
    return asked;
  }

  it('refuses a Talos minor the support table lacks, asking for no client of any version', async () => {
    // Arrange
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.15.0' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toHaveLength(1);
    expect(after.refusals[0]).toMatch(/^Talos 1\.15 is not in the bot's support table/);
    expect(asked.filter((v) => v !== undefined)).toEqual([]);
  });

  it('refuses outside the maintenance window and while another operation holds the lock, once each, asking for no client of any version', async () => {
    // Arrange: a Tuesday-night window, and the fixture's clock on Tuesday morning; another operation holds the cluster.
    f.deps.inventory.clusters[0]!.maintenanceWindows = [{ start: '0 22 * * 2', durationMinutes: 60, timeZone: 'UTC' }];
    expect((await f.deps.lock.acquire('production', 'op-other')).ok).toBe(true);
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.11.6' } });

    // Act
    await preflight(op.id);

    // Assert
    const after = await stored(op.id);
    expect(after.state).toBe('refused');
    expect(after.refusals).toHaveLength(2);
    expect(after.refusals[0]).toMatch(/^Production changes are taken only inside a maintenance window/);
    expect(after.refusals[1]).toContain('op-other');
    expect(asked.filter((v) => v !== undefined)).toEqual([]);
  });

  it('asks for the running and the target client only for a plan the rules allow', async () => {
    // Arrange
    for (const node of cluster.model.nodes) node.talosVersion = 'v1.11.6';
    const asked = recordClientRequests();
    const op = await f.operation({ kind: 'talos-upgrade', state: 'preflight', target: { version: 'v1.12.11' } });

    // Act
    await preflight(op.id);

    // Assert
    expect((await stored(op.id)).state).toBe('planned');
    expect(asked.filter((v) => v !== undefined)).toEqual(['v1.11.6', 'v1.12.11']);
  });
});
