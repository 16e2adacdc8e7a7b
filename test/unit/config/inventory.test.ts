import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { allNodes, parseInventory, resolveCluster, type Inventory } from '../../../src/config/inventory.ts';

/** The example of DESIGN.md, verbatim with its comments. */
const DESIGN_EXAMPLE = `
clusters:
  production:
    environment: production          # staging | production
    channel: C0MAINTPRD              # maintenance channel id; commands elsewhere are refused
    terraformDir: /srv/infra/terraform/production   # \`tofu output\` runs here
    controlPlanes: [10.0.30.11, 10.0.30.12, 10.0.30.13]  # every control-plane address
    workers: []                      # optional; Kubernetes is asked too
    installerPlatform: nocloud       # the installer image platform to preserve
    hostLabel: example.org/proxmox-host   # node label naming the physical host
    snapshotDir: /var/backups/talos-etcd  # off-cluster snapshot destination
    operators: [U0ALICE, U0BOB]      # may start operations (user ids or user-group ids)
    approvers: [U0CAROL]             # may approve control-plane steps
    defaultForChannel: true          # optional: the cluster a bare \`/talos health\` means there
`;

/** One valid cluster entry, indented for `clusters.<name>`, with `overrides` replacing or adding lines. */
function clusterYaml(name: string, overrides: Record<string, string> = {}): string {
  const fields: Record<string, string> = {
    environment: 'staging',
    channel: 'C0MAINTSTG',
    terraformDir: `/srv/infra/terraform/${name}`,
    controlPlanes: '[10.0.20.11, 10.0.20.12, 10.0.20.13]',
    workers: '[10.0.20.21]',
    installerPlatform: 'nocloud',
    hostLabel: 'example.org/proxmox-host',
    snapshotDir: '/var/backups/talos-etcd',
    operators: '[U0ALICE, S0OPS]',
    approvers: '[U0CAROL]',
    ...overrides,
  };
  const lines = Object.entries(fields)
    .filter(([, value]) => value !== '')
    .map(([key, value]) => `    ${key}: ${value}`);
  return `  ${name}:\n${lines.join('\n')}\n`;
}

function inventoryYaml(...clusters: string[]): string {
  return `clusters:\n${clusters.join('')}`;
}

