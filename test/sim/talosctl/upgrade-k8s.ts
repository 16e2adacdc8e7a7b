/**
 * `talosctl upgrade-k8s` (cmd/talosctl/cmd/talos/upgrade-k8s.go, pkg/cluster/kubernetes/talos_managed.go and
 * compat.go at v1.12.9 and v1.13.9): client-driven, safe to re-run. What it prints depends on the client's
 * version (the code runs in talosctl) and, for the manifests, on the lowest Talos of the nodes.
 */
import semver from 'semver';
import { supportFor, talosSupportsKubernetes } from '../../../src/talos/compatibility.ts';
import { apidReachable, controlPlanes, kubeApiAvailability, unavailableError } from '../cluster-model.ts';
import { wait } from '../exec-io.ts';
import { goQuoteList } from '../go-format.ts';
import { bare, withV } from '../versions.ts';
import { runUpgradeChecks } from './upgrade-k8s-checks.ts';
import type { ControlPlaneComponents, SimNode } from '../types.ts';
import { connect, controlPlaneOnly, reach, requireSingleNode, type Session } from './session.ts';

const COMPONENTS: { name: string; key: keyof ControlPlaneComponents }[] = [
  { name: 'kube-apiserver', key: 'apiserver' },
  { name: 'kube-controller-manager', key: 'controllerManager' },
  { name: 'kube-scheduler', key: 'scheduler' },
];

function lowestVersion(nodes: SimNode[]): string {
  const versions = nodes.map((n) => bare(n.components?.apiserver ?? n.kubeletVersion));
  return versions.sort(semver.compare)[0] ?? '0.0.0';
}

