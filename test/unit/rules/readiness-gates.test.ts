import type { V1Namespace, V1Node } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  controlPlaneSchedulingGate,
  controlPlaneTopologyGate,
  endpointHost,
  evaluateReadiness,
  fluxPathGate,
  hostLabelGate,
  kubernetesEndpointGate,
  longhornExtensionsGate,
  longhornNamespaceGate,
  talosEndpointsGate,
  type ReadinessCluster,
  type ReadinessObservations,
} from '../../../src/rules/readiness-gates.ts';
import { rehearsalGate, type RehearsalRecord, type StagingRecords } from '../../../src/rules/readiness-manual.ts';
import type { NodeVips } from '../../../src/talos/machine-config-vips.ts';

const HOST = 'example.org/proxmox-host';

const PRODUCTION: ReadinessCluster = {
  name: 'production',
  controlPlanes: ['10.0.30.11', '10.0.30.12', '10.0.30.13'],
  workers: [],
  hostLabel: HOST,
  kubernetesEndpoint: 'https://10.0.30.10:6443',
  fluxPath: './clusters/production',
  schedules: { snapshot: { cron: '0 * * * *', timeZone: 'UTC' } },
};

interface NodeOptions {
  controlPlane?: boolean;
  host?: string;
  taints?: { key: string; effect: string }[];
}

function node(name: string, ip: string, options: NodeOptions = {}): V1Node {
  const labels: Record<string, string> = { 'kubernetes.io/hostname': name };
  if (options.controlPlane !== false) labels['node-role.kubernetes.io/control-plane'] = '';
  if (options.host !== undefined) labels[HOST] = options.host;
  return {
    metadata: { name, labels },
    spec: options.taints === undefined ? {} : { taints: options.taints },
    status: {
      addresses: [
        { type: 'InternalIP', address: ip },
        { type: 'Hostname', address: name },
      ],
    },
  };
}

const ok = <T>(value: T) => ({ ok: true as const, value });
const failed = (error: string) => ({ ok: false as const, error });

const THREE = [
  node('cp-1', '10.0.30.11', { host: 'pve1' }),
  node('cp-2', '10.0.30.12', { host: 'pve2' }),
  node('cp-3', '10.0.30.13', { host: 'pve3' }),
];
const NO_SCHEDULE = [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }];

describe('controlPlaneTopologyGate', () => {
  it('passes three control planes on three hosts', () => {
    const gate = controlPlaneTopologyGate(PRODUCTION, ok(THREE));
    expect(gate.status).toBe('passed');
    expect(gate.summary).toBe('3 control planes on 3 hosts (pve1, pve2, pve3)');
    expect(gate.evidence[0]).toBe(`cp-1  control-plane  10.0.30.11  ${HOST}=pve1`);
  });

  it('fails two control planes sharing a host', () => {
    const nodes = [THREE[0]!, THREE[1]!, node('cp-3', '10.0.30.13', { host: 'pve1' })];
    const gate = controlPlaneTopologyGate(PRODUCTION, ok(nodes));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('cp-1, cp-3 share the host pve1');
  });

  it('fails a single control plane and a short inventory', () => {
    const cluster = { ...PRODUCTION, controlPlanes: ['10.0.20.204'], workers: ['10.0.20.205'] };
    const nodes = [
      node('stg-cp-1', '10.0.20.204', { host: 'pve5' }),
      node('stg-w-1', '10.0.20.205', { host: 'pve5', controlPlane: false }),
    ];
    const gate = controlPlaneTopologyGate(cluster, ok(nodes));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toMatch(
      /^1 control plane on 1 host \(pve5\): Kubernetes lists 1 control plane, 3 are needed; the inventory lists 1 control-plane address\./,
    );
    expect(gate.evidence).toContain('1 dedicated worker: add workers only when CPU or memory runs short');
  });

  it('fails when a control plane has no host label, since its host is unknown', () => {
    const nodes = [THREE[0]!, THREE[1]!, node('cp-3', '10.0.30.13')];
    const gate = controlPlaneTopologyGate(PRODUCTION, ok(nodes));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain(`cp-3 has no ${HOST} label`);
  });

  it('fails, never passes, when the nodes could not be read', () => {
    expect(controlPlaneTopologyGate(PRODUCTION, failed('HTTP-Code: 500'))).toEqual({
      id: 'control-plane-topology',
      title: 'Three control planes on three Proxmox hosts',
      status: 'failed',
      summary: 'could not read the Kubernetes nodes: HTTP-Code: 500',
      evidence: ['HTTP-Code: 500'],
    });
  });
});