/** The problem lines of the ConfigError `parseInventory` throws; fails the test when it accepts the text. */
function problemsOf(text: string): string[] {
  let thrown: unknown;
  try {
    parseInventory(text, '/etc/talos-chatops/clusters.yaml');
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  expect((thrown as ConfigError).message.split('\n')[0]).toBe('The cluster inventory /etc/talos-chatops/clusters.yaml is invalid:');
  return (thrown as ConfigError).problems;
}

describe('parseInventory: valid inventories', () => {
  it('parses the example of DESIGN.md, filling in the optional fields', () => {
    // Act
    const inventory = parseInventory(DESIGN_EXAMPLE, 'clusters.yaml');

    // Assert
    expect(inventory).toEqual({
      clusters: [
        {
          name: 'production',
          environment: 'production',
          channel: 'C0MAINTPRD',
          terraformDir: '/srv/infra/terraform/production',
          controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
          workers: [],
          declared: { controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'], workers: [] },
          installerPlatform: 'nocloud',
          hostLabel: 'example.org/proxmox-host',
          snapshotDir: '/var/backups/talos-etcd',
          operators: ['U0ALICE', 'U0BOB'],
          approvers: ['U0CAROL'],
          defaultForChannel: true,
          longhornNodes: [],
          defaultClassNodes: [],
          fluxStallMinutes: 10,
          requireDistinctApprover: true,
          maintenanceWindows: [],
          allowOutsideWindows: false,
        },
      ],
    });
  });

  it('keeps the optional fields it is given', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('staging', {
        workers: '[10.0.20.21, "fd00::21"]',
        longhorn: 'false',
        fluxStallMinutes: '30',
        longhornNodes: '[10.0.20.21]',
        kubernetesEndpoint: 'https://10.0.20.10:6443',
        fluxPath: './clusters/staging',
        requireDistinctApprover: 'true',
        maintenanceWindows: '[{ start: "0 22 * * 2", durationMinutes: 120, timeZone: Europe/Berlin }]',
      }),
    );

    // Act
    const [cluster] = parseInventory(text, 'clusters.yaml').clusters;

    // Assert
    expect(cluster).toMatchObject({
      name: 'staging',
      workers: ['10.0.20.21', 'fd00::21'],
      longhorn: false,
      fluxStallMinutes: 30,
      longhornNodes: ['10.0.20.21'],
      kubernetesEndpoint: 'https://10.0.20.10:6443',
      fluxPath: './clusters/staging',
      requireDistinctApprover: true,
      maintenanceWindows: [{ start: '0 22 * * 2', durationMinutes: 120, timeZone: 'Europe/Berlin' }],
    });
  });

  it('requires four eyes in production and not in staging when the inventory does not say', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('staging'),
      clusterYaml('production', { environment: 'production', channel: 'C0MAINTPRD', controlPlanes: '[10.0.30.11]', workers: '' }),
    );

    // Act
    const inventory = parseInventory(text, 'clusters.yaml');

    // Assert
    expect(inventory.clusters.map((c) => [c.name, c.requireDistinctApprover])).toEqual([
      ['staging', false],
      ['production', true],
    ]);
  });

  it('keeps four eyes off in production when the inventory turns it off', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('production', {
        environment: 'production',
        channel: 'C0MAINTPRD',
        controlPlanes: '[10.0.30.11]',
        workers: '',
        requireDistinctApprover: 'false',
      }),
    );

    // Act
    const [cluster] = parseInventory(text, 'clusters.yaml').clusters;

    // Assert
    expect(cluster?.requireDistinctApprover).toBe(false);
  });

  it('takes Enterprise Grid user ids (W…) beside workspace user ids and user groups', () => {
    // Act
    const inventory = parseInventory(
      inventoryYaml(clusterYaml('staging', { operators: '[W0ALICE, U0BOB, S0OPS]', approvers: '[W0CAROL]' })),
      'clusters.yaml',
    );

    // Assert
    expect(inventory.clusters[0]).toMatchObject({ operators: ['W0ALICE', 'U0BOB', 'S0OPS'], approvers: ['W0CAROL'] });
  });

  it('lets two clusters share a channel when one of them is its default', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('staging', { defaultForChannel: 'true' }),
      clusterYaml('lab', { controlPlanes: '[10.0.40.11]', workers: '' }),
    );

    // Act
    const inventory = parseInventory(text, 'clusters.yaml');

    // Assert
    expect(inventory.clusters.map((c) => [c.name, c.channel, c.defaultForChannel])).toEqual([
      ['staging', 'C0MAINTSTG', true],
      ['lab', 'C0MAINTSTG', false],
    ]);
  });
});

