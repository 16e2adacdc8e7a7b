/**
 * `talosctl health` (siderolabs/talos cmd/talosctl/cmd/talos/health.go, pkg/cluster/check/default.go,
 * internal/app/machined/internal/server/v1alpha1/v1alpha1_cluster.go at v1.12.9, v1.13.9 and
 * v1.14.0-rc.1). See test/sim/reference/flux-health-cilium.md.
 */
import {
  etcdMembers,
  etcdService,
  hasQuorum,
  isCordoned,
  kubeApiAvailability,
  kubeletService,
  nodeReady,
  apiserverServing,
} from '../cluster-model.ts';
import { wait } from '../exec-io.ts';
import { podReady } from '../kube-objects.ts';
import { goQuoteList, multiError, parseGoDuration } from '../go-format.ts';
import type { SimNode } from '../types.ts';
import { compareVersions, isMultiplexingClient } from '../versions.ts';
import { connect, reach, requireSingleNode, type Session } from './session.ts';

/** `OK`, `SKIP`, or the error text of a failing check. */
type CheckResult = string;

interface Check {
  name: string;
  run(): CheckResult;
}

function perNode(session: Session, addresses: string[], fn: (node: SimNode, address: string) => string | undefined): CheckResult {
  const errors: string[] = [];
  for (const address of addresses) {
    const reached = reach(session, address);
    const error = 'error' in reached ? reached.error : fn(reached.node, address);
    if (error) errors.push(`${address}: ${error}`);
  }
  return errors.length === 0 ? 'OK' : multiError(errors);
}

