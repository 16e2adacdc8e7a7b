/** `talosctl get members|machinestatus|extensions` (get.go, cmd/talosctl/pkg/talos/output). */
import { stringify } from 'yaml';
import { isBooted, nodeReady } from '../cluster-model.ts';
import { multiError, tabwrite } from '../go-format.ts';
import { isMultiplexingClient } from '../versions.ts';
import { extensionInfo } from '../schematics.ts';
import type { SimCluster, SimNode } from '../types.ts';
import { connect, exitAfterPartial, fanOut, reportFailures, successes, type Session } from './session.ts';

interface Resource {
  namespace: string;
  type: string;
  id: string;
  version: number;
  owner: string;
  created: Date;
  updated: Date;
  /** An object, or the raw YAML of a resource whose spec marshals as its own bytes (MachineConfig). */
  spec: Record<string, unknown> | string;
  /** Values of the resource-specific print columns. */
  columns: string[];
}

interface ResourceKind {
  names: string[];
  shortType: string;
  columns: string[];
  list(cluster: SimCluster, node: SimNode, state: Session['deps']['state']): Resource[];
}

function stageName(cluster: SimCluster, node: SimNode): { stage: string; ready: boolean } {
  const stage =
    node.stage === 'upgrading' ? 'upgrading' : node.stage === 'resetting' ? 'resetting' : node.stage === 'booting' ? 'booting' : 'running';
  const ready = stage === 'running' && nodeReady(cluster, node) === 'True';
  return { stage, ready };
}

