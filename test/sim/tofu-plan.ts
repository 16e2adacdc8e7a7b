/**
 * What `tofu plan` computes for a simulated cluster: the resource changes from the state to the
 * declared inputs, the output changes, and the saved plan file that records them with the state's
 * lineage and serial (reference/tofu-facts.md).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { acts, desiredResources, diffResources, type PlannedChange } from './terraform-resources.ts';
import type { DeclaredInputs, SimCluster } from './types.ts';

/** The OpenTofu release simulated: `["forget","create"]` exists from v1.12.0. */
export const TOFU_VERSION = '1.12.6';

export interface OutputValue {
  sensitive: boolean;
  value: string;
}

/** One entry of a plan's `output_changes`; a sensitive output's values are carried too, as tofu keeps them. */
export interface OutputChange {
  actions: string[];
  sensitive: boolean;
  before?: string;
  after?: string;
}

/** A saved plan: what `-out` writes and `apply <file>` applies exactly. */
export interface SimPlan {
  cluster: string;
  /** Lineage and serial of the state the plan was made from (real plan files carry the prior state). */
  lineage: string;
  serial: number;
  /** The declared inputs the plan was made from: the applied inputs once it is applied. */
  variables: DeclaredInputs;
  changes: PlannedChange[];
  outputChanges: Record<string, OutputChange>;
  timestamp: string;
}

/** The root module's outputs for the given Talos and Kubernetes versions, with a test's `tofuOutputs` laid over. */
export function outputValues(
  cluster: SimCluster,
  versions: { talos: string; kubernetes: string } = {
    talos: cluster.terraform.talosVersion,
    kubernetes: cluster.terraform.kubernetesVersion,
  },
): Record<string, OutputValue> {
  const tf = cluster.terraform;
  const installer = (schematic: string): string => `factory.talos.dev/${tf.installerPlatform}-installer/${schematic}:${versions.talos}`;
  const list: Record<string, OutputValue> = {
    talos_image_factory_schematic_id: { sensitive: false, value: tf.defaultSchematic },
    talos_installer_image: { sensitive: false, value: installer(tf.defaultSchematic) },
    talos_kubeconfig: { sensitive: true, value: cluster.credentials.kubeconfig },
    talos_kubernetes_version: { sensitive: false, value: versions.kubernetes },
    talos_version: { sensitive: false, value: versions.talos },
    talosconfig: { sensitive: true, value: cluster.credentials.talosconfig },
  };
  if (tf.longhornSchematic) {
    list['talos_longhorn_installer_image'] = { sensitive: false, value: installer(tf.longhornSchematic) };
  }
  for (const [name, value] of Object.entries(cluster.faults.tofuOutputs ?? {}))
    list[name] = { sensitive: list[name]?.sensitive ?? false, value };
  return Object.fromEntries(Object.entries(list).sort(([a], [b]) => a.localeCompare(b)));
}

/** Lays the test's `tofuPlan` fault over the computed changes, as the fake always did. */
function layerFault(cluster: SimCluster, changes: PlannedChange[]): void {
  const fault = cluster.faults.tofuPlan;
  const first = cluster.nodes[0]?.hostname;
  const find = (address: string): PlannedChange | undefined => changes.find((c) => c.address === address);
  const force = (change: PlannedChange | undefined, actions: string[], reason?: string): void => {
    if (!change || acts(change)) return;
    change.actions = actions;
    if (reason) change.actionReason = reason;
  };
  if (fault === 'replace-secrets') force(find('talos_machine_secrets.this'), ['delete', 'create'], 'replace_because_cannot_update');
  if (fault === 'replace-vm' && first)
    force(find(`proxmox_virtual_environment_vm.talos[${JSON.stringify(first)}]`), ['delete', 'create'], 'replace_because_cannot_update');
  if (fault === 'changes' && first) force(find(`talos_machine_configuration_apply.this[${JSON.stringify(first)}]`), ['update']);
  // What a newer OpenTofu may write: jsonplan's `actionString` (plan.go, v1.12.6) passes an Action it has no
  // case for through as its Go name, so a plan can hold actions no reader of today knows.
  for (const [address, actions] of Object.entries(cluster.faults.tofuPlanActions ?? {})) {
    const change = find(address);
    if (change) change.actions = [...actions];
  }
}

/** The plan from the cluster's state to `inputs`. */
export function computePlan(cluster: SimCluster, inputs: DeclaredInputs, forceReplace: readonly string[] = []): SimPlan {
  const { state, applied } = cluster.terraform;
  const changes = diffResources(
    state.resources,
    desiredResources(cluster.name, inputs, cluster.terraform.defaultSchematic),
    inputs.lifecycle,
    new Set(forceReplace),
    inputs.removed,
  );
  layerFault(cluster, changes);
  const before = outputValues(cluster);
  const after = outputValues(cluster, { talos: inputs.talos_version, kubernetes: inputs.talos_kubernetes_version });
  const secretsChange = inputs.talos_secrets_generation !== applied.talos_secrets_generation;
  const outputChanges: Record<string, OutputChange> = {};
  for (const [name, value] of Object.entries(after)) {
    const was = before[name];
    if (value.sensitive) {
      // Credentials derive from the secrets: they change only with them, and are known only after the apply then.
      outputChanges[name] = {
        actions: [secretsChange ? 'update' : 'no-op'],
        sensitive: true,
        ...(was ? { before: was.value } : {}),
        ...(secretsChange ? {} : { after: value.value }),
      };
      continue;
    }
    outputChanges[name] = {
      actions: [was === undefined ? 'create' : was.value === value.value ? 'no-op' : 'update'],
      sensitive: false,
      ...(was ? { before: was.value } : {}),
      after: value.value,
    };
  }
  return {
    cluster: cluster.name,
    lineage: state.lineage,
    serial: state.serial,
    variables: structuredClone(inputs),
    changes,
    outputChanges,
    timestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
  };
}

/** Whether applying the plan would do anything (resources or outputs). */
export function planHasChanges(plan: SimPlan): boolean {
  return plan.changes.some(acts) || Object.values(plan.outputChanges).some((o) => o.actions.join() !== 'no-op');
}

/**
 * A real plan file is a zip archive (plan, prior state, configuration snapshot) that only tofu
 * reads. The fake's format is its own: a header line and base64, so nothing but the simulator
 * can take it for a plan, and a JSON parser rejects it.
 */
const PLAN_MAGIC = 'SIMULATED-TOFU-PLANFILE v1';

export async function writePlanFile(path: string, plan: SimPlan): Promise<void> {
  await writeFile(path, `${PLAN_MAGIC}\n${Buffer.from(JSON.stringify(plan)).toString('base64')}\n`, { mode: 0o600 });
}

/** The plan in the file, or undefined when the file is not a saved plan (missing, or something else). */
export async function readPlanFile(path: string): Promise<SimPlan | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
  const [magic, body] = text.split('\n');
  if (magic !== PLAN_MAGIC || body === undefined) return undefined;
  return JSON.parse(Buffer.from(body, 'base64').toString('utf8')) as SimPlan;
}
