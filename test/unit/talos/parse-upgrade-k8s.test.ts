import { describe, expect, it } from 'vitest';
import { ParseError } from '../../../src/talos/parse-error.ts';
import { parseUpgradeK8sOutput } from '../../../src/talos/parse-upgrade-k8s.ts';

/** `talosctl upgrade-k8s --to 1.34.0 --dry-run`, shaped like the docs' recorded run. */
const DRY_RUN = `WARNING: found resources which are going to be deprecated/migrated in the version 1.34.0
RESOURCE                                                               COUNT
validatingwebhookconfigurations.v1beta1.admissionregistration.k8s.io   4
customresourcedefinitions.v1beta1.apiextensions.k8s.io                 25
automatically detected the lowest Kubernetes version 1.33.4
discovered controlplane nodes ["172.20.0.2" "172.20.0.3" "172.20.0.4"]
discovered worker nodes ["172.20.0.5" "172.20.0.6"]
checking for removed Kubernetes component flags
checking for removed Kubernetes API resource versions
 > "172.20.0.2": pre-pulling registry.k8s.io/kube-apiserver:v1.34.0
updating "kube-apiserver" to version "1.34.0"
 > "172.20.0.2": starting update
 > update kube-apiserver: v1.33.4 -> 1.34.0
 > skipped in dry-run
 > "172.20.0.3": starting update
 > update kube-apiserver: v1.33.4 -> 1.34.0
 > skipped in dry-run
 > "172.20.0.4": starting update
 > update kube-apiserver: v1.33.4 -> 1.34.0
 > skipped in dry-run
updating "kube-controller-manager" to version "1.34.0"
 > "172.20.0.2": starting update
 > update kube-controller-manager: v1.33.4 -> 1.34.0
 > skipped in dry-run
updating kube-proxy to version "1.34.0"
updating kubelet to version "1.34.0"
 > "172.20.0.5": starting update
 > update kubelet: v1.33.4 -> 1.34.0
 > skipped in dry-run
updating manifests
 > processing manifest v1.Secret/kube-system/bootstrap-token-3lb63t
 < dry run, change skipped
waiting for all manifests to be applied
`;