const KINDS: ResourceKind[] = [
  {
    names: ['members', 'member', 'clustermembers'],
    shortType: 'Member',
    columns: ['HOSTNAME', 'MACHINE TYPE', 'OS', 'ADDRESSES'],
    list: (cluster) =>
      cluster.nodes
        .filter((m) => m.discoveryMember)
        .map((m) => ({
          namespace: 'cluster',
          type: 'Members.cluster.talos.dev',
          id: m.hostname,
          version: 2 + (m.talosVersion.length % 5),
          owner: 'cluster.MemberController',
          created: new Date(m.bootedAt),
          updated: new Date(m.lastUpAt),
          spec: {
            nodeId: m.bootId.replace(/-/g, '').slice(0, 22),
            addresses: [m.address],
            hostname: m.hostname,
            machineType: m.role,
            operatingSystem: `Talos (${m.talosVersion})`,
            ...(m.role === 'controlplane' ? { controlPlane: { apiServerPort: 6443 } } : {}),
          },
          columns: [m.hostname, m.role, `Talos (${m.talosVersion})`, JSON.stringify([m.address])],
        })),
  },
  {
    names: ['machinestatus', 'machinestatuses', 'ms'],
    shortType: 'MachineStatus',
    columns: ['STAGE', 'READY'],
    list: (cluster, node) => {
      const { stage, ready } = stageName(cluster, node);
      const unmet = ready ? [] : [{ name: 'nodeReady', reason: `node "${node.hostname}" is not ready` }];
      return [
        {
          namespace: 'runtime',
          type: 'MachineStatuses.runtime.talos.dev',
          id: 'machine',
          version: 21,
          owner: 'runtime.MachineStatusController',
          created: new Date(node.bootedAt),
          updated: new Date(Math.max(node.bootedAt, node.lastUpAt)),
          spec: { stage, status: { ready, unmetConditions: unmet } },
          columns: [stage, String(ready)],
        },
      ];
    },
  },
  {
    // VolumeStatus (pkg/machinery/resources/block/volume_status.go, siderolabs/talos v1.13.9): EPHEMERAL and STATE,
    // and the user volume `u-<name>` (constants.UserVolumePrefix) a Longhorn disk at /var/mnt/<name> lives on. A
    // `directory` user volume has no partition of its own: it is a folder on EPHEMERAL.
    names: ['volumestatus', 'volumestatuses'],
    shortType: 'VolumeStatus',
    columns: ['TYPE', 'PHASE', 'LOCATION', 'SIZE'],
    list: (cluster, node) => {
      const status = (id: string, type: string, location: string, size: string, extra: Record<string, unknown> = {}): Resource => ({
        namespace: 'runtime',
        type: 'VolumeStatuses.block.talos.dev',
        id,
        version: 2,
        owner: 'block.VolumeManagerController',
        created: new Date(node.bootedAt),
        updated: new Date(node.bootedAt),
        spec: { phase: 'ready', type, ...(location === '' ? {} : { location }), ...(size === '' ? {} : { prettySize: size }), ...extra },
        columns: [type, 'ready', location, size],
      });
      const volumes = [status('EPHEMERAL', 'partition', '/dev/sda6', '90 GB'), status('STATE', 'partition', '/dev/sda5', '105 MB')];
      const shape = cluster.shape.nodes.find((n) => n.hostname === node.hostname);
      const name = /^\/var\/mnt\/([^/]+)/.exec(shape?.longhornDataPath ?? (node.longhorn ? '/var/mnt/longhorn' : ''))?.[1];
      if (name !== undefined) {
        const type = shape?.longhornVolumeType ?? 'partition';
        const mountSpec = { targetPath: name, parentID: '/var/mnt' };
        volumes.push(
          type === 'partition'
            ? status(`u-${name}`, 'partition', '/dev/sdb1', '200 GB', { filesystem: 'xfs', mountSpec })
            : status(`u-${name}`, 'directory', '', '', { mountSpec }),
        );
      }
      return volumes;
    },
  },
  {
    // MachineConfig (pkg/machinery/resources/config/machine_config.go, siderolabs/talos v1.13.9): namespace `config`,
    // id `v1alpha1`, its spec the configuration's own YAML bytes (MarshalYAMLBytes), so the spec is one string of
    // YAML documents. A control plane's Layer 2 virtual IP is `machine.network.interfaces[].vip.ip`
    // (pkg/machinery/config/types/v1alpha1/v1alpha1_types.go, DeviceVIPConfig); workers carry none. The resource
    // is Sensitive: the real one holds the cluster's keys, so the double puts placeholders where they live.
    names: ['machineconfig', 'machineconfigs', 'mc'],
    shortType: 'MachineConfig',
    columns: ['VERSION'],
    list: (cluster, node) => {
      const vip = node.role === 'controlplane' && cluster.vip !== undefined ? { vip: { ip: cluster.vip } } : {};
      const config = {
        version: 'v1alpha1',
        machine: {
          type: node.role,
          token: '<redacted in the simulator>',
          network: { hostname: node.hostname, interfaces: [{ interface: 'eth0', addresses: [`${node.address}/24`], ...vip }] },
        },
        cluster: { controlPlane: { endpoint: cluster.kubernetesEndpoint }, clusterName: cluster.name },
      };
      return [
        {
          namespace: 'config',
          type: 'MachineConfigs.config.talos.dev',
          id: 'v1alpha1',
          version: 1,
          owner: '',
          created: new Date(node.bootedAt),
          updated: new Date(node.bootedAt),
          spec: stringify(config),
          columns: ['1'],
        },
      ];
    },
  },
  {
    names: ['extensions', 'extension', 'extensionstatus', 'extensionstatuses'],
    shortType: 'ExtensionStatus',
    columns: ['NAME', 'VERSION'],
    // The imager extracts the image's extensions into directories named by their index (siderolabs/talos v1.13.9,
    // pkg/imager/imager.go: strconv.Itoa(j)) and compresses each to `<index>.sqsh` (pkg/imager/extensions/extensions.go);
    // machined's ExtensionStatusController names each status after its layer, the `.sqsh` trimmed
    // (internal/app/machined/pkg/controllers/runtime/extension_status.go). Image Factory appends its `schematic`
    // virtual extension after the official ones, whatever they are, with the schematic ID as its version
    // (siderolabs/image-factory v1.5.0, internal/profile/profile.go and internal/artifacts/schematic.go).
    list: (_cluster, node, state) => {
      const official = state.schematics[node.schematic] ?? [];
      const entries = official.map((o) => extensionInfo(o));
      const status = (i: number, metadata: Record<string, unknown>, columns: string[]): Resource => ({
        namespace: 'runtime',
        type: 'ExtensionStatuses.runtime.talos.dev',
        id: String(i),
        version: 1,
        owner: 'runtime.ExtensionStatusController',
        created: new Date(node.bootedAt),
        updated: new Date(node.bootedAt),
        spec: { image: `${i}.sqsh`, metadata },
        columns,
      });
      const resources = entries.map((e, i) =>
        status(
          i,
          {
            name: e.name,
            version: e.version,
            author: e.author,
            description: e.description,
            compatibility: { talos: { version: '>= v1.0.0' } },
          },
          [e.name, e.version],
        ),
      );
      resources.push(
        status(
          entries.length,
          {
            name: 'schematic',
            version: node.schematic,
            author: 'Image Factory (https://factory.talos.dev)',
            description: 'Virtual extension which specifies the schematic of the image built with schematic.',
            compatibility: { talos: { version: '>= 1.0.0' } },
          },
          ['schematic', node.schematic],
        ),
      );
      return resources;
    },
  },
];