describe('controlPlaneSchedulingGate', () => {
  it('passes without the control-plane NoSchedule taint', () => {
    expect(controlPlaneSchedulingGate(ok(THREE)).status).toBe('passed');
  });

  it('fails a control plane tainted NoSchedule and says what to set', () => {
    const nodes = [THREE[0]!, node('cp-2', '10.0.30.12', { host: 'pve2', taints: NO_SCHEDULE })];
    const gate = controlPlaneSchedulingGate(ok(nodes));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      'cp-2 is tainted node-role.kubernetes.io/control-plane:NoSchedule. Set allowSchedulingOnControlPlanes: true in the machine configuration',
    );
  });

  it('ignores other taints such as a cordon', () => {
    const cordoned = node('cp-1', '10.0.30.11', { taints: [{ key: 'node.kubernetes.io/unschedulable', effect: 'NoSchedule' }] });
    expect(controlPlaneSchedulingGate(ok([cordoned])).status).toBe('passed');
  });

  it('fails when Kubernetes lists no control plane', () => {
    expect(controlPlaneSchedulingGate(ok([node('w-1', '10.0.30.21', { controlPlane: false })])).summary).toBe(
      'Kubernetes lists no control-plane node',
    );
  });
});

describe('endpointHost', () => {
  it.each([
    ['https://10.0.30.10:6443', '10.0.30.10'],
    ['10.0.30.10:6443', '10.0.30.10'],
    ['10.0.30.10', '10.0.30.10'],
    ['https://[fd00::10]:6443', 'fd00::10'],
    ['fd00::10', 'fd00::10'],
    ['https://kube.example.org:6443', 'kube.example.org'],
  ])('%s → %s', (endpoint, host) => {
    expect(endpointHost(endpoint)).toBe(host);
  });

  it('is undefined for text that is no endpoint', () => {
    expect(endpointHost('https://')).toBeUndefined();
  });
});

/** Every control plane's machine configuration declaring the same virtual IP. */
function vips(ip: string | undefined, overrides: Record<string, NodeVips> = {}): Map<string, NodeVips> {
  const each = ['10.0.30.11', '10.0.30.12', '10.0.30.13'].map((a): [string, NodeVips] => [a, { vips: ip === undefined ? [] : [ip] }]);
  return new Map([...each, ...Object.entries(overrides)]);
}
const VIPS = ok(vips('10.0.30.10'));