describe('parseInventory: refusals, one readable line each', () => {
  it('names every missing field of a cluster', () => {
    // Act
    const problems = problemsOf('clusters:\n  production:\n    environment: production\n');

    // Assert
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'clusters.production.channel',
      'clusters.production.terraformDir',
      'clusters.production.installerPlatform',
      'clusters.production.hostLabel',
      'clusters.production.snapshotDir',
      'clusters.production.operators',
      'clusters.production.approvers',
    ]);
  });

  it('refuses a field of the wrong type', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { controlPlanes: '10.0.20.11', defaultForChannel: '"yes"' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.controlPlanes: Invalid input: expected array, received string',
      'clusters.staging.defaultForChannel: Invalid input: expected boolean, received string',
    ]);
  });

  it('refuses an unknown key, naming it, instead of ignoring a typo', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { aprovers: '[U0DAVE]' })));

    // Assert
    expect(problems).toEqual(['clusters.staging: Unrecognized key: "aprovers" (did you mean approvers? Otherwise remove it)']);
  });

  it('refuses a cluster declared twice instead of keeping the last one', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging'), clusterYaml('staging', { channel: 'C0OTHER' })));

    // Assert
    expect(problems).toEqual([
      'line 13: "staging" is given twice in the same mapping (a cluster or a field declared twice); keep one of them',
    ]);
  });

  it('refuses text that is not YAML with its first line only', () => {
    // Act
    const problems = problemsOf('clusters:\n  staging: [\n');

    // Assert
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^not valid YAML: /);
    expect(problems[0]).not.toContain('\n');
  });

  it('refuses an inventory without clusters', () => {
    // Act
    const empty = problemsOf('clusters: {}\n');
    const missing = problemsOf('');

    // Assert
    expect(empty).toEqual(['clusters: declare at least one cluster']);
    expect(missing).toHaveLength(1);
  });

  it('refuses a cluster name that is not lower-case letters, digits and dashes, saying so', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('Prod_1')));

    // Assert
    expect(problems).toEqual(['clusters.Prod_1: cluster names are lower-case letters, digits and dashes']);
  });

  it('refuses an address listed twice in one cluster', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { workers: '[10.0.20.21, 10.0.20.12]' })));

    // Assert
    expect(problems).toEqual(['clusters.staging.controlPlanes: address 10.0.20.12 is listed twice']);
  });

  it('takes the outputs that carry the declared versions, and refuses a second name for the Talos one or a name that is no output name', () => {
    // Act
    const inventory = parseInventory(
      inventoryYaml(clusterYaml('staging', { declaredVersions: '{talos: cluster_talos_version, kubernetes: cluster_k8s_version}' })),
      'clusters.yaml',
    );
    const both = problemsOf(
      inventoryYaml(clusterYaml('staging', { declaredVersions: '{talos: a_version}', terraformOutputs: '{talosVersion: b_version}' })),
    );
    const bad = problemsOf(inventoryYaml(clusterYaml('staging', { declaredVersions: '{kubernetes: "not an output"}' })));

    // Assert
    expect(inventory.clusters[0]!.declaredVersions).toEqual({ talos: 'cluster_talos_version', kubernetes: 'cluster_k8s_version' });
    expect(both).toEqual([
      "clusters.staging.terraformOutputs.talosVersion: both terraformOutputs.talosVersion and declaredVersions.talos name the declared Talos version's output: keep declaredVersions.talos (a_version) and remove terraformOutputs.talosVersion",
    ]);
    expect(bad).toEqual([expect.stringMatching(/^clusters\.staging\.declaredVersions\.kubernetes: must be a Terraform output name/)]);
  });

  it('refuses an address that belongs to two clusters', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('staging'),
      clusterYaml('production', {
        environment: 'production',
        channel: 'C0MAINTPRD',
        controlPlanes: '[10.0.30.11, 10.0.20.13]',
        workers: '',
      }),
    );

    // Act
    const problems = problemsOf(text);

    // Assert
    expect(problems).toEqual([
      'clusters.production: address 10.0.20.13 also belongs to staging; a node belongs to one cluster, remove it from one of them',
    ]);
  });

  it('refuses two defaults for one channel', () => {
    // Arrange
    const text = inventoryYaml(
      clusterYaml('staging', { defaultForChannel: 'true' }),
      clusterYaml('lab', { controlPlanes: '[10.0.40.11]', workers: '', defaultForChannel: 'true' }),
    );

    // Act
    const problems = problemsOf(text);

    // Assert
    expect(problems).toEqual(['channel C0MAINTSTG: defaultForChannel is set on staging and lab; keep it on one']);
  });

  it('refuses the generic installer platform, naming what to use', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { installerPlatform: 'installer' })));

    // Assert
    expect(problems).toEqual(['clusters.staging.installerPlatform: name the platform (nocloud, metal…), never the generic installer']);
  });

  it('refuses a platform that is not an Image Factory platform name', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { installerPlatform: 'factory.talos.dev/nocloud-installer' })));

    // Assert
    expect(problems).toEqual(['clusters.staging.installerPlatform: must be an Image Factory platform such as nocloud or metal']);
  });

  it('refuses a channel that is neither an id nor a #name', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { channel: 'maintenance' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.channel: must be a Slack channel id such as C0MAINTPRD, or a channel name such as #maint-production',
    ]);
  });

  it('takes a #channel and @handles as written, for the bot to resolve through Slack at start', () => {
    // Act
    const inventory = parseInventory(
      inventoryYaml(
        clusterYaml('staging', { channel: '"#maint-staging"', operators: '[U0ALICE, "@bob"]', approvers: '["@sre-approvers"]' }),
      ),
      'clusters.yaml',
    );

    // Assert
    expect(inventory.clusters[0]).toMatchObject({
      channel: '#maint-staging',
      operators: ['U0ALICE', '@bob'],
      approvers: ['@sre-approvers'],
    });
  });

  it('refuses bare user names where user or group ids belong, naming the entry', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { operators: '[U0ALICE, "bob"]', approvers: '[carol]' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.operators.1: must be a Slack user id (U…, or W… on Enterprise Grid), a user-group id (S…), or a handle such as @alice or @sre-approvers',
      'clusters.staging.approvers.0: must be a Slack user id (U…, or W… on Enterprise Grid), a user-group id (S…), or a handle such as @alice or @sre-approvers',
    ]);
  });

  it('refuses a user id of another kind, such as a bot (B…) or a channel (C…)', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { operators: '[B0BOT]', approvers: '[C0MAINTSTG]' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.operators.0: must be a Slack user id (U…, or W… on Enterprise Grid), a user-group id (S…), or a handle such as @alice or @sre-approvers',
      'clusters.staging.approvers.0: must be a Slack user id (U…, or W… on Enterprise Grid), a user-group id (S…), or a handle such as @alice or @sre-approvers',
    ]);
  });

  it('refuses empty operator and approver lists', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { operators: '[]', approvers: '[]' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.operators: name at least one operator',
      'clusters.staging.approvers: name at least one approver',
    ]);
  });

  it('takes a cluster without node lists: the bot finds its nodes, and the names and classes it is given are checked then', () => {
    // Act
    const inventory = parseInventory(
      inventoryYaml(
        clusterYaml('staging', {
          controlPlanes: '',
          workers: '',
          nodeNames: '{10.0.20.11: talos-stg-cp-1}',
          longhornNodes: '[10.0.20.21]',
        }),
      ),
      'clusters.yaml',
    );

    // Assert
    const staging = inventory.clusters[0]!;
    expect([staging.controlPlanes, staging.workers, staging.declared]).toEqual([[], [], { nodeNames: { '10.0.20.11': 'talos-stg-cp-1' } }]);
  });

  it('checks a node list that is given alone, and takes the names of nodes the other list would hold', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { workers: '', controlPlanes: '[10.0.20.11, 10.0.20.11]' })));
    const named = parseInventory(inventoryYaml(clusterYaml('staging', { workers: '', nodeNames: '{10.0.20.21: talos-stg-w-1}' })), 'x');

    // Assert
    expect(problems).toEqual(['clusters.staging.controlPlanes: address 10.0.20.11 is listed twice']);
    expect(named.clusters[0]!.declared).toEqual({
      controlPlanes: ['10.0.20.11', '10.0.20.12', '10.0.20.13'],
      nodeNames: { '10.0.20.21': 'talos-stg-w-1' },
    });
  });

  it('refuses a cluster without control planes and an address that is not an IP', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { controlPlanes: '[]', workers: '[10.0.20.300]' })));

    // Assert
    expect(problems).toEqual([
      'clusters.staging.controlPlanes: list at least one control-plane address, or leave controlPlanes out',
      'clusters.staging.workers.0: must be an IPv4 or IPv6 address',
    ]);
  });

  it('refuses a Longhorn node that is not a node of the cluster', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { longhornNodes: '[10.0.20.21, 10.0.30.21]' })));

    // Assert
    expect(problems).toEqual(['clusters.staging.longhornNodes: 10.0.30.21 is not a node of this cluster']);
  });

  it('refuses a default-class node that is no node of the cluster or is also a Longhorn node', () => {
    // Act
    const problems = problemsOf(
      inventoryYaml(clusterYaml('staging', { longhornNodes: '[10.0.20.21]', defaultClassNodes: '[10.0.20.21, 10.0.30.21]' })),
    );

    // Assert
    expect(problems).toEqual([
      'clusters.staging.defaultClassNodes: 10.0.20.21 is also in longhornNodes: a node is of one installer class',
      'clusters.staging.defaultClassNodes: 10.0.30.21 is not a node of this cluster',
    ]);
  });

  it('refuses an unknown environment', () => {
    // Act
    const problems = problemsOf(inventoryYaml(clusterYaml('staging', { environment: 'prod' })));

    // Assert
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^clusters\.staging\.environment: .*"staging"\|"production"/);
  });
});