export async function runUpgradeK8s(session: Session): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  if (!requireSingleNode(session, 'upgrade-k8s')) return 1;
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`${connection.error}\n`);
    return 1;
  }
  const reached = reach(session, session.nodes[0] ?? '');
  if ('error' in reached) {
    io.err(`error fetching kubeconfig: ${reached.error}\n`);
    return 1;
  }
  const notCp = controlPlaneOnly(reached.node, 'kubeconfig');
  if (notCp) {
    io.err(`error fetching kubeconfig: ${notCp.error}\n`);
    return 1;
  }
  if (kubeApiAvailability(cluster) !== 'up') {
    const host = cluster.kubernetesEndpoint.replace(/^https?:\/\//, '');
    io.err(
      `error building kubernetes client: Get "${cluster.kubernetesEndpoint}/version": dial tcp ${host}: connect: connection refused\n`,
    );
    return 1;
  }
  const cps = controlPlanes(cluster).filter((n) => n.k8sRegistered);
  const workers = cluster.nodes.filter((n) => n.role === 'worker' && n.k8sRegistered);
  const dryRun = parsed.bool('dry-run');
  const fromFlag = parsed.str('from');
  const from = fromFlag ? bare(fromFlag) : lowestVersion(cps);
  const to = bare(parsed.str('to') ?? '1.34.1');
  if (!semver.valid(to) || !semver.valid(from)) {
    io.err(`error parsing version ${JSON.stringify(semver.valid(to) ? from : to)}: No Major.Minor.Patch elements found\n`);
    return 1;
  }
  if (!fromFlag) io.out(`automatically detected the lowest Kubernetes version ${from}\n`);
  const fromMinor = `${semver.major(from)}.${semver.minor(from)}`;
  const toMinor = `${semver.major(to)}.${semver.minor(to)}`;
  const supported =
    semver.major(from) === semver.major(to) && (semver.minor(to) === semver.minor(from) || semver.minor(to) === semver.minor(from) + 1);
  if (!supported) {
    io.err(`unsupported upgrade path ${fromMinor}->${toMinor} (from ${JSON.stringify(from)} to ${JSON.stringify(to)})\n`);
    return 1;
  }
  io.out(`discovered controlplane nodes ${goQuoteList(cps.map((n) => n.address))}\n`);
  // talos_managed.go: workers are discovered (and printed) only when kubelets are upgraded too.
  const upgradeKubelet = parsed.bool('upgrade-kubelet');
  const kubeletNodes = upgradeKubelet ? workers : [];
  if (upgradeKubelet) io.out(`discovered worker nodes ${goQuoteList(workers.map((n) => n.address))}\n`);
  // compat.go: from v1.13 errors read `node "<ip>": …` and the compatible nodes are listed once all passed;
  // v1.12 says `compatibility check failed on node "<ip>": …` and lists each node as it is checked.
  const v113 = semver.gte(bare(session.clientVersion), '1.13.0-alpha.0');
  const compatible: string[] = [];
  for (const node of [...cps, ...kubeletNodes]) {
    if (!apidReachable(cluster, node)) {
      const reason = unavailableError(cluster, node, node.address);
      io.err(
        `${v113 ? `node ${JSON.stringify(node.address)}` : `error getting Talos version on node ${JSON.stringify(node.address)}`}: ${reason}\n`,
      );
      return 1;
    }
    const talos = bare(node.talosVersion);
    if (!talosSupportsKubernetes(node.talosVersion, to)) {
      const row = supportFor(talos);
      const tooNew = !row || semver.minor(to) > Number(row.kubernetesMax.split('.')[1]);
      // pkg/machinery/compatibility/kubernetes_version.go (`SupportedWith`).
      const why = `version of Kubernetes ${to} is too ${tooNew ? 'new' : 'old'} to be used with Talos ${talos}`;
      io.err(
        `${v113 ? `node ${JSON.stringify(node.address)}` : `compatibility check failed on node ${JSON.stringify(node.address)}`}: ${why}\n`,
      );
      return 1;
    }
    const line = `> ${JSON.stringify(node.address)}: Talos version ${talos} is compatible with Kubernetes version ${to}\n`;
    if (v113) compatible.push(line);
    else io.out(line);
  }
  for (const line of compatible) io.out(line);
  // go-kubernetes upgrade/checks.go: fails even in a dry run, its tables the whole error text.
  const checks = runUpgradeChecks({
    path: `${fromMinor}->${toMinor}`,
    controlPlanes: cps.map((n) => n.address),
    workers: kubeletNodes.map((n) => n.address),
    storedResources: cluster.faults.k8sStoredResources ?? {},
    flags: cluster.faults.k8sComponentFlags ?? {},
  });
  for (const line of checks.log) io.out(`${line}\n`);
  if (checks.error !== undefined) {
    io.err(`${checks.error}\n`);
    return 1;
  }
  if (parsed.bool('pre-pull-images')) {
    for (const node of cps) {
      for (const c of COMPONENTS) io.out(` > ${JSON.stringify(node.address)}: pre-pulling registry.k8s.io/${c.name}:v${to}\n`);
    }
    if (upgradeKubelet)
      for (const node of [...cps, ...kubeletNodes])
        io.out(` > ${JSON.stringify(node.address)}: pre-pulling ghcr.io/siderolabs/kubelet:v${to}\n`);
  }
  const step = (): Promise<void> => wait(deps.timing.stepMs, io.signal);
  for (const component of COMPONENTS) {
    io.out(`updating ${JSON.stringify(component.name)} to version ${JSON.stringify(to)}\n`);
    for (const [index, node] of cps.entries()) {
      const current = node.components?.[component.key] ?? '';
      io.out(` > ${JSON.stringify(node.address)}: starting update\n`);
      io.out(` > update ${component.name}: ${withV(current)} -> ${to}\n`);
      if (dryRun) {
        io.out(' > skipped in dry-run\n');
        continue;
      }
      const failOnce = cluster.faults.upgradeK8sFailOnce && component.name === 'kube-apiserver' && index === Math.min(1, cps.length - 1);
      if (failOnce || !apidReachable(cluster, node)) {
        if (failOnce) delete cluster.faults.upgradeK8sFailOnce;
        const reason = failOnce ? 'config version mismatch: got "5", expected "6"' : unavailableError(cluster, node, node.address);
        io.err(
          `failed updating service ${JSON.stringify(component.name)}: error updating node ${JSON.stringify(node.address)}: ${reason}\n`,
        );
        return 1;
      }
      await step();
      io.out(` > ${JSON.stringify(node.address)}: machine configuration patched\n`);
      io.out(` > ${JSON.stringify(node.address)}: waiting for ${component.name} pod update\n`);
      await step();
      if (node.components) node.components[component.key] = withV(to);
      deps.recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'k8s-component-updated',
        fromVersion: withV(current),
        toVersion: withV(to),
        detail: component.name,
      });
      io.out(` < ${JSON.stringify(node.address)}: successfully updated\n`);
    }
  }
  // talos_managed.go `upgradeKubeProxy`: always run, a patch of every control plane's configuration.
  io.out(`updating kube-proxy to version ${JSON.stringify(to)}\n`);
  for (const node of cps) {
    io.out(` > ${JSON.stringify(node.address)}: starting update\n`);
    if (dryRun) io.out(' > skipped in dry-run\n');
    else await step();
  }
  if (upgradeKubelet) {
    io.out(`updating kubelet to version ${JSON.stringify(to)}\n`);
    for (const node of [...cps, ...kubeletNodes]) {
      io.out(` > ${JSON.stringify(node.address)}: starting update\n`);
      io.out(` > update kubelet: ${withV(node.kubeletVersion)} -> ${to}\n`);
      if (dryRun) {
        io.out(' > skipped in dry-run\n');
        continue;
      }
      if (!apidReachable(cluster, node)) {
        io.err(
          `failed updating service "kubelet": error updating node ${JSON.stringify(node.address)}: ${unavailableError(cluster, node, node.address)}\n`,
        );
        return 1;
      }
      await step();
      io.out(` > ${JSON.stringify(node.address)}: machine configuration patched\n`);
      io.out(` > ${JSON.stringify(node.address)}: waiting for kubelet restart\n`);
      await step();
      const previous = node.kubeletVersion;
      node.kubeletVersion = withV(to);
      deps.recorder.event({
        cluster: cluster.name,
        node: node.address,
        kind: 'k8s-component-updated',
        fromVersion: previous,
        toVersion: withV(to),
        detail: 'kubelet',
      });
      io.out(` > ${JSON.stringify(node.address)}: waiting for node update\n`);
      await step();
      io.out(` < ${JSON.stringify(node.address)}: successfully updated\n`);
    }
  }
  // talos_managed.go `PerformManifestsSync`: server-side apply when every node runs Talos ≥ 1.13, whose dry run says so and lists a diff.
  const ssa = v113 && [...cps, ...kubeletNodes].every((n) => semver.gte(bare(n.talosVersion), '1.13.0'));
  io.out(ssa && dryRun ? 'updating manifests (dry run)\n' : 'updating manifests\n');
  const minorChange = fromMinor !== toMinor;
  const manifests = [
    ['v1.Secret/kube-system/bootstrap-token-' + cluster.name.slice(0, 3).padEnd(6, 'x'), false],
    ['rbac.authorization.k8s.io/v1.ClusterRoleBinding//system-bootstrap-approve-node-client-csr', false],
    ['v1.ServiceAccount/kube-system/coredns', false],
    ['v1.ConfigMap/kube-system/coredns', false],
    ['apps/v1.Deployment/kube-system/coredns', minorChange],
  ] as const;
  if (ssa && dryRun) {
    // syncManifestsSSA: ` < <action> <kind/namespace/name>` per object (go-kubernetes kubernetes/ssa/diff.go: fluxcd ssa's
    // "configured", "created", "unchanged"), a configured object followed by its unified diff.
    for (const [manifest, changes] of manifests) {
      const [groupVersion = '', kind = '', namespace = '', name = ''] = /^(.*)\.(\w+)\/([^/]*)\/(.+)$/.exec(manifest)?.slice(1) ?? [];
      io.out(` < ${changes ? 'configured' : 'unchanged'} ${kind}/${namespace}/${name}\n`);
      if (changes) {
        const path = `${groupVersion.replace('.', '/')}/${kind}/${namespace}/${name}`;
        io.out(`--- a/${path}\n+++ b/${path}\n@@ -1 +1 @@\n-  generation: 1\n+  generation: 2\n`);
      }
    }
  } else {
    for (const [manifest, changes] of manifests) {
      io.out(` > processing manifest ${manifest}\n`);
      io.out(changes ? (dryRun ? ' < dry run, change skipped\n' : ' < applied successfully\n') : ' < no changes\n');
    }
  }
  if (!dryRun) {
    io.out('waiting for all manifests to be applied\n');
    await step();
    deps.recorder.event({ cluster: cluster.name, kind: 'k8s-upgraded', fromVersion: withV(from), toVersion: withV(to) });
  }
  return 0;
}
