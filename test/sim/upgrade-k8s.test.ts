import { describe } from 'vitest';
import { simTest, type SimFixture } from './sim-fixture.ts';

const it = simTest();

/** Talos 1.12 supports Kubernetes 1.35, so the clusters can take the next minor. */
function onTalos112(f: SimFixture, cluster: string): void {
  for (const node of f.sim.cluster(cluster).nodes) node.talosVersion = 'v1.12.11';
}

/** Every node's kubelet and control-plane components on `version`. */
function onKubernetes(f: SimFixture, cluster: string, version: string): void {
  for (const node of f.sim.cluster(cluster).nodes) {
    node.kubeletVersion = version;
    if (node.components) node.components = { apiserver: version, controllerManager: version, scheduler: version };
  }
}

describe.concurrent('talosctl upgrade-k8s', () => {
  it('refuses to skip a minor', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.36.0']);

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toBe('automatically detected the lowest Kubernetes version 1.34.1\n');
    expect(result.stderr).toBe('unsupported upgrade path 1.34->1.36 (from "1.34.1" to "1.36.0")\n');
  });

  it('refuses a version the running Talos does not support', async ({ f, expect }) => {
    const result = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.35.0', '--dry-run']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe(
      'compatibility check failed on node "10.0.30.11": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6\n',
    );
  });

  it('prints the plan on stdout and changes nothing with --dry-run', async ({ f, expect }) => {
    onTalos112(f, 'staging');

    const result = await f.talosctl('staging', ['upgrade-k8s', '--nodes', '10.0.20.204', '--to', '1.35.0', '--dry-run']);

    const lines = result.stdout.split('\n');
    expect(result.exitCode).toBe(0);
    // go-kubernetes checks.go has no entry for 1.34->1.35: no check runs, and none is printed.
    expect(lines.slice(0, 5)).toEqual([
      'automatically detected the lowest Kubernetes version 1.34.1',
      'discovered controlplane nodes ["10.0.20.204"]',
      'discovered worker nodes ["10.0.20.205"]',
      '> "10.0.20.204": Talos version 1.12.11 is compatible with Kubernetes version 1.35.0',
      '> "10.0.20.205": Talos version 1.12.11 is compatible with Kubernetes version 1.35.0',
    ]);
    expect(result.stdout).not.toContain('checking for removed');
    expect(result.stdout).toContain('updating kube-proxy to version "1.35.0"\n > "10.0.20.204": starting update\n > skipped in dry-run\n');
    expect(result.stdout).toContain(
      'updating "kube-apiserver" to version "1.35.0"\n > "10.0.20.204": starting update\n > update kube-apiserver: v1.34.1 -> 1.35.0\n > skipped in dry-run\n',
    );
    expect(result.stdout).toContain(' < dry run, change skipped\n');
    expect(result.stdout).not.toContain('machine configuration patched');
    expect(f.sim.cluster('staging').nodes.map((n) => n.kubeletVersion)).toEqual(['v1.34.1', 'v1.34.1']);
  });

  it('fails a dry run on objects of an API version the target removes, with the REMOVED RESOURCE table as its error', async ({
    f,
    expect,
  }) => {
    onKubernetes(f, 'production', 'v1.31.4');
    f.sim.faults.set('production', { k8sStoredResources: { 'podschedulingcontexts.v1alpha3.resource.k8s.io': 2 } });

    const result = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.32.0', '--dry-run']);

    expect(result.exitCode).toBe(1);
    expect(result.stdout).toContain(
      'checking for removed Kubernetes component flags\nchecking for removed Kubernetes API resource versions\n',
    );
    expect(result.stdout).not.toContain('updating "kube-apiserver"');
    expect(result.stderr).toBe(
      '\nREMOVED RESOURCE                                 COUNT   \npodschedulingcontexts.v1alpha3.resource.k8s.io   2       \n\n',
    );
  });

  it('fails a dry run on a removed component flag, with the NODE COMPONENT REMOVED FLAG table', async ({ f, expect }) => {
    onKubernetes(f, 'production', 'v1.32.9');
    f.sim.faults.set('production', { k8sComponentFlags: { '10.0.30.12': { 'kube-apiserver': ['cloud-config'] } } });

    const result = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.33.0', '--dry-run']);

    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe('\nNODE         COMPONENT        REMOVED FLAG\n10.0.30.12   kube-apiserver   cloud-config\n\n');
  });

  it('names the node first in compatibility errors from a 1.13 client, and diffs the manifests by server-side apply in a dry run', async ({
    f,
    expect,
  }) => {
    for (const node of f.sim.cluster('staging').nodes) node.talosVersion = 'v1.13.9';

    const dry = await f.talosctl('staging', ['upgrade-k8s', '--nodes', '10.0.20.204', '--to', '1.35.0', '--dry-run'], {
      version: 'v1.13.9',
    });
    f.sim.node('staging', '10.0.20.205').talosVersion = 'v1.11.6';
    const old = await f.talosctl('staging', ['upgrade-k8s', '--nodes', '10.0.20.204', '--to', '1.35.0', '--dry-run'], {
      version: 'v1.13.9',
    });

    expect(dry.exitCode).toBe(0);
    expect(dry.stdout).toContain('\nupdating manifests (dry run)\n < unchanged Secret/kube-system/');
    expect(dry.stdout).toContain(' < unchanged ServiceAccount/kube-system/coredns\n');
    expect(dry.stdout).toContain(' < configured Deployment/kube-system/coredns\n--- a/apps/v1/Deployment/kube-system/coredns\n');
    expect(old.exitCode).toBe(1);
    expect(old.stderr).toBe('node "10.0.20.205": version of Kubernetes 1.35.0 is too new to be used with Talos 1.11.6\n');
  });

  it('updates the control plane, then every kubelet, and the API server version', async ({ f, expect }) => {
    onTalos112(f, 'staging');

    const result = await f.talosctl('staging', ['upgrade-k8s', '--nodes', '10.0.20.204', '--to', '1.35.0']);

    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain(' > "10.0.20.205": waiting for node update\n < "10.0.20.205": successfully updated\n');
    expect(result.stdout.trimEnd().split('\n').at(-1)).toBe('waiting for all manifests to be applied');
    expect(f.sim.cluster('staging').nodes.map((n) => n.kubeletVersion)).toEqual(['v1.35.0', 'v1.35.0']);
    expect(f.sim.node('staging', '10.0.20.204').components?.apiserver).toBe('v1.35.0');
    const version = (await (
      await fetch(`${f.sim.kubeApiUrl('staging')}/version`, {
        headers: { authorization: `Bearer ${f.sim.cluster('staging').credentials.token}` },
      })
    ).json()) as { gitVersion: string };
    expect(version.gitVersion).toBe('v1.35.0');
  });

  it('fails mid-way once and finishes when re-run', async ({ f, expect }) => {
    onTalos112(f, 'production');
    f.sim.faults.set('production', { upgradeK8sFailOnce: true });

    const failed = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.35.0']);
    const versionsAfterFailure = f.sim.cluster('production').nodes.map((n) => n.components?.apiserver);
    const rerun = await f.talosctl('production', ['upgrade-k8s', '-n', '10.0.30.11', '--to', '1.35.0']);

    expect(failed.exitCode).toBe(1);
    expect(failed.stderr).toBe(
      'failed updating service "kube-apiserver": error updating node "10.0.30.12": config version mismatch: got "5", expected "6"\n',
    );
    expect(versionsAfterFailure).toEqual(['v1.35.0', 'v1.34.1', 'v1.34.1']);
    expect(rerun.exitCode).toBe(0);
    expect(rerun.stdout).toMatch(/^automatically detected the lowest Kubernetes version 1\.34\.1\n/);
    expect(f.sim.cluster('production').nodes.map((n) => n.kubeletVersion)).toEqual(['v1.35.0', 'v1.35.0', 'v1.35.0']);
    expect(f.sim.events.filter((e) => e.kind === 'k8s-upgraded')).toHaveLength(1);
  });
});