describe('resolveCluster', () => {
  const inventory: Inventory = parseInventory(
    inventoryYaml(
      clusterYaml('production', { environment: 'production', channel: 'C0MAINTPRD', controlPlanes: '[10.0.30.11]', workers: '' }),
      clusterYaml('staging', { defaultForChannel: 'true' }),
      clusterYaml('lab', { controlPlanes: '[10.0.40.11]', workers: '' }),
      clusterYaml('edge-a', { channel: 'C0EDGE', controlPlanes: '[10.0.50.11]', workers: '' }),
      clusterYaml('edge-b', { channel: 'C0EDGE', controlPlanes: '[10.0.60.11]', workers: '' }),
    ),
    'clusters.yaml',
  );

  it('takes a named cluster, wherever the command came from', () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0ELSEWHERE', 'production');

    // Assert
    expect(resolution.ok && resolution.cluster.name).toBe('production');
  });

  it('refuses an unknown name, listing the known clusters', () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0MAINTPRD', 'prod');

    // Assert
    expect(resolution).toEqual({
      ok: false,
      reason: 'There is no cluster named `prod`. Known clusters: production, staging, lab, edge-a, edge-b.',
    });
  });

  it('takes the only cluster of the channel when none is named', () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0MAINTPRD', undefined);

    // Assert
    expect(resolution.ok && resolution.cluster.name).toBe('production');
  });

  it("takes the channel's default when several clusters share it", () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0MAINTSTG', undefined);

    // Assert
    expect(resolution.ok && resolution.cluster.name).toBe('staging');
  });

  it('asks which cluster is meant when a shared channel has no default', () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0EDGE', undefined);

    // Assert
    expect(resolution).toEqual({
      ok: false,
      reason: 'This channel serves several clusters (edge-a, edge-b); name the one you mean, e.g. `/talos health edge-a`.',
    });
  });

  it('refuses a channel that belongs to no cluster, listing the clusters', () => {
    // Act
    const resolution = resolveCluster(inventory, 'C0RANDOM', undefined);

    // Assert
    expect(resolution).toEqual({
      ok: false,
      reason:
        "This channel belongs to no cluster. Run the command in a cluster's maintenance channel, or name the cluster (production, staging, lab, edge-a, edge-b).",
    });
  });
});