describe('kubernetesEndpointGate', () => {
  it('passes the virtual IP every control plane declares in its machine configuration', () => {
    const gate = kubernetesEndpointGate(PRODUCTION, ok(THREE), undefined, VIPS);
    expect(gate.status).toBe('passed');
    expect(gate.summary).toBe("https://10.0.30.10:6443: 10.0.30.10 is the virtual IP every control plane's machine configuration declares");
    expect(gate.evidence).toContain('10.0.30.11  machine.network.interfaces[].vip.ip: 10.0.30.10');
  });

  it('does not infer a virtual IP from an address no node has: no control plane declaring it fails', () => {
    const gate = kubernetesEndpointGate(PRODUCTION, ok(THREE), undefined, ok(vips(undefined)));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      "https://10.0.30.10:6443: 10.0.30.10 is no Talos virtual IP (no control plane declares a virtual IP). Use one: set machine.network.interfaces[].vip.ip to it in every control plane's machine configuration",
    );
  });

  it('fails a virtual IP only some control planes declare, naming the others', () => {
    const gate = kubernetesEndpointGate(PRODUCTION, ok(THREE), undefined, ok(vips('10.0.30.10', { '10.0.30.13': { vips: [] } })));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toMatch(/^https:\/\/10\.0\.30\.10:6443: 10\.0\.30\.13 do not declare the virtual IP 10\.0\.30\.10/);
  });

  it('fails when a control plane declares another virtual IP, naming it', () => {
    const gate = kubernetesEndpointGate(PRODUCTION, ok(THREE), undefined, ok(vips('10.0.30.9')));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('the control planes declare 10.0.30.9 instead');
  });

  it('fails when a machine configuration cannot be read, and leaves it to a person when none was read', () => {
    const unread = kubernetesEndpointGate(
      PRODUCTION,
      ok(THREE),
      undefined,
      ok(vips('10.0.30.10', { '10.0.30.12': { unread: 'connection refused' } })),
    );
    expect(unread.status).toBe('failed');
    expect(unread.evidence).toContain('10.0.30.12  machine configuration unread: connection refused');
    expect(kubernetesEndpointGate(PRODUCTION, ok(THREE), undefined, failed('timed out after 5s')).status).toBe('failed');
    expect(kubernetesEndpointGate(PRODUCTION, ok(THREE)).status).toBe('manual');
  });

  it('fails a node address and names the node', () => {
    const gate = kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: 'https://10.0.30.12:6443' }, ok(THREE));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toMatch(
      /^https:\/\/10\.0\.30\.12:6443 is the address of node cp-2 \(10\.0\.30\.12\): the API goes down with that node/,
    );
  });

  it('still compares with the inventory when the nodes could not be read', () => {
    const gate = kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: '10.0.30.11:6443' }, failed('timed out after 5s'));
    expect(gate.status).toBe('failed');
    expect(gate.evidence).toContain('Kubernetes node addresses unknown (timed out after 5s); compared with the inventory only');
  });

  it('leaves an undeclared endpoint to a person', () => {
    const gate = kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: undefined }, ok(THREE));
    expect(gate.status).toBe('manual');
    expect(gate.summary).toContain('declares no kubernetesEndpoint');
  });

  it('leaves a DNS name to a person, since it may resolve to a node', () => {
    expect(kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: 'https://kube.example.org:6443' }, ok(THREE)).status).toBe('manual');
  });
});

describe('kubernetesEndpointGate with the kubeconfig Terraform outputs', () => {
  it("judges the kubeconfig's server, not the inventory: a node address fails even when the inventory declares a virtual IP", () => {
    const gate = kubernetesEndpointGate(PRODUCTION, ok(THREE), ok('https://10.0.30.11:6443'));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      'https://10.0.30.11:6443 (the server of the kubeconfig Terraform outputs) is the address of node cp-1 (10.0.30.11): the API goes down with that node. Use a Talos Layer 2 virtual IP as the Kubernetes endpoint',
    );
    expect(gate.evidence).toEqual([
      'kubeconfig server (tofu output -raw talos_kubeconfig): https://10.0.30.11:6443',
      'inventory kubernetesEndpoint: https://10.0.30.10:6443',
      'node addresses: 10.0.30.11, 10.0.30.12, 10.0.30.13',
    ]);
  });

  it('passes a virtual IP the kubeconfig uses although the inventory declares none', () => {
    const gate = kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: undefined }, ok(THREE), ok('https://10.0.30.10:6443'), VIPS);
    expect(gate.status).toBe('passed');
    expect(gate.summary).toBe(
      "https://10.0.30.10:6443 (the server of the kubeconfig Terraform outputs): 10.0.30.10 is the virtual IP every control plane's machine configuration declares",
    );
  });

  it('fails an inventory that declares another endpoint than the kubeconfig uses', () => {
    const gate = kubernetesEndpointGate(
      { ...PRODUCTION, kubernetesEndpoint: 'https://10.0.30.9:6443' },
      ok(THREE),
      ok('https://10.0.30.10:6443'),
    );
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain(
      "the inventory's kubernetesEndpoint https://10.0.30.9:6443 is not the server of the kubeconfig Terraform outputs (https://10.0.30.10:6443): correct kubernetesEndpoint in the inventory",
    );
  });

  it('judges the inventory when the kubeconfig reaches the API through a local tunnel, or cannot be read', () => {
    const tunnel = kubernetesEndpointGate(
      { ...PRODUCTION, kubernetesEndpoint: 'https://10.0.30.12:6443' },
      ok(THREE),
      ok('http://127.0.0.1:41234'),
    );
    expect(tunnel.status).toBe('failed');
    expect(tunnel.summary).toMatch(/^https:\/\/10\.0\.30\.12:6443 is the address of node cp-2/);
    expect(tunnel.evidence[0]).toBe(
      "kubeconfig server: http://127.0.0.1:41234 (a local tunnel or proxy, which does not show the cluster's endpoint)",
    );
    const unreadable = kubernetesEndpointGate(PRODUCTION, ok(THREE), failed('not a kubeconfig'), VIPS);
    expect(unreadable.status).toBe('passed');
    expect(unreadable.evidence[0]).toBe("kubeconfig server unknown (not a kubeconfig); the inventory's declaration is judged");
  });

  it('leaves it to a person when neither shows the endpoint', () => {
    const gate = kubernetesEndpointGate({ ...PRODUCTION, kubernetesEndpoint: undefined }, ok(THREE), ok(undefined));
    expect(gate.status).toBe('manual');
    expect(gate.evidence).toEqual(['kubeconfig server: <none>']);
  });

  it('gives the talosctl endpoints gate the virtual IP the kubeconfig uses', () => {
    const gate = talosEndpointsGate(
      { ...PRODUCTION, kubernetesEndpoint: undefined },
      ok(['10.0.30.10', '10.0.30.11', '10.0.30.12', '10.0.30.13']),
      ok(THREE),
      ok('https://10.0.30.10:6443'),
    );
    expect(gate.evidence).toContain('also lists the virtual IP 10.0.30.10, which is unreachable when etcd loses quorum');
  });
});

