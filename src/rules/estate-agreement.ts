import { isIP } from 'node:net';
import {
  describeNode,
  type Disagreement,
  type Estate,
  type EstateObservation,
  type ObservedEtcdMember,
  type ObservedKubeNode,
} from '../cluster/estate.ts';
import { vmsInState } from '../tofu/state-address.ts';
import { endpointHost } from './readiness-gates.ts';
import { declaredNodes, type ClusterConfig } from '../config/inventory.ts';

/** Addresses in a stable order: the inventory's order for what it lists, then the rest by address. */
function ordered(addresses: Iterable<string>, first: readonly string[]): string[] {
  const set = new Set(addresses);
  const head = first.filter((a) => set.has(a));
  const rest = [...set].filter((a) => !head.includes(a)).sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return [...head, ...rest];
}

function memberOf(members: readonly ObservedEtcdMember[], name: string, address: string | undefined): boolean {
  return members.some((m) => (address !== undefined && m.address === address) || (m.hostname !== '' && m.hostname === name));
}

const REMOVE_OR_APPLY =
  'if it belongs to the cluster, declare it in Terraform and apply (a reviewed `/talos terraform plan`); if not, `/talos remove` it';

/**
 * The estate the sources agree on, and every way they do not. Nodes are what Kubernetes and etcd
 * know; the talosconfig, Terraform's state and the inventory's lists are compared with them. A source
 * that could not be read is listed as unread and nothing is concluded from it: when neither
 * Kubernetes nor etcd answers, the inventory's lists (else the talosconfig's endpoints) stand in.
 */