describe('parseUpgradeK8sOutput', () => {
  it('summarises a dry run with its deprecation warning', () => {
    expect(parseUpgradeK8sOutput(DRY_RUN)).toEqual({
      fromVersion: '1.33.4',
      toVersion: '1.34.0',
      controlPlanes: ['172.20.0.2', '172.20.0.3', '172.20.0.4'],
      workers: ['172.20.0.5', '172.20.0.6'],
      deprecationWarnings: ['WARNING: found resources which are going to be deprecated/migrated in the version 1.34.0'],
      deprecatedResources: [
        { resource: 'validatingwebhookconfigurations.v1beta1.admissionregistration.k8s.io', count: 4 },
        { resource: 'customresourcedefinitions.v1beta1.apiextensions.k8s.io', count: 25 },
      ],
      components: [
        {
          name: 'kube-apiserver',
          toVersion: '1.34.0',
          nodes: ['172.20.0.2', '172.20.0.3', '172.20.0.4'],
          updated: [],
          fromVersions: ['v1.33.4'],
        },
        { name: 'kube-controller-manager', toVersion: '1.34.0', nodes: ['172.20.0.2'], updated: [], fromVersions: ['v1.33.4'] },
        { name: 'kube-proxy', toVersion: '1.34.0', nodes: [], updated: [], fromVersions: [] },
        { name: 'kubelet', toVersion: '1.34.0', nodes: ['172.20.0.5'], updated: [], fromVersions: ['v1.33.4'] },
      ],
      removed: { resources: [], items: [] },
      dryRun: true,
      errors: [],
    });
  });

  it('records nodes reported successfully updated in a real run', () => {
    const stdout = `automatically detected the lowest Kubernetes version 1.33.4
discovered controlplane nodes ["172.20.0.2"]
discovered worker nodes []
updating "kube-apiserver" to version "1.34.0"
 > "172.20.0.2": starting update
 > update kube-apiserver: v1.33.4 -> 1.34.0
 > "172.20.0.2": machine configuration patched
 > "172.20.0.2": waiting for kube-apiserver pod update
 < "172.20.0.2": successfully updated
`;

    const report = parseUpgradeK8sOutput(stdout);

    expect(report.components).toEqual([
      { name: 'kube-apiserver', toVersion: '1.34.0', nodes: ['172.20.0.2'], updated: ['172.20.0.2'], fromVersions: ['v1.33.4'] },
    ]);
    expect(report.workers).toEqual([]);
    expect(report.dryRun).toBe(false);
  });

  it('reads the older "discovered master nodes" wording', () => {
    const report = parseUpgradeK8sOutput('discovered master nodes ["172.20.0.2" "172.20.0.3"]\n');

    expect(report.controlPlanes).toEqual(['172.20.0.2', '172.20.0.3']);
  });

  it('reports the error talosctl exits with on stderr', () => {
    const stdout = 'automatically detected the lowest Kubernetes version 1.32.3\n';
    const stderr = 'unsupported upgrade path 1.32->1.34 (from "1.32.3" to "1.34.0")\n';

    expect(parseUpgradeK8sOutput(stdout, stderr).errors).toEqual(['unsupported upgrade path 1.32->1.34 (from "1.32.3" to "1.34.0")']);
  });

  it('reports a compatibility error even with empty stdout, skipping warnings and usage', () => {
    const stderr = [
      'WARNING: 10.0.64.1: server version 1.11.6 is older than client version 1.12.11',
      'compatibility check failed on node "10.0.30.11": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6',
    ].join('\n');

    expect(parseUpgradeK8sOutput('', stderr).errors).toEqual([
      'compatibility check failed on node "10.0.30.11": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6',
    ]);
  });

  it('reads the REMOVED RESOURCE table a dry run fails with, as findings and not error lines', () => {
    // go-kubernetes upgrade/checks.go ComponentRemovedItemsError.Error(), printed by talosctl on stderr.
    const stdout =
      'automatically detected the lowest Kubernetes version 1.31.4\ndiscovered controlplane nodes ["10.0.30.11"]\nchecking for removed Kubernetes component flags\nchecking for removed Kubernetes API resource versions\n';
    const stderr =
      '\nREMOVED RESOURCE                                 COUNT   \npodschedulingcontexts.v1alpha3.resource.k8s.io   2       \n\n';

    const report = parseUpgradeK8sOutput(stdout, stderr);

    expect(report.removed).toEqual({ resources: [{ resource: 'podschedulingcontexts.v1alpha3.resource.k8s.io', count: 2 }], items: [] });
    expect(report.errors).toEqual([]);
  });

  it('reads the removed-flag and removed-feature-gate tables with their nodes', () => {
    const stderr = [
      '',
      'NODE         COMPONENT                 REMOVED FEATURE GATE',
      '10.0.30.11   kube-controller-manager   AppArmor',
      '',
      'NODE         COMPONENT        REMOVED FLAG',
      '10.0.30.12   kube-apiserver   cloud-config',
      '',
      '',
    ].join('\n');

    expect(parseUpgradeK8sOutput('', stderr).removed.items).toEqual([
      { node: '10.0.30.11', component: 'kube-controller-manager', kind: 'feature gate', name: 'AppArmor' },
      { node: '10.0.30.12', component: 'kube-apiserver', kind: 'flag', name: 'cloud-config' },
    ]);
  });

  it('reads a 1.13 dry run: the kube-proxy section, server-side apply of the manifests and node-first compatibility errors', () => {
    const stdout = [
      'discovered controlplane nodes ["10.0.20.204"]',
      '> "10.0.20.204": Talos version 1.13.9 is compatible with Kubernetes version 1.35.0',
      'updating kube-proxy to version "1.35.0"',
      ' > "10.0.20.204": starting update',
      ' > skipped in dry-run',
      'updating manifests (dry run)',
      ' < configured Deployment/kube-system/coredns',
      '--- a/apps/v1/Deployment/kube-system/coredns',
      '',
    ].join('\n');

    const report = parseUpgradeK8sOutput(stdout);
    const compat = parseUpgradeK8sOutput('', 'node "10.0.20.205": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6\n');

    expect(report.dryRun).toBe(true);
    expect(report.components.map((c) => [c.name, c.nodes])).toEqual([['kube-proxy', ['10.0.20.204']]]);
    expect(compat.errors).toEqual(['node "10.0.20.205": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6']);
  });

  it('reports a component failure printed on stdout', () => {
    const stdout = 'updating "kube-apiserver" to version "1.34.0"\nfailed updating service "kube-apiserver": context deadline exceeded\n';

    expect(parseUpgradeK8sOutput(stdout).errors).toEqual(['failed updating service "kube-apiserver": context deadline exceeded']);
  });

  it.each([
    ['empty streams', '', ''],
    ['text that upgrade-k8s never prints', 'hello world\nfoo bar\n', ''],
  ])('throws a ParseError for %s', (_, stdout, stderr) => {
    expect(() => parseUpgradeK8sOutput(stdout, stderr)).toThrow(ParseError);
  });
});