describe('talosEndpointsGate', () => {
  it('passes when every control-plane address is an endpoint, ports allowed', () => {
    const gate = talosEndpointsGate(PRODUCTION, ok(['10.0.30.11:50000', '10.0.30.12', '10.0.30.13']), ok(THREE));
    expect(gate.status).toBe('passed');
    expect(gate.summary).toBe('the talosconfig lists all 3 control-plane addresses');
  });

  it('fails an endpoint list that is only the virtual IP', () => {
    const gate = talosEndpointsGate(PRODUCTION, ok(['10.0.30.10']), ok(THREE));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('lack 10.0.30.11, 10.0.30.12, 10.0.30.13');
    expect(gate.evidence).toContain('also lists the virtual IP 10.0.30.10, which is unreachable when etcd loses quorum');
  });

  it('requires control planes that Kubernetes knows even when the inventory misses them', () => {
    const cluster = { ...PRODUCTION, controlPlanes: ['10.0.30.11', '10.0.30.12'] };
    const gate = talosEndpointsGate(cluster, ok(['10.0.30.11', '10.0.30.12']), ok(THREE));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('lack 10.0.30.13');
  });

  it('fails when the talosconfig could not be read', () => {
    expect(talosEndpointsGate(PRODUCTION, failed('not valid YAML'), ok(THREE)).status).toBe('failed');
  });
});

describe('hostLabelGate', () => {
  it('passes when every node names its host', () => {
    expect(hostLabelGate(PRODUCTION, ok(THREE)).summary).toBe(`3 nodes carry ${HOST} (pve1, pve2, pve3)`);
  });

  it('fails a worker without the label', () => {
    const gate = hostLabelGate(PRODUCTION, ok([...THREE, node('w-1', '10.0.30.21', { controlPlane: false })]));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(`w-1 lacks the ${HOST} label: add it through machine.nodeLabels`);
  });

  it('treats an empty label as no label', () => {
    expect(hostLabelGate(PRODUCTION, ok([node('cp-1', '10.0.30.11', { host: '' })])).status).toBe('failed');
  });
});

const ext = (nodeAddress: string | undefined, name: string) => ({ node: nodeAddress, name, version: 'v1' });
const LONGHORN = (address?: string) => [ext(address, 'iscsi-tools'), ext(address, 'util-linux-tools')];