describe('allNodes', () => {
  it('lists control planes first, then workers', () => {
    // Arrange
    const [cluster] = parseInventory(
      inventoryYaml(clusterYaml('staging', { workers: '[10.0.20.21, 10.0.20.22]' })),
      'clusters.yaml',
    ).clusters;

    // Act
    const nodes = allNodes(cluster!);

    // Assert
    expect(nodes).toEqual(['10.0.20.11', '10.0.20.12', '10.0.20.13', '10.0.20.21', '10.0.20.22']);
  });
});

describe('parseInventory: every problem of a file at once', () => {
  it('names unknown keys, bad values, keys given twice and the conflicts between clusters in one error', () => {
    // Arrange: each fault alone would stop the start; before, the unknown key hid the conflicts until the next start.
    const text = inventoryYaml(
      clusterYaml('staging', { defaultForChannel: 'true', timezone: 'UTC', fluxStallMinutes: '-1' }),
      clusterYaml('lab', { controlPlanes: '[10.0.20.11]', workers: '', defaultForChannel: 'true', hostLabel: 'a\n    hostLabel: b' }),
    );

    // Act
    const problems = problemsOf(text);

    // Assert
    expect(problems).toEqual([
      expect.stringMatching(/^line \d+: "hostLabel" is given twice in the same mapping .*; keep one of them$/),
      'clusters.staging.fluxStallMinutes: Too small: expected number to be >0',
      'clusters.staging: Unrecognized key: "timezone" (remove it; the keys allowed here are in docs/configuring.md)',
      'clusters.lab: address 10.0.20.11 also belongs to staging; a node belongs to one cluster, remove it from one of them',
      'channel C0MAINTSTG: defaultForChannel is set on staging and lab; keep it on one',
    ]);
  });

  it('suggests the key an unknown one misspells, at any depth', () => {
    // Act
    const problems = problemsOf(
      inventoryYaml(clusterYaml('staging', { maintenanceWindows: '[{ start: "0 22 * * 2", durationMinutes: 60, timezone: UTC }]' })),
    );

    // Assert
    expect(problems).toEqual([
      'clusters.staging.maintenanceWindows.0.timeZone: Invalid input: expected string, received undefined',
      'clusters.staging.maintenanceWindows.0: Unrecognized key: "timezone" (did you mean timeZone? Otherwise remove it)',
    ]);
  });

  it('takes `always` for the maintenance windows, and says what it takes for any other word', () => {
    // Act
    const always = parseInventory(inventoryYaml(clusterYaml('production', { maintenanceWindows: 'always' })), 'clusters.yaml');
    const problems = problemsOf(inventoryYaml(clusterYaml('production', { maintenanceWindows: 'sometimes' })));

    // Assert
    expect(always.clusters[0]?.maintenanceWindows).toBe('always');
    expect(problems).toEqual([
      'clusters.production.maintenanceWindows: must be a list of windows ({start, durationMinutes, timeZone}) or the word always',
    ]);
  });
});