export function judgeEstate(cluster: ClusterConfig, observation: EstateObservation): Estate {
  const declared = declaredNodes(cluster);
  const unread: string[] = [];
  const source = <T>(name: string, read: { ok: true; value: T } | { ok: false; error: string }): T | undefined => {
    if (read.ok) return read.value;
    unread.push(`${name}: ${read.error}`);
    return undefined;
  };
  const kube = source('Kubernetes Nodes', observation.kube);
  const etcd = source('etcd members', observation.etcd);
  // An endpoint may carry a port or a scheme (`10.0.30.11:50000`): its host is what names a node.
  const endpoints = source('talosconfig endpoints', observation.talosconfig)?.map((e) => endpointHost(e) ?? e);
  const stateList = source('Terraform state', observation.terraform);
  let terraform =
    stateList === undefined ? undefined : vmsInState(stateList.join('\n')).map((vm) => ({ hostname: vm.key, address: vm.address }));
  if (terraform !== undefined && terraform.length === 0) {
    // An estate whose VMs are not the runbook's resource type: Terraform then declares nothing the bot can compare.
    unread.push('Terraform state: `tofu state list` names no proxmox_virtual_environment_vm, so Terraform is not compared');
    terraform = undefined;
  }

  const kubeCps = (kube ?? []).filter((n) => n.role === 'controlplane');
  const kubeWorkers = (kube ?? []).filter((n) => n.role === 'worker');
  const addressOf = (n: ObservedKubeNode): string[] => (n.address === undefined ? [] : [n.address]);
  const etcdAddresses = (etcd ?? []).flatMap((m) => (m.address === undefined ? [] : [m.address]));

  let controlPlanes: string[];
  if (kube === undefined && etcd === undefined) controlPlanes = declared.controlPlanes ?? endpoints?.filter((e) => isIP(e) !== 0) ?? [];
  else controlPlanes = [...kubeCps.flatMap(addressOf), ...etcdAddresses];
  controlPlanes = ordered(controlPlanes, declared.controlPlanes ?? []);
  const workers = ordered(
    (kube === undefined ? (declared.workers ?? []) : kubeWorkers.flatMap(addressOf)).filter((a) => !controlPlanes.includes(a)),
    declared.workers ?? [],
  );

  const nodeNames: Record<string, string> = {};
  for (const address of [...controlPlanes, ...workers]) {
    const name =
      (kube ?? []).find((n) => n.address === address)?.name ??
      (etcd ?? []).find((m) => m.address === address && m.hostname !== '')?.hostname ??
      declared.nodeNames?.[address];
    if (name !== undefined) nodeNames[address] = name;
  }

  const disagreements: Disagreement[] = [];
  const add = (d: Disagreement): void => void disagreements.push(d);

  // etcd members with no Node: a control plane Kubernetes does not know.
  if (kube !== undefined && etcd !== undefined) {
    for (const member of etcd) {
      if (
        kube.some(
          (n) => (member.address !== undefined && n.address === member.address) || (member.hostname !== '' && n.name === member.hostname),
        )
      )
        continue;
      const who = describeNode(member.hostname, member.address);
      add({
        kind: 'etcd-member-without-node',
        node: { ...(member.address ? { address: member.address } : {}), ...(member.hostname ? { name: member.hostname } : {}) },
        text:
          member.hostname === ''
            ? `etcd member ${member.id} at ${member.address ?? 'an unknown address'} was added but never started, and Kubernetes has no Node for it`
            : `etcd member ${who} has no Kubernetes Node`,
        fix: `if the machine is gone, \`/talos remove ${member.address ?? member.hostname}\` removes its member; if it is still joining, check its kubelet (\`talosctl -n ${member.address ?? '<address>'} service kubelet\`) and run the gate again`,
      });
    }
  }

  // Nodes no source declares: Kubernetes knows them; Terraform's state, etcd and the talosconfig do not.
  if (kube !== undefined) {
    for (const node of kube) {
      const inTerraform = terraform?.some((vm) => vm.hostname === node.name) ?? false;
      const inEtcd = etcd !== undefined && memberOf(etcd, node.name, node.address);
      const inTalosconfig = endpoints !== undefined && node.address !== undefined && endpoints.includes(node.address);
      if (inTerraform || inEtcd || inTalosconfig) continue;
      // A worker only Terraform declares; a control plane also etcd and the talosconfig.
      const judged = terraform !== undefined || (node.role === 'controlplane' && (etcd !== undefined || endpoints !== undefined));
      if (!judged) continue;
      const missing = [
        ...(terraform !== undefined ? ["Terraform's state"] : []),
        ...(node.role === 'controlplane' && etcd !== undefined ? ['the etcd members'] : []),
        ...(node.role === 'controlplane' && endpoints !== undefined ? ["the talosconfig's endpoints"] : []),
      ];
      add({
        kind: 'node-undeclared',
        node: { ...(node.address ? { address: node.address } : {}), name: node.name },
        text: `Kubernetes Node ${describeNode(node.name, node.address)} (${node.role === 'controlplane' ? 'control plane' : 'worker'}) is declared by no source: ${missing.join(', ')} do not name it`,
        fix: REMOVE_OR_APPLY,
      });
    }
  }

  // Terraform's VMs that never joined: no Node and no etcd member of that hostname.
  if (terraform !== undefined && kube !== undefined) {
    for (const vm of terraform) {
      if (kube.some((n) => n.name === vm.hostname) || (etcd ?? []).some((m) => m.hostname === vm.hostname)) continue;
      add({
        kind: 'terraform-node-not-joined',
        node: { name: vm.hostname },
        text: `Terraform's state has ${vm.address}, but neither Kubernetes nor etcd knows a node ${vm.hostname}: it never joined, or it was removed and Terraform still declares it`,
        fix: `if it was removed, take ${vm.hostname} out of \`talos_nodes\` and apply that (\`/talos plan\`); if it should be a node, look at its console in Proxmox (maintenance mode?), and a reviewed apply configures it again`,
      });
    }
  }

  // The inventory's lists, when given, are assertions: every entry must exist, in its role, and nothing observed may be missing.
  const knows = kube !== undefined || etcd !== undefined;
  for (const [key, role, listed, observed] of [
    ['controlPlanes', 'control plane', declared.controlPlanes, controlPlanes],
    ['workers', 'worker', declared.workers, workers],
  ] as const) {
    if (listed === undefined || !knows) continue;
    const other = role === 'worker' ? controlPlanes : workers;
    for (const address of listed) {
      if (observed.includes(address)) continue;
      const name = nodeNames[address] ?? declared.nodeNames?.[address];
      if (other.includes(address)) {
        add({
          kind: 'inventory-role',
          node: { address, ...(name ? { name } : {}) },
          text: `the inventory lists ${describeNode(name, address)} under ${key}, but it is a ${role === 'worker' ? 'control plane' : 'worker'} to ${kube !== undefined ? 'Kubernetes' : 'etcd'}`,
          fix: `move ${address} to ${key === 'workers' ? 'controlPlanes' : 'workers'} in the inventory, or leave the node lists out: the bot finds the nodes itself`,
        });
        continue;
      }
      // A worker is known only to Kubernetes: without it, nothing says the entry is gone.
      if (role === 'worker' && kube === undefined) continue;
      add({
        kind: 'inventory-entry-gone',
        node: { address, ...(name ? { name } : {}) },
        text: `the inventory lists ${describeNode(name, address)} under ${key}, but ${role === 'worker' ? 'Kubernetes has no such Node' : 'neither etcd nor Kubernetes knows it'}`,
        fix: `drop ${address} from ${key} in the inventory, or leave the node lists out: the bot finds the nodes itself`,
      });
    }
    for (const address of observed) {
      if (listed.includes(address) || other === undefined || declaredIn(declared, address)) continue;
      const name = nodeNames[address];
      add({
        kind: 'inventory-missing-node',
        node: { address, ...(name ? { name } : {}) },
        text: `${describeNode(name, address)} is a ${role} to ${role === 'control plane' ? sourcesOfControlPlane(address, kubeCps, etcd) : 'Kubernetes'}, but the inventory's ${key} does not list it, so the bot would leave it out`,
        fix: `add ${address} to ${key} in the inventory, or leave the node lists out: the bot finds the nodes itself`,
      });
    }
  }

  // The talosconfig must list every control plane: talosctl reaches the cluster only through its endpoints.
  if (
    endpoints !== undefined &&
    endpoints.length > 0 &&
    endpoints.every((e) => isIP(e) !== 0) &&
    (kube !== undefined || etcd !== undefined)
  ) {
    for (const address of controlPlanes) {
      if (endpoints.includes(address)) continue;
      const name = nodeNames[address];
      add({
        kind: 'control-plane-not-in-talosconfig',
        node: { address, ...(name ? { name } : {}) },
        text: `control plane ${describeNode(name, address)} is not among the talosconfig's endpoints (${endpoints.join(', ')})`,
        fix: `add ${address} to the endpoints of the talosconfig in Terraform (talos_client_configuration) and apply it, or \`/talos remove\` the node if it should be gone`,
      });
    }
  }

  return { observation, controlPlanes, workers, nodeNames, disagreements, unread };
}

/** Whether the inventory lists the address under either key: a role mix-up is reported once, from the list that names it. */
function declaredIn(declared: { controlPlanes?: string[] | undefined; workers?: string[] | undefined }, address: string): boolean {
  return (declared.controlPlanes ?? []).includes(address) || (declared.workers ?? []).includes(address);
}

function sourcesOfControlPlane(
  address: string,
  kubeCps: readonly ObservedKubeNode[],
  etcd: readonly ObservedEtcdMember[] | undefined,
): string {
  const sources = [
    ...((etcd ?? []).some((m) => m.address === address) ? ['etcd'] : []),
    ...(kubeCps.some((n) => n.address === address) ? ['Kubernetes'] : []),
  ];
  return sources.join(' and ');
}
