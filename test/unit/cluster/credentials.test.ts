import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { kubeconfigServer, withClusterCredentials, type ClusterCredentials } from '../../../src/cluster/credentials.ts';
import { terraformOutputs, type TerraformOutputs } from '../../../src/cluster/terraform-outputs.ts';
import type { Tofu } from '../../../src/cluster/tofu.ts';
import type { RunResult } from '../../../src/exec/process-runner.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

const TALOS_KEY = 'LS0tLS1CRUdJTiBFRDI1NTE5IFBSSVZBVEUgS0VZLS0tLS0KTUM0Q0FRQXdCUVlESzJWd0JDSUVJY2FuYXJ5';
const TALOSCONFIG = `context: production\ncontexts:\n    production:\n        endpoints:\n            - 10.0.30.11\n        key: ${TALOS_KEY}\n`;
const KUBE_TOKEN = 'kube-token-canary-0123456789abcdef';
const KUBECONFIG = `apiVersion: v1\nkind: Config\nusers:\n- name: admin@production\n  user:\n    token: ${KUBE_TOKEN}\n`;

/** A Tofu that answers `output -json` from a map and records what it was asked. */
function fakeTofu(
  outputs: Record<string, string> = { talosconfig: TALOSCONFIG, talos_kubeconfig: KUBECONFIG },
): Tofu & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    outputRaw() {
      return Promise.reject(new Error('credentials are read with output -json'));
    },
    run(terraformDir, args): Promise<RunResult> {
      asked.push(`${terraformDir} ${args.join(' ')}`);
      const json = Object.fromEntries(Object.entries(outputs).map(([name, value]) => [name, { sensitive: true, type: 'string', value }]));
      return Promise.resolve({ command: ['tofu', ...args], stdout: JSON.stringify(json), stderr: '', exitCode: 0, durationMs: 1 });
    },
  };
}

/** What withClusterCredentials needs, reading from `tofu` in `terraformDir`. */
function depsFor(
  tofu: Tofu,
  baseDir: string,
  scrubber = new SecretScrubber(),
  terraformDir = '/srv/tf',
): { outputs: TerraformOutputs; baseDir: string } {
  return { outputs: terraformOutputs({ tofu, scrubber }, { terraformDir }), baseDir };
}

