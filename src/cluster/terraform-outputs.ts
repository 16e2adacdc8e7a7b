import { z } from 'zod';
import { terraformWorkDir, type TerraformLocation } from '../config/terraform-repo.ts';
import type { SecretScrubber } from '../log/secret-scrubber.ts';
import type { Tofu } from './tofu.ts';

/** The Terraform outputs the bot reads, by role, with the names the reference configuration gives them. */
export const DEFAULT_OUTPUT_NAMES = {
  /** The talosconfig for talosctl (sensitive). */
  talosconfig: 'talosconfig',
  /** The admin kubeconfig for the Kubernetes API (sensitive). */
  kubeconfig: 'talos_kubeconfig',
  /** The Image Factory schematic ID of the default installer. */
  schematicId: 'talos_image_factory_schematic_id',
  /** The installer image of the Longhorn node class; optional. */
  longhornInstaller: 'talos_longhorn_installer_image',
  /** The declared Talos version (`talos_version`): what a machine Terraform creates must run. */
  talosVersion: 'talos_version',
  /** The declared Kubernetes version (`talos_kubernetes_version`). */
  kubernetesVersion: 'talos_kubernetes_version',
} as const;

export type OutputRole = keyof typeof DEFAULT_OUTPUT_NAMES;

/** An inventory's renames: a role → the output name this cluster's configuration uses. */
export type OutputNames = Partial<Record<OutputRole, string>>;

/** The outputs of one Terraform directory, read once (`tofu output -json`) and kept in memory for one job. */
export interface TerraformOutputs {
  /** The output name read for a role in this cluster. */
  name(role: OutputRole): string;
  /** The output's value; undefined when the state declares no such output. */
  optional(role: OutputRole, signal?: AbortSignal): Promise<string | undefined>;
  /** The output's value; throws naming the output, and the inventory key that renames it, when the state has none. */
  required(role: OutputRole, signal?: AbortSignal): Promise<string>;
}

/** The inventory key that renames a role's output. */
function inventoryKey(role: OutputRole): string {
  if (role === 'talosVersion') return 'declaredVersions.talos';
  if (role === 'kubernetesVersion') return 'declaredVersions.kubernetes';
  return `terraformOutputs.${role}`;
}

/** The inventory's `declaredVersions` as output roles. */
function declaredOutputNames(declared: { talos?: string; kubernetes?: string } | undefined): OutputNames {
  return {
    ...(declared?.talos === undefined ? {} : { talosVersion: declared.talos }),
    ...(declared?.kubernetes === undefined ? {} : { kubernetesVersion: declared.kubernetes }),
  };
}

/** `tofu output -json`: each output's value, its type and whether Terraform marks it sensitive. */
const OutputsJson = z.record(z.string(), z.object({ sensitive: z.boolean().default(false), value: z.unknown() }));

/** Roles whose values are credentials whether or not the configuration marks them sensitive. */
const CREDENTIAL_ROLES: readonly OutputRole[] = ['talosconfig', 'kubeconfig'];

export interface TerraformOutputsDeps {
  tofu: Tofu;
  scrubber: SecretScrubber;
}

/**
 * One `tofu output -json` per job instead of one `tofu output -raw` per value: every child the bot
 * forks copies its whole heap, which is most of a health gate's own cost. The values live only in
 * this object, never in Redis or on disk; every sensitive output and both credentials are
 * registered with the scrubber as soon as they are read.
 */
export function terraformOutputs(
  deps: TerraformOutputsDeps,
  cluster: TerraformLocation & { terraformOutputs?: OutputNames; declaredVersions?: { talos?: string; kubernetes?: string } },
): TerraformOutputs {
  const names = { ...DEFAULT_OUTPUT_NAMES, ...cluster.terraformOutputs, ...declaredOutputNames(cluster.declaredVersions) };
  const credentialNames = new Set(CREDENTIAL_ROLES.map((role) => names[role]));
  let read: Promise<Map<string, string>> | undefined;
  const all = (signal?: AbortSignal): Promise<Map<string, string>> => {
    read ??= (async () => {
      const result = await deps.tofu.run(terraformWorkDir(cluster), ['output', '-json'], { signal, secretOutput: true });
      let parsed: z.infer<typeof OutputsJson>;
      try {
        parsed = OutputsJson.parse(JSON.parse(result.stdout === '' ? '{}' : result.stdout));
      } catch {
        // The text is credentials: nothing of it goes into the error.
        throw new Error(`tofu output -json in ${terraformWorkDir(cluster)} did not print the outputs as JSON`);
      }
      const values = new Map<string, string>();
      for (const [name, output] of Object.entries(parsed)) {
        const value = typeof output.value === 'string' ? output.value : JSON.stringify(output.value);
        if (output.sensitive || credentialNames.has(name)) deps.scrubber.add(value);
        values.set(name, value);
      }
      return values;
    })();
    // A failed read is not kept: the next caller (a Retry in the same job) asks tofu again.
    read.catch(() => (read = undefined));
    return read;
  };
  return {
    name: (role) => names[role],
    optional: async (role, signal) => (await all(signal)).get(names[role]),
    async required(role, signal) {
      const value = (await all(signal)).get(names[role]);
      if (value !== undefined) return value;
      throw new Error(
        `Terraform in ${terraformWorkDir(cluster)} has no output "${names[role]}" (the ${role} the bot reads): declare it and run tofu apply, or set ${inventoryKey(role)} in the inventory to the name this configuration uses`,
      );
    },
  };
}
