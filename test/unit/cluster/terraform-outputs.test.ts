import { describe, expect, it } from 'vitest';
import { terraformOutputs } from '../../../src/cluster/terraform-outputs.ts';
import type { Tofu } from '../../../src/cluster/tofu.ts';
import type { RunResult } from '../../../src/exec/process-runner.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

const SCHEMATIC = '376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba';
const CANARY_TALOSCONFIG = 'context: prod\nkey: talosKeyCanary0123456789abcdefXYZ\n';
const CANARY_KUBECONFIG = 'users:\n- user:\n    token: kubeTokenCanary0123456789abcdefXYZ\n';
const CANARY_SENSITIVE = 'machineSecretCanary0123456789abcdef';

/** A tofu whose `output -json` prints `outputs`; it counts its calls. */
function jsonTofu(outputs: Record<string, { sensitive: boolean; value: unknown }>): Tofu & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    calls,
    outputRaw: () => Promise.reject(new Error('outputs are read with output -json')),
    run(_dir, args, options): Promise<RunResult> {
      calls.push(args);
      expect(options?.secretOutput).toBe(true);
      return Promise.resolve({ command: ['tofu', ...args], stdout: JSON.stringify(outputs), stderr: '', exitCode: 0, durationMs: 1 });
    },
  };
}

describe('terraformOutputs', () => {
  it('reads every output with one tofu output -json, however many are asked for', async () => {
    // Arrange
    const tofu = jsonTofu({
      talosconfig: { sensitive: true, value: CANARY_TALOSCONFIG },
      talos_kubeconfig: { sensitive: true, value: CANARY_KUBECONFIG },
      talos_image_factory_schematic_id: { sensitive: false, value: SCHEMATIC },
    });
    const outputs = terraformOutputs({ tofu, scrubber: new SecretScrubber() }, { terraformDir: '/srv/tf' });

    // Act
    const values = await Promise.all([
      outputs.required('talosconfig'),
      outputs.required('kubeconfig'),
      outputs.required('schematicId'),
      outputs.optional('longhornInstaller'),
    ]);

    // Assert
    expect(values).toEqual([CANARY_TALOSCONFIG, CANARY_KUBECONFIG, SCHEMATIC, undefined]);
    expect(tofu.calls).toEqual([['output', '-json']]);
  });

  it('reads the names the inventory gives instead of the defaults', async () => {
    // Arrange
    const tofu = jsonTofu({
      cluster_talosconfig: { sensitive: true, value: CANARY_TALOSCONFIG },
      admin_kubeconfig: { sensitive: true, value: CANARY_KUBECONFIG },
      schematic: { sensitive: false, value: SCHEMATIC },
      longhorn_image: { sensitive: false, value: `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.11.6` },
    });
    const renames = {
      talosconfig: 'cluster_talosconfig',
      kubeconfig: 'admin_kubeconfig',
      schematicId: 'schematic',
      longhornInstaller: 'longhorn_image',
    };
    const outputs = terraformOutputs({ tofu, scrubber: new SecretScrubber() }, { terraformDir: '/srv/tf', terraformOutputs: renames });

    // Act
    const values = await Promise.all([
      outputs.required('talosconfig'),
      outputs.required('kubeconfig'),
      outputs.required('schematicId'),
      outputs.optional('longhornInstaller'),
    ]);

    // Assert
    expect(values).toEqual([CANARY_TALOSCONFIG, CANARY_KUBECONFIG, SCHEMATIC, `factory.talos.dev/nocloud-installer/${SCHEMATIC}:v1.11.6`]);
    expect(outputs.name('longhornInstaller')).toBe('longhorn_image');
  });

  it('registers the credentials and every sensitive output with the scrubber, and nothing public', async () => {
    // Arrange: the kubeconfig is not marked sensitive, and is a credential all the same
    const scrubber = new SecretScrubber();
    const tofu = jsonTofu({
      talosconfig: { sensitive: true, value: CANARY_TALOSCONFIG },
      talos_kubeconfig: { sensitive: false, value: CANARY_KUBECONFIG },
      machine_secrets: { sensitive: true, value: { bootstrap: CANARY_SENSITIVE } },
      talos_image_factory_schematic_id: { sensitive: false, value: SCHEMATIC },
    });
    const outputs = terraformOutputs({ tofu, scrubber }, { terraformDir: '/srv/tf' });

    // Act
    await outputs.required('schematicId');
    const text = scrubber.scrub(
      `key talosKeyCanary0123456789abcdefXYZ token kubeTokenCanary0123456789abcdefXYZ secret ${CANARY_SENSITIVE} schematic ${SCHEMATIC}`,
    );

    // Assert
    expect(text).toBe(`key [REDACTED] token [REDACTED] secret [REDACTED] schematic ${SCHEMATIC}`);
  });

  it('names the missing output and the inventory key that renames it', async () => {
    // Arrange
    const outputs = terraformOutputs(
      { tofu: jsonTofu({}), scrubber: new SecretScrubber() },
      { terraformDir: '/srv/tf', terraformOutputs: { schematicId: 'image_schematic' } },
    );

    // Act
    const outcome = outputs.required('schematicId');

    // Assert
    await expect(outcome).rejects.toThrow(
      'Terraform in /srv/tf has no output "image_schematic" (the schematicId the bot reads): declare it and run tofu apply, or set terraformOutputs.schematicId in the inventory to the name this configuration uses',
    );
  });

  it('reads the declared versions by the names declaredVersions gives, the older terraformOutputs.talosVersion too, and names declaredVersions when one is missing', async () => {
    // Arrange
    const tofu = jsonTofu({ tv: { sensitive: false, value: 'v1.13.9' }, kv: { sensitive: false, value: 'v1.34.2' } });
    const scrubber = new SecretScrubber();
    const named = terraformOutputs({ tofu, scrubber }, { terraformDir: '/srv/tf', declaredVersions: { talos: 'tv', kubernetes: 'kv' } });
    const legacy = terraformOutputs({ tofu, scrubber }, { terraformDir: '/srv/tf', terraformOutputs: { talosVersion: 'tv' } });

    // Act
    const values = [await named.optional('talosVersion'), await named.optional('kubernetesVersion'), await legacy.optional('talosVersion')];
    const missing = legacy.required('kubernetesVersion');

    // Assert
    expect(values).toEqual(['v1.13.9', 'v1.34.2', 'v1.13.9']);
    await expect(missing).rejects.toThrow('or set declaredVersions.kubernetes in the inventory to the name this configuration uses');
  });

  it('says nothing of the text when tofu prints something other than JSON', async () => {
    // Arrange
    const tofu: Tofu = {
      outputRaw: () => Promise.reject(new Error('unused')),
      run: (_dir, args) =>
        Promise.resolve({
          command: ['tofu', ...args],
          stdout: `talosconfig = ${CANARY_TALOSCONFIG}`,
          stderr: '',
          exitCode: 0,
          durationMs: 1,
        }),
    };
    const outputs = terraformOutputs({ tofu, scrubber: new SecretScrubber() }, { terraformDir: '/srv/tf' });

    // Act
    const error = await outputs.required('talosconfig').catch((e: unknown) => e as Error);

    // Assert
    expect((error as Error).message).toBe('tofu output -json in /srv/tf did not print the outputs as JSON');
  });
});