function kubeError(session: Session, path: string): string | undefined {
  const availability = kubeApiAvailability(session.cluster);
  const endpoint = session.cluster.kubernetesEndpoint;
  if (availability === 'down') {
    const host = endpoint.replace(/^https?:\/\//, '');
    return `Get "${endpoint}${path}": dial tcp ${host}: connect: connection refused`;
  }
  if (availability === 'no-quorum') return 'etcdserver: request timed out';
  return undefined;
}

/**
 * The simulated clusters follow the runbook's design: Cilium is installed by Flux, so the Talos
 * machine config says `cluster.network.cni.name: none`. From 1.13 the server's checks read that
 * (`cniDisabledStatus` in pkg/cluster/check/default.go) and skip "all k8s nodes to report ready"
 * and "coredns to report ready": neither can pass before a CNI that Talos did not install is up.
 */
function skipsWithoutCni(server: SimNode): boolean {
  return compareVersions(server.talosVersion, '1.13.0-alpha.0') >= 0;
}

function checks(session: Session, server: SimNode, controlPlanes: string[], workers: string[]): Check[] {
  const { cluster, deps } = session;
  const cniSkip = skipsWithoutCni(server);
  const all = [...controlPlanes, ...workers];
  const now = (): number => Date.now();
  const k8sNodes = (): SimNode[] => cluster.nodes.filter((n) => n.k8sRegistered);
  const staticPods = (verb: string): CheckResult => {
    const down = kubeError(session, '/api/v1/namespaces/kube-system/pods');
    if (down) return down;
    const serving = cluster.nodes.filter((n) => controlPlanes.includes(n.address) && apiserverServing(cluster, n)).length;
    if (serving === controlPlanes.length) return 'OK';
    return `expected number of pods for kube-apiserver to be ${controlPlanes.length}, got ${serving}${verb}`;
  };
  return [
    {
      name: 'etcd to be healthy',
      run: () =>
        perNode(session, controlPlanes, (node) => {
          const service = etcdService(cluster, node, now(), deps.timing);
          if (!service) return 'service "etcd" not registered';
          if (service.state !== 'Running') {
            const pre = service.state === 'Preparing' ? ' Running pre state' : '';
            return `service "etcd" not in expected state "Running": current state [${service.state}]${pre}`;
          }
          if (service.health === 'Fail') return `service "etcd" not healthy: ${service.lastHealthMessage ?? ''}`;
          return undefined;
        }),
    },
    {
      name: 'etcd members to be consistent across nodes',
      run: () =>
        perNode(session, controlPlanes, () => (cluster.faults.etcdNoLeader || !hasQuorum(cluster) ? 'etcdserver: no leader' : undefined)),
    },
    {
      name: 'etcd members to be control plane nodes',
      run: () => {
        const memberIps = etcdMembers(cluster)
          .map((m) => m.address)
          .sort();
        const expected = [...controlPlanes].sort();
        if (memberIps.join() === expected.join()) return 'OK';
        return `etcd member ips ${goQuoteList(memberIps)} are not consistent with control plane ips ${goQuoteList(expected)}`;
      },
    },
    { name: 'apid to be ready', run: () => perNode(session, all, () => undefined) },
    { name: 'all nodes memory sizes', run: () => perNode(session, all, () => undefined) },
    { name: 'all nodes disk sizes', run: () => perNode(session, all, () => undefined) },
    { name: 'no diagnostics', run: () => 'OK' },
    {
      name: 'kubelet to be healthy',
      run: () =>
        perNode(session, all, (node) => {
          const service = kubeletService(node, now(), deps.timing);
          if (service.state !== 'Running') return `service "kubelet" not in expected state "Running": current state [${service.state}]`;
          return undefined;
        }),
    },
    {
      name: 'all nodes to finish boot sequence',
      run: () => perNode(session, all, (node) => (node.stage === 'running' ? undefined : `node is not in running state: ${node.stage}`)),
    },
    {
      name: 'all k8s nodes to report',
      run: () => {
        const down = kubeError(session, '/api/v1/nodes');
        if (down) return down;
        const reported = k8sNodes().map((n) => n.address);
        const missing = all.filter((a) => !reported.includes(a));
        if (missing.length > 0) return `can't find expected node with IPs ${goQuoteList(missing)}`;
        const extra = reported.filter((a) => !all.includes(a));
        if (extra.length > 0) return `unexpected nodes with IPs ${goQuoteList(extra)}`;
        return 'OK';
      },
    },
    { name: 'all control plane static pods to be running', run: () => staticPods('') },
    { name: 'all control plane components to be ready', run: () => staticPods(' ready') },
    {
      name: 'all k8s nodes to report ready',
      run: () => {
        if (cniSkip) return 'SKIP';
        const down = kubeError(session, '/api/v1/nodes');
        if (down) return down;
        const notReady = k8sNodes()
          .filter((n) => nodeReady(cluster, n) !== 'True')
          .map((n) => n.hostname);
        return notReady.length === 0 ? 'OK' : `some nodes are not ready: [${notReady.join(' ')}]`;
      },
    },
    { name: 'kube-proxy to report ready', run: () => 'SKIP' },
    {
      name: 'coredns to report ready',
      run: () => {
        if (cniSkip) return 'SKIP';
        const down = kubeError(session, '/api/v1/namespaces/kube-system/pods');
        if (down) return down;
        // K8sPodReadyAssertion (pkg/cluster/check/kubernetes.go): every CoreDNS pod ready, by its Ready condition.
        const pods = cluster.kube.pods.filter((p) => p.namespace === 'kube-system' && p.labels['k8s-app'] === 'kube-dns');
        if (pods.length === 0) return 'no pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"';
        const notReady = pods.filter((p) => !podReady(cluster, p)).map((p) => p.name);
        if (notReady.length === pods.length) return 'no ready pods found for namespace "kube-system" and label selector "k8s-app=kube-dns"';
        return notReady.length === 0 ? 'OK' : `some pods are not ready: [${notReady.join(' ')}]`;
      },
    },
    {
      name: 'all k8s nodes to report schedulable',
      run: () => {
        const down = kubeError(session, '/api/v1/nodes');
        if (down) return down;
        const cordoned = k8sNodes()
          .filter((n) => isCordoned(cluster, n))
          .map((n) => n.hostname);
        return cordoned.length === 0 ? 'OK' : `some nodes are not schedulable: [${cordoned.join(' ')}]`;
      },
    },
  ];
}

export async function runHealth(session: Session): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  if (!requireSingleNode(session, 'health')) return 1;
  const timeoutText = parsed.str('wait-timeout') ?? '20m0s';
  const waitTimeout = parseGoDuration(timeoutText);
  if (waitTimeout === undefined) {
    io.err(
      `invalid argument ${JSON.stringify(timeoutText)} for "--wait-timeout" flag: time: invalid duration ${JSON.stringify(timeoutText)}\n`,
    );
    return 1;
  }
  const serverMode = parsed.bool('server');
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`${connection.error}\n`);
    return 1;
  }
  const address = session.nodes[0] ?? '';
  const reached = reach(session, address);
  if ('error' in reached) {
    io.err(`${reached.error}\n`);
    return 1;
  }
  if (serverMode && reached.node.role !== 'controlplane') {
    io.err('rpc error: code = Unimplemented desc = cluster health check is only available on control plane nodes\n');
    return 1;
  }
  let controlPlanes = parsed.list('control-plane-nodes');
  let workers = parsed.list('worker-nodes');
  const explicit = controlPlanes.length > 0 || workers.length > 0;
  if (!explicit) {
    const members = cluster.nodes.filter((n) => n.discoveryMember);
    controlPlanes = members.filter((n) => n.role === 'controlplane').map((n) => n.address);
    workers = members.filter((n) => n.role === 'worker').map((n) => n.address);
  }
  // The server sends `discovered nodes: %q` first, explicit lists or not (v1alpha1_cluster.go);
  // the client prints it only when it discovered the nodes itself.
  if (serverMode || !explicit) io.err(`discovered nodes: ${goQuoteList([...controlPlanes, ...workers])}\n`);
  const deadline = session.startedAt + waitTimeout;
  for (const check of checks(session, reached.node, controlPlanes, workers)) {
    io.err(`waiting for ${check.name}: ...\n`);
    let last: string | undefined;
    for (;;) {
      const result = check.run();
      if (result === 'OK' || result === 'SKIP') {
        io.err(`waiting for ${check.name}: ${result}\n`);
        break;
      }
      if (result !== last) {
        io.err(`waiting for ${check.name}: ${result}\n`);
        last = result;
      }
      const left = deadline - Date.now();
      if (left <= 0) {
        // Server mode through apid's one-to-many proxy (a 1.13 or older client with --nodes): the
        // server's error comes back in the message metadata, and health.go wraps it as
        // `healthcheck error: %s`. The 1.14 client reads the stream error as it is.
        const rpc = 'rpc error: code = DeadlineExceeded desc = context deadline exceeded';
        io.err(
          serverMode
            ? isMultiplexingClient(session.clientVersion)
              ? `${rpc}\n`
              : `healthcheck error: ${rpc}\n`
            : 'context deadline exceeded\n',
        );
        return 1;
      }
      await wait(Math.min(deps.timing.healthRetryMs, left), io.signal);
    }
  }
  return 0;
}
