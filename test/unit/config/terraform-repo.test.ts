import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../../src/config/config-error.ts';
import { parseInventory } from '../../../src/config/inventory.ts';
import { terraformWorkDir } from '../../../src/config/terraform-repo.ts';

/** An inventory of one staging cluster with this `terraformRepo` (YAML flow mapping). */
function inventoryWith(terraformRepo: string): string {
  return `clusters:
  staging:
    environment: staging
    channel: C0MAINTSTG
    terraformDir: /srv/infra/terraform/staging
    controlPlanes: [10.0.20.11]
    installerPlatform: nocloud
    hostLabel: example.org/proxmox-host
    snapshotDir: /var/backups/talos-etcd
    operators: [U0ALICE]
    approvers: [U0CAROL]
    terraformRepo: ${terraformRepo}
`;
}

function problemsOf(text: string): string[] {
  let thrown: unknown;
  try {
    parseInventory(text, '/etc/talos-chatops/clusters.yaml');
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigError);
  return (thrown as ConfigError).problems;
}

describe('terraformRepo in the inventory', () => {
  it('takes an https repository at a branch, a tag or a commit, and runs tofu in its path inside the bot-owned copy', () => {
    for (const ref of ['main', 'v1.4.0', 'refs/heads/release/2026-12', 'a'.repeat(40)]) {
      const [cluster] = parseInventory(
        inventoryWith(`{url: "https://git.example.org/platform/infra.git", ref: "${ref}", path: terraform/staging}`),
        'x',
      ).clusters;
      expect(cluster!.terraformRepo).toEqual({ url: 'https://git.example.org/platform/infra.git', ref, path: 'terraform/staging' });
      expect(terraformWorkDir(cluster!)).toBe('/srv/infra/terraform/staging/checkout/terraform/staging');
    }
  });

  it('takes a local repository (a path or file://), with the top of the repository as the default path', () => {
    for (const url of ['/srv/git/infra.git', 'file:///srv/git/infra.git']) {
      const [cluster] = parseInventory(inventoryWith(`{url: "${url}", ref: main}`), 'x').clusters;
      expect(cluster!.terraformRepo).toEqual({ url, ref: 'main', path: '.' });
      expect(terraformWorkDir(cluster!)).toBe('/srv/infra/terraform/staging/checkout');
    }
  });

  it('runs tofu in terraformDir itself when the cluster names no repository', () => {
    expect(terraformWorkDir({ terraformDir: '/srv/infra/terraform/staging' })).toBe('/srv/infra/terraform/staging');
  });

  it.each([
    ['an http:// URL', '{url: "http://git.example.org/infra.git", ref: main}', 'terraformRepo.url'],
    ['an ssh URL', '{url: "git@git.example.org:platform/infra.git", ref: main}', 'terraformRepo.url'],
    ['credentials in the URL', '{url: "https://token:s3cret@git.example.org/infra.git", ref: main}', 'terraformRepo.url'],
    ['a ref that is an option', '{url: "https://git.example.org/infra.git", ref: "--upload-pack=touch"}', 'terraformRepo.ref'],
    ['a revision range', '{url: "https://git.example.org/infra.git", ref: "main..evil"}', 'terraformRepo.ref'],
    ['a path that climbs out', '{url: "https://git.example.org/infra.git", ref: main, path: "terraform/../../etc"}', 'terraformRepo.path'],
    ['an absolute path', '{url: "https://git.example.org/infra.git", ref: main, path: /etc}', 'terraformRepo.path'],
    ['an unknown key', '{url: "https://git.example.org/infra.git", ref: main, branch: main}', 'terraformRepo'],
  ])('refuses %s, naming the field', (_what, repo, field) => {
    const problems = problemsOf(inventoryWith(repo));
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(field);
  });
});
