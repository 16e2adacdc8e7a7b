/**
 * The pre-upgrade checks of `talosctl upgrade-k8s` (siderolabs/go-kubernetes kubernetes/upgrade/checks.go,
 * as vendored by Talos v1.13.9, go-kubernetes v0.2.38): for the upgrade paths it knows, the removed
 * component flags on each node and the objects still stored in API versions the target removes. Any
 * finding fails the command, `--dry-run` included, with its tables as the error text. The feature
 * gates and admission plugins it checks too are left out: no simulated node sets one.
 */
import { tabwrite } from '../go-format.ts';

interface PathChecks {
  /** `group/version` resources the target no longer serves, as `resource.version.group`. */
  removedApiResources?: string[];
  /** Removed flags per component (`kube-apiserver`, `kube-controller-manager`, `kube-scheduler`, `kubelet`). */
  removedFlags?: Partial<Record<string, string[]>>;
}

/** checks.go `upgradeVersionCheck`, reduced to the API resources and flags; paths after 1.32->1.33 have no entry. */
const CHECKS: Record<string, PathChecks> = {
  '1.24->1.25': {
    removedApiResources: ['podsecuritypolicies.v1beta1.policy'],
    removedFlags: {
      'kube-apiserver': ['service-account-api-audiences'],
      'kube-controller-manager': ['deleting-pods-qps', 'deleting-pods-burst', 'register-retry-count'],
    },
  },
  '1.25->1.26': { removedFlags: { 'kube-apiserver': ['master-service-namespace'] } },
  '1.26->1.27': {
    removedFlags: {
      'kube-controller-manager': ['enable-taint-manager', 'pod-eviction-timeout'],
      kubelet: ['container-runtime', 'master-service-namespace'],
    },
  },
  '1.27->1.28': {},
  '1.28->1.29': { removedApiResources: ['clustercidrs.v1alpha1.networking.k8s.io'] },
  '1.29->1.30': {},
  '1.30->1.31': {
    removedFlags: {
      kubelet: ['keep-terminated-pod-volumes', 'iptables-masquerade-bit', 'iptables-drop-bit'],
      'kube-controller-manager': [
        'volume-host-cidr-denylist',
        'volume-host-allow-local-loopback',
        'horizontal-pod-autoscaler-upscale-delay',
        'horizontal-pod-autoscaler-downscale-delay',
      ],
    },
  },
  '1.31->1.32': { removedApiResources: ['podschedulingcontexts.v1alpha3.resource.k8s.io'] },
  '1.32->1.33': { removedFlags: { 'kube-apiserver': ['cloud-config'] } },
};

/** What the cluster holds that the checks look at. */
export interface CheckInputs {
  /** `from->to` minors, e.g. `1.31->1.32`. */
  path: string;
  controlPlanes: string[];
  workers: string[];
  /** Objects per API resource (`resource.version.group`) stored in the cluster. */
  storedResources: Record<string, number>;
  /** The flags each node's component runs with: node → component → flag names (without `--`). */
  flags: Record<string, Partial<Record<string, string[]>>>;
}

export interface CheckOutcome {
  /** Progress lines, printed only for a path the checks know. */
  log: string[];
  /** `ComponentRemovedItemsError.Error()`: the tables, or undefined when nothing was found. */
  error?: string;
}

export function runUpgradeChecks(input: CheckInputs): CheckOutcome {
  const checks = CHECKS[input.path];
  if (checks === undefined) return { log: [] };
  const flagRows: string[][] = [];
  for (const node of input.controlPlanes) {
    for (const component of ['kube-apiserver', 'kube-controller-manager', 'kube-scheduler']) {
      for (const flag of checks.removedFlags?.[component] ?? [])
        if (input.flags[node]?.[component]?.includes(flag)) flagRows.push([node, component, flag]);
    }
  }
  for (const node of [...input.controlPlanes, ...input.workers]) {
    for (const flag of checks.removedFlags?.['kubelet'] ?? [])
      if (input.flags[node]?.['kubelet']?.includes(flag)) flagRows.push([node, 'kubelet', flag]);
  }
  const resourceRows = (checks.removedApiResources ?? []).flatMap((r) =>
    (input.storedResources[r] ?? 0) > 0 ? [[r, String(input.storedResources[r]), '']] : [],
  );
  const log = ['checking for removed Kubernetes component flags', 'checking for removed Kubernetes API resource versions'];
  // Error(): one tabwriter (padding 3) for every table, each headed by a blank line; the resource table ends its cells with a tab.
  const table: string[][] = [];
  if (flagRows.length > 0) table.push([''], ['NODE', 'COMPONENT', 'REMOVED FLAG'], ...flagRows);
  if (resourceRows.length > 0) table.push([''], ['REMOVED RESOURCE', 'COUNT', ''], ...resourceRows);
  if (table.length === 0) return { log };
  return { log, error: tabwrite(table, 3) };
}