function metadata(r: Resource): Record<string, unknown> {
  return {
    namespace: r.namespace,
    type: r.type,
    id: r.id,
    version: r.version,
    owner: r.owner,
    phase: 'running',
    created: r.created.toISOString().replace(/\.\d+Z$/, 'Z'),
    updated: r.updated.toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

export function runGet(session: Session): number {
  const { io, parsed, cluster, deps } = session;
  const wanted = (parsed.args[0] ?? '').toLowerCase();
  const kind = KINDS.find((k) => k.names.includes(wanted));
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`${connection.error}\n`);
    return 1;
  }
  if (!kind) {
    io.err(
      `error resolving resource type ${JSON.stringify(parsed.args[0])}: resource ${JSON.stringify(parsed.args[0])} is not registered\n`,
    );
    return 1;
  }
  const output = parsed.str('output') ?? 'table';
  if (!['table', 'json', 'yaml'].includes(output)) {
    io.err(`unknown output ${JSON.stringify(output)}\n`);
    return 1;
  }
  const id = parsed.args[1];
  const results = fanOut(session, (node) => {
    if (!isBooted(node)) return { error: 'rpc error: code = Unavailable desc = node is not running' };
    return kind.list(cluster, node, deps.state).filter((r) => id === undefined || r.id === id);
  });
  let unattributed: string[] = [];
  if (isMultiplexingClient(session.clientVersion)) {
    const failed = reportFailures(session, results, 'error getting resources');
    if (failed !== undefined) return failed;
  } else {
    // cmd/talosctl/pkg/talos/helpers/resources.go (ForEachResource, v1.13.9): the resource definition is resolved on
    // the first node, so that node down fails the whole command before anything is printed; then each node is asked
    // on its own (client.WithNode), and get.go collects their errors in a multierror without the node's name.
    const first = results[0];
    if (first !== undefined && 'error' in first) {
      io.err(`${first.error}\n`);
      return 1;
    }
    unattributed = results.flatMap((r) => ('error' in r ? [r.error] : []));
  }
  const answered = successes(results);
  if (output === 'table') {
    const rows = [['NODE', 'NAMESPACE', 'TYPE', 'ID', 'VERSION', ...kind.columns]];
    for (const r of answered) {
      for (const res of r.value) rows.push([r.address, res.namespace, kind.shortType, res.id, String(res.version), ...res.columns]);
    }
    io.out(tabwrite(rows));
  } else if (output === 'json') {
    for (const r of answered) {
      for (const res of r.value) io.out(`${JSON.stringify({ metadata: metadata(res), node: r.address, spec: res.spec }, null, 4)}\n`);
    }
  } else {
    const docs = answered.flatMap((r) => r.value.map((res) => stringify({ node: r.address, metadata: metadata(res), spec: res.spec })));
    io.out(docs.join('---\n'));
  }
  if (unattributed.length > 0) {
    // main.go prints the error with Fprintln: one more newline after multierror's own blank line.
    io.err(`${multiError(unattributed)}\n`);
    return 1;
  }
  return exitAfterPartial(session, results);
}