describe('withClusterCredentials', () => {
  let baseDir: string;
  beforeEach(async () => {
    baseDir = await mkdtemp(join(tmpdir(), 'credentials-test-'));
  });
  afterEach(async () => {
    await rm(baseDir, { recursive: true, force: true });
  });

  it('fetches both credentials with one tofu output -json in the cluster directory', async () => {
    // Arrange
    const tofu = fakeTofu();

    // Act
    await withClusterCredentials(depsFor(tofu, baseDir, new SecretScrubber(), '/srv/infra/terraform/production'), undefined, () =>
      Promise.resolve(),
    );

    // Assert: one call reads both
    expect(tofu.asked).toEqual(['/srv/infra/terraform/production output -json']);
  });

  it('writes them into a private directory (0700) as private files (0600)', async () => {
    // Arrange
    const deps = depsFor(fakeTofu(), baseDir);

    // Act
    const seen = await withClusterCredentials(deps, undefined, async (credentials) => ({
      credentials,
      dirMode: (await stat(credentials.dir)).mode & 0o777,
      talosconfigMode: (await stat(credentials.talosconfigPath)).mode & 0o777,
      kubeconfigMode: (await stat(credentials.kubeconfigPath)).mode & 0o777,
      talosconfig: await readFile(credentials.talosconfigPath, 'utf8'),
      kubeconfigFile: await readFile(credentials.kubeconfigPath, 'utf8'),
      files: (await readdir(credentials.dir)).sort(),
    }));

    // Assert
    expect(seen.dirMode).toBe(0o700);
    expect(seen.talosconfigMode).toBe(0o600);
    expect(seen.kubeconfigMode).toBe(0o600);
    expect(seen.talosconfig).toBe(TALOSCONFIG);
    expect(seen.kubeconfigFile).toBe(KUBECONFIG);
    expect(seen.credentials.kubeconfig).toBe(KUBECONFIG);
    expect(seen.files).toEqual(['.owner', 'kubeconfig', 'talosconfig']);
    expect(dirname(seen.credentials.dir)).toBe(baseDir);
  });

  it('removes the directory after the work succeeds and returns its result', async () => {
    // Arrange
    const deps = depsFor(fakeTofu(), baseDir);
    let used: ClusterCredentials | undefined;

    // Act
    const result = await withClusterCredentials(deps, undefined, (credentials) => {
      used = credentials;
      return Promise.resolve('health gate passed');
    });

    // Assert
    expect(result).toBe('health gate passed');
    expect(used).toBeDefined();
    expect(existsSync(used!.dir)).toBe(false);
    expect(await readdir(baseDir)).toEqual([]);
  });

  it('removes the directory after the work throws, and rethrows', async () => {
    // Arrange
    const deps = depsFor(fakeTofu(), baseDir);
    let used: ClusterCredentials | undefined;

    // Act
    const outcome = withClusterCredentials(deps, undefined, (credentials) => {
      used = credentials;
      return Promise.reject(new Error('etcd has no leader'));
    });

    // Assert
    await expect(outcome).rejects.toThrow('etcd has no leader');
    expect(used).toBeDefined();
    expect(existsSync(used!.dir)).toBe(false);
    expect(await readdir(baseDir)).toEqual([]);
  });

  it('creates nothing when tofu cannot give the credentials', async () => {
    // Arrange
    const deps = depsFor(fakeTofu({ talosconfig: TALOSCONFIG }), baseDir);
    let ran = false;

    // Act
    const outcome = withClusterCredentials(deps, undefined, () => {
      ran = true;
      return Promise.resolve();
    });

    // Assert
    await expect(outcome).rejects.toThrow(
      'Terraform in /srv/tf has no output "talos_kubeconfig" (the kubeconfig the bot reads): declare it and run tofu apply, or set terraformOutputs.kubeconfig in the inventory to the name this configuration uses',
    );
    expect(ran).toBe(false);
    expect(await readdir(baseDir)).toEqual([]);
  });

  it('registers both credentials with the scrubber before the work runs', async () => {
    // Arrange
    const scrubber = new SecretScrubber();
    const deps = depsFor(fakeTofu(), baseDir, scrubber);

    // Act
    const scrubbedDuringWork = await withClusterCredentials(deps, undefined, () =>
      Promise.resolve(scrubber.scrub(`talosctl: bad key ${TALOS_KEY}; kubectl: token ${KUBE_TOKEN}`)),
    );

    // Assert
    expect(scrubbedDuringWork).toBe('talosctl: bad key [REDACTED]; kubectl: token [REDACTED]');
  });

  it('gives each run its own directory', async () => {
    // Arrange
    const deps = depsFor(fakeTofu(), baseDir);

    // Act
    const dirs = await Promise.all(
      [1, 2].map(() => withClusterCredentials(deps, undefined, (credentials) => Promise.resolve(credentials.dir))),
    );

    // Assert
    expect(new Set(dirs).size).toBe(2);
  });
});

describe('kubeconfigServer', () => {
  const kubeconfig = (server: string): string =>
    `apiVersion: v1\nkind: Config\nclusters:\n- name: production\n  cluster:\n    server: ${server}\n    certificate-authority-data: Y2E=\n` +
    `contexts:\n- name: admin@production\n  context:\n    cluster: production\n    user: admin@production\ncurrent-context: admin@production\n` +
    `users:\n- name: admin@production\n  user:\n    token: ${KUBE_TOKEN}\n`;

  it("gives the server of the current context's cluster", async () => {
    expect(await kubeconfigServer(kubeconfig('https://10.0.30.10:6443'))).toBe('https://10.0.30.10:6443');
  });

  it('names no server when the current context has no cluster', async () => {
    expect(await kubeconfigServer(KUBECONFIG)).toBeUndefined();
  });

  it('reports an unreadable kubeconfig without a word of its text', async () => {
    // client-node's own error would name the broken entry; the bot's names nothing of the file.
    const broken = `clusters:\n- name: ${KUBE_TOKEN}\n  cluster: {}\n`;
    let error: Error | undefined;
    try {
      await kubeconfigServer(broken);
    } catch (caught) {
      error = caught as Error;
    }
    expect(error?.message).toBe('the kubeconfig of tofu output -raw talos_kubeconfig cannot be read as a kubeconfig');
    expect(error?.message).not.toContain(KUBE_TOKEN);
  });
});