describe('longhornExtensionsGate', () => {
  it('passes when every inventory node has both extensions', () => {
    const gate = longhornExtensionsGate(PRODUCTION, ok({ extensions: PRODUCTION.controlPlanes.flatMap(LONGHORN), nodeErrors: [] }));
    expect(gate.status).toBe('passed');
    expect(gate.evidence[0]).toBe('10.0.30.11  iscsi-tools v1, util-linux-tools v1');
  });

  it('fails a node missing one extension and a node that lists none', () => {
    const extensions = [...LONGHORN('10.0.30.11'), ext('10.0.30.12', 'iscsi-tools')];
    const gate = longhornExtensionsGate(PRODUCTION, ok({ extensions, nodeErrors: [] }));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toMatch(
      /^10\.0\.30\.12 lacks siderolabs\/util-linux-tools; 10\.0\.30\.13 lacks siderolabs\/iscsi-tools, siderolabs\/util-linux-tools\./,
    );
  });

  it('fails a node that did not answer rather than passing it', () => {
    const nodeErrors = [{ node: '10.0.30.13', message: 'rpc error: code = Unavailable desc = connection refused', code: 'Unavailable' }];
    const gate = longhornExtensionsGate(PRODUCTION, ok({ extensions: ['10.0.30.11', '10.0.30.12'].flatMap(LONGHORN), nodeErrors }));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('10.0.30.13 did not answer: rpc error');
  });

  it('reads an answer without a node as that of the only node', () => {
    const single = { ...PRODUCTION, controlPlanes: ['10.0.20.204'] };
    expect(longhornExtensionsGate(single, ok({ extensions: LONGHORN(), nodeErrors: [] })).status).toBe('passed');
  });
});

describe('longhornNamespaceGate', () => {
  const ns = (enforce?: string): V1Namespace => {
    const labels: Record<string, string> = enforce === undefined ? {} : { 'pod-security.kubernetes.io/enforce': enforce };
    return { metadata: { name: 'longhorn-system', labels } };
  };

  it('passes the privileged level', () => {
    expect(longhornNamespaceGate(ok(ns('privileged'))).status).toBe('passed');
  });

  it('fails baseline and says which label to set', () => {
    const gate = longhornNamespaceGate(ok(ns('baseline')));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe('longhorn-system enforces baseline: label it pod-security.kubernetes.io/enforce=privileged');
  });

  it('fails an unlabelled namespace', () => {
    expect(longhornNamespaceGate(ok(ns())).summary).toContain('enforces the cluster default');
  });

  it('fails when Longhorn is not installed', () => {
    expect(longhornNamespaceGate(ok(undefined)).summary).toBe('there is no longhorn-system namespace: Longhorn is not installed');
  });
});

const kustomization = (name: string, path?: string) => ({
  metadata: { name, namespace: 'flux-system' },
  spec: path === undefined ? {} : { path },
});

describe('fluxPathGate', () => {
  it('passes paths under the cluster path, written either way', () => {
    const gate = fluxPathGate(
      PRODUCTION,
      ok([kustomization('flux-system', './clusters/production'), kustomization('apps', 'clusters/production/apps/')]),
    );
    expect(gate.status).toBe('passed');
    expect(gate.summary).toBe('2 Kustomizations reconcile from ./clusters/production');
  });

  it('fails a path of another cluster, including one that only shares a prefix', () => {
    const gate = fluxPathGate(
      PRODUCTION,
      ok([
        kustomization('flux-system', './clusters/production'),
        kustomization('apps', './clusters/production-old/apps'),
        kustomization('infra', './clusters/staging/infra'),
      ]),
    );
    expect(gate.status).toBe('failed');
    expect(gate.summary).toBe(
      "flux-system/apps reconciles ./clusters/production-old/apps; flux-system/infra reconciles ./clusters/staging/infra: outside ./clusters/production. Point it at this cluster's path",
    );
  });

  it('fails a Kustomization of the repository root', () => {
    expect(fluxPathGate(PRODUCTION, ok([kustomization('everything')])).status).toBe('failed');
  });

  it('lists the paths seen for a person when the inventory declares none', () => {
    const gate = fluxPathGate(
      { ...PRODUCTION, fluxPath: undefined },
      ok([kustomization('apps', './clusters/staging/apps'), kustomization('flux-system', './clusters/staging')]),
    );
    expect(gate.status).toBe('manual');
    expect(gate.summary).toContain('(./clusters/staging, ./clusters/staging/apps)');
  });

  it('fails a cluster without Flux', () => {
    expect(fluxPathGate(PRODUCTION, ok([])).summary).toBe("production has no Flux Kustomizations: bootstrap Flux with the cluster's path");
  });
});

const record = (id: string, kind: string, state: string, endedAt = '2026-11-02T10:15:00.000Z'): RehearsalRecord => ({
  id,
  kind,
  state,
  createdAt: '2026-11-02T10:00:00.000Z',
  endedAt,
});
const staging = (operations: RehearsalRecord[], controlPlanes = 3): StagingRecords => ({
  cluster: 'staging',
  controlPlanes,
  operations: ok(operations),
});

describe('rehearsalGate', () => {
  it('ticks off completed upgrades and notes a snapshot as half an etcd restore', () => {
    const gate = rehearsalGate(
      staging([
        record('op-k8s1', 'k8s-upgrade', 'completed'),
        record('op-tal1', 'talos-upgrade', 'completed'),
        record('op-snap1', 'snapshot', 'completed'),
      ]),
    );
    expect(gate.status).toBe('manual');
    expect(gate.summary).toBe("the bot's records of staging show 2 of 8 (Talos upgrade, Kubernetes upgrade): confirm the rest by hand");
    expect(gate.evidence.slice(0, 4)).toEqual([
      '☑ Talos upgrade: op-tal1 completed 2026-11-02 10:15 UTC',
      '☑ Kubernetes upgrade: op-k8s1 completed 2026-11-02 10:15 UTC',
      "☐ node replacement: no completed node-replace on staging in the bot's records. The runbook's rehearsal replaces a control plane on a staging of three control planes.",
      '◐ etcd restore: etcd snapshot op-snap1 completed 2026-11-02 10:15 UTC; the restore itself: check by hand; or let the bot rehearse it: /talos rehearse etcd-restore staging',
    ]);
  });

  it('ticks off the etcd restore from the latest completed rehearsal, with its date', () => {
    // Arrange: a failed rehearsal after a completed one, and a snapshot.
    const gate = rehearsalGate(
      staging([
        record('op-rst3', 'etcd-restore', 'failed', '2026-11-05T08:00:00.000Z'),
        record('op-rst2', 'etcd-restore', 'completed', '2026-11-04T12:30:00.000Z'),
        record('op-rst1', 'etcd-restore', 'completed'),
        record('op-snap1', 'snapshot', 'completed'),
      ]),
    );

    // Assert
    expect(gate.evidence[3]).toBe('☑ etcd restore: op-rst2 completed 2026-11-04 12:30 UTC');
    expect(gate.summary).toBe("the bot's records of staging show 1 of 8 (etcd restore): confirm the rest by hand");
  });

  it('does not tick the etcd restore for a rehearsal that did not complete', () => {
    const gate = rehearsalGate(staging([record('op-rst1', 'etcd-restore', 'failed')]));
    expect(gate.evidence[3]).toBe(
      "☐ etcd restore: check by hand (no completed etcd snapshot on staging in the bot's records); or let the bot rehearse it: /talos rehearse etcd-restore staging",
    );
  });

  it('counts only completed operations, the newest first', () => {
    const gate = rehearsalGate(
      staging([
        record('op-new', 'talos-upgrade', 'failed'),
        record('op-mid', 'talos-upgrade', 'completed', '2026-11-03T09:00:00.000Z'),
        record('op-old', 'talos-upgrade', 'completed'),
      ]),
    );
    expect(gate.evidence[0]).toBe('☑ Talos upgrade: op-mid completed 2026-11-03 09:00 UTC');
    expect(gate.evidence[1]).toBe("☐ Kubernetes upgrade: no completed k8s-upgrade on staging in the bot's records");
  });

  it('warns that a single-control-plane staging cannot rehearse a node replacement', () => {
    expect(rehearsalGate(staging([], 1)).evidence[2]).toContain('staging has one control plane: expand it to three first');
  });

  const replacement = (
    id: string,
    state: string,
    nodeRole: string | undefined,
    clusterControlPlanes: number | undefined,
    endedAt?: string,
  ) => ({
    ...record(id, 'node-replace', state, endedAt),
    target: { ...(nodeRole ? { nodeRole } : {}), ...(clusterControlPlanes === undefined ? {} : { clusterControlPlanes }) },
  });

  it('ticks off the node replacement from the latest completed control-plane replacement on a staging of three', () => {
    const gate = rehearsalGate(
      staging([
        replacement('op-rep2', 'failed', 'controlplane', 3),
        replacement('op-rep1', 'completed', 'controlplane', 3, '2026-11-04T08:30:00.000Z'),
        replacement('op-rep0', 'completed', 'controlplane', 3, '2026-11-01T08:30:00.000Z'),
      ]),
    );
    expect(gate.evidence[2]).toBe('☑ node replacement: op-rep1 replaced a control plane of 3 and completed 2026-11-04 08:30 UTC');
    expect(gate.summary).toContain('show 1 of 8 (node replacement)');
    // Judged by the shape recorded when it ran: it counts even if staging has since shrunk.
    expect(rehearsalGate(staging([replacement('op-rep1', 'completed', 'controlplane', 3)], 1)).evidence[2]).toMatch(
      /^☑ node replacement: op-rep1/,
    );
  });

  it('does not count a worker, a control plane of a smaller staging, or a record that does not say', () => {
    const worker = rehearsalGate(staging([replacement('op-w', 'completed', 'worker', 3)]));
    expect(worker.evidence[2]).toBe(
      "☐ node replacement: op-w completed 2026-11-02 10:15 UTC but does not count: it replaced a worker. The runbook's rehearsal replaces a control plane on a staging of three control planes.",
    );
    expect(worker.summary).toContain('show none of the 8');
    // Staging's shape now does not make an old replacement count.
    const small = rehearsalGate(staging([replacement('op-cp', 'completed', 'controlplane', 1)], 3));
    expect(small.evidence[2]).toContain('op-cp completed 2026-11-02 10:15 UTC but does not count: the staging had one control plane then');
    const older = rehearsalGate(staging([record('op-old', 'node-replace', 'completed')]));
    expect(older.evidence[2]).toContain('does not count: its record does not say which role the node had');
    const unknownShape = rehearsalGate(staging([replacement('op-cp', 'completed', 'controlplane', undefined)]));
    expect(unknownShape.evidence[2]).toContain('does not say how many control planes the staging had then');
    // A worker replaced after a counted rehearsal does not undo it.
    const both = rehearsalGate(
      staging([replacement('op-w', 'completed', 'worker', 1), replacement('op-cp', 'completed', 'controlplane', 3)]),
    );
    expect(both.evidence[2]).toMatch(/^☑ node replacement: op-cp/);
  });

  it('does not count a failed or cancelled node replacement', () => {
    const gate = rehearsalGate(
      staging([replacement('op-rep2', 'failed', 'controlplane', 3), replacement('op-rep3', 'cancelled', 'controlplane', 3)]),
    );
    expect(gate.evidence[2]).toBe(
      "☐ node replacement: no completed node-replace on staging in the bot's records. The runbook's rehearsal replaces a control plane on a staging of three control planes.",
    );
  });

  it('asks for every rehearsal by hand without a staging cluster or its records', () => {
    expect(rehearsalGate(undefined).summary).toContain('no staging cluster');
    const unreadable = rehearsalGate({ cluster: 'staging', controlPlanes: 1, operations: failed('redis down') });
    expect(unreadable.summary).toContain("could not read the bot's records of staging (redis down)");
    expect(unreadable.evidence).toHaveLength(8);
  });
});

describe('evaluateReadiness', () => {
  const healthy: ReadinessObservations = {
    controlPlaneVips: VIPS,
    monitoring: {
      rules: ok([
        { metadata: { name: 'talos', namespace: 'monitoring' }, spec: { groups: [{ rules: [{ alert: 'TalosNodeNotReady' }] }] } },
      ]),
      serviceMonitors: ok([{ metadata: { name: 'node-exporter', namespace: 'monitoring' } }]),
    },
    nodes: ok(THREE),
    talosEndpoints: ok(PRODUCTION.controlPlanes),
    extensions: ok({ extensions: PRODUCTION.controlPlanes.flatMap(LONGHORN), nodeErrors: [] }),
    longhornNamespace: ok({ metadata: { name: 'longhorn-system', labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } }),
    kustomizations: ok([kustomization('flux-system', './clusters/production')]),
    longhornSettings: ok([]),
    longhornNodes: ok(
      THREE.map((n) => ({ metadata: { name: n.metadata!.name! }, spec: { disks: { 'default-disk-1': { path: '/var/mnt/longhorn' } } } })),
    ),
    userVolumes: ok(new Map(THREE.map((n) => [n.metadata!.name!, new Map([['longhorn', 'partition']])]))),
    backups: { recurringJobs: ok(undefined), cnpgClusters: ok(undefined), scheduledBackups: ok(undefined) },
    staging: staging([]),
  };

  it('is not ready while a gate only a person can judge waits for a sign-off, though none failed', () => {
    const report = evaluateReadiness(PRODUCTION, healthy);
    expect(report.ready).toBe(false);
    expect(report.failed).toEqual([]);
    expect(report.counts).toEqual({ passed: 10, failed: 0, manual: 5, 'signed-off': 0 });
    expect(report.gates.map((g) => g.id)).toEqual([
      'control-plane-topology',
      'control-plane-scheduling',
      'kubernetes-endpoint',
      'talosctl-endpoints',
      'host-labels',
      'host-placement',
      'longhorn-storage',
      'longhorn-extensions',
      'longhorn-namespace',
      'flux-path',
      'flux-bootstrap',
      'out-of-cluster-dependencies',
      'backups-scheduled',
      'staging-rehearsals',
      'monitoring',
    ]);
  });

  const shape = { controlPlanes: [...PRODUCTION.controlPlanes], workers: [...PRODUCTION.workers] };
  const now = new Date('2026-12-01T10:00:00.000Z');
  const DAY = 86_400_000;
  const signOff = (gate: string, at = '2026-11-30T10:00:00.000Z', signedShape = shape) => ({
    cluster: PRODUCTION.name,
    gate,
    by: 'U0CAROL',
    at,
    evidence: `https://wiki.example.org/${gate}`,
    shape: signedShape,
  });
  const BY_HAND = ['flux-bootstrap', 'out-of-cluster-dependencies', 'backups-scheduled', 'staging-rehearsals', 'monitoring'];

  it('is ready once every by-hand gate is signed off for the cluster as it is, with who, when and the evidence', () => {
    const report = evaluateReadiness(PRODUCTION, {
      ...healthy,
      signOffs: { given: BY_HAND.map((g) => signOff(g)), shape, now, maxAgeMs: 90 * DAY },
    });
    expect(report.ready).toBe(true);
    expect(report.counts).toEqual({ passed: 10, failed: 0, manual: 0, 'signed-off': 5 });
    expect(report.gates.find((g) => g.id === 'monitoring')?.signOff).toEqual({
      by: 'U0CAROL',
      at: '2026-11-30T10:00:00.000Z',
      evidence: 'https://wiki.example.org/monitoring',
    });
  });

  it('does not count a sign-off whose evidence aged out or whose cluster changed shape, and says why', () => {
    const grown = { ...shape, workers: ['10.0.30.21'] };
    const report = evaluateReadiness(PRODUCTION, {
      ...healthy,
      signOffs: {
        given: [
          ...BY_HAND.slice(2).map((g) => signOff(g)),
          signOff('out-of-cluster-dependencies', '2026-08-01T10:00:00.000Z'),
          signOff('flux-bootstrap', undefined, grown),
        ],
        shape,
        now,
        maxAgeMs: 90 * DAY,
      },
    });
    expect(report.ready).toBe(false);
    expect(report.counts).toEqual({ passed: 10, failed: 0, manual: 2, 'signed-off': 3 });
    expect(report.gates.find((g) => g.id === 'out-of-cluster-dependencies')?.signOff?.lapse).toContain('older than 90 days');
    expect(report.gates.find((g) => g.id === 'flux-bootstrap')?.signOff?.lapse).toContain('changed shape');
  });

  it('never lets a sign-off pass a gate the bot checked and failed', () => {
    const report = evaluateReadiness(PRODUCTION, {
      ...healthy,
      longhornNamespace: ok(undefined),
      signOffs: { given: [...BY_HAND, 'longhorn-namespace'].map((g) => signOff(g)), shape, now, maxAgeMs: 90 * DAY },
    });
    expect(report.ready).toBe(false);
    expect(report.gates.find((g) => g.id === 'longhorn-namespace')?.status).toBe('failed');
  });

  it('is not ready when one gate failed, and names it', () => {
    const report = evaluateReadiness(PRODUCTION, { ...healthy, longhornNamespace: ok(undefined) });
    expect(report.ready).toBe(false);
    expect(report.failed).toEqual(['longhorn-system enforces privileged Pod Security']);
  });
});
