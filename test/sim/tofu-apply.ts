/**
 * `tofu apply` of a plan against a simulated cluster: the progress lines, the summary and the
 * outputs tofu prints, and what the applied changes do to the machines (VMs created and
 * destroyed, configurations applied, nodes joining), on the simulator's clock.
 */
import { buildNode } from './cluster-model.ts';
import { wait, type ExecIO } from './exec-io.ts';
import type { Lifecycle } from './lifecycle.ts';
import type { Recorder } from './recorder.ts';
import { acts, assignIds, isReplacement, type PlannedChange } from './terraform-resources.ts';
import { outputValues, planHasChanges, type SimPlan } from './tofu-plan.ts';
import { changeCounts, diagnostic } from './tofu-render.ts';
import type { ResourceInstance, SimCluster, SimNode, SimTiming } from './types.ts';

export interface ApplyRuntime {
  timing: SimTiming;
  lifecycle: Lifecycle;
  recorder: Recorder;
}

/** Dependency order: secrets and schematic, then VMs, then the configuration applied to them, then the kubeconfig. */
const RANK: Record<string, number> = {
  talos_machine_secrets: 0,
  talos_image_factory_schematic: 1,
  proxmox_virtual_environment_vm: 2,
  talos_machine_configuration_apply: 3,
  talos_cluster_kubeconfig: 4,
};

/** Destroys run first, dependents before what they depend on; then creates and updates in dependency order. */
function applyOrder(changes: PlannedChange[]): PlannedChange[] {
  const rank = (c: PlannedChange): number => RANK[c.type] ?? 5;
  const destroys = changes.filter((c) => c.actions.join() === 'delete').sort((a, b) => rank(b) - rank(a));
  const rest = changes.filter((c) => acts(c) && c.actions.join() !== 'delete').sort((a, b) => rank(a) - rank(b));
  return [...destroys, ...rest];
}

/**
 * What applying a change does, in order: a replacement is destroy-then-create, create-then-destroy
 * (`create_before_destroy`: the old object is deposed, then destroyed) or forget-then-create (the old
 * object stays where it is and only leaves the state).
 */
type Phase = 'create' | 'update' | 'delete' | 'delete-deposed' | 'forget';

function phasesOf(change: PlannedChange): Phase[] {
  const key = change.actions.join();
  if (key === 'create,delete') return ['create', 'delete-deposed'];
  if (key === 'forget,create') return ['forget', 'create'];
  if (key === 'delete,create') return ['delete', 'create'];
  if (key === 'forget') return ['forget'];
  return [change.actions[0] === 'update' ? 'update' : change.actions[0] === 'delete' ? 'delete' : 'create'];
}

/** Seconds a resource type's operation reports, as real providers take about that long. */
function seconds(change: PlannedChange, phase: 'create' | 'update' | 'delete'): string {
  if (change.type === 'proxmox_virtual_environment_vm') return phase === 'delete' ? '6s' : '2m14s';
  if (change.type === 'talos_machine_configuration_apply') return phase === 'delete' ? '0s' : '1s';
  return '0s';
}

function nodeFor(cluster: SimCluster, change: PlannedChange): SimNode | undefined {
  return change.index === undefined ? undefined : cluster.nodes.find((n) => n.hostname === change.index);
}

/**
 * What a VM Terraform creates boots: the ISO at the static Proxmox file ID, the declared Talos and
 * the schematic of its class unless the `staleIso` fault says the uploaded ISO is an older build.
 * The runbook's estate names no newer install image in the machine configuration, so the machine
 * keeps running what the ISO held (reference/node-replacement.md, "The new node's version").
 */
function isoOf(cluster: SimCluster, plan: SimPlan, hostname: string): { version: string; schematic: string } {
  const tf = cluster.terraform;
  const declared = plan.variables.talos_nodes[hostname];
  const schematic = declared?.longhorn_installer === true && tf.longhornSchematic ? tf.longhornSchematic : tf.defaultSchematic;
  const stale = cluster.faults.staleIso;
  return { version: stale?.version ?? plan.variables.talos_version, schematic: stale?.schematic ?? schematic };
}

/** A VM Terraform created: a machine in maintenance mode, waiting for its configuration. */
function createMachine(cluster: SimCluster, change: PlannedChange, plan: SimPlan, runtime: ApplyRuntime): void {
  const hostname = change.index ?? '';
  const declared = plan.variables.talos_nodes[hostname];
  if (!declared) return;
  const stale = cluster.nodes.findIndex((n) => n.hostname === hostname || n.address === declared.address);
  if (stale >= 0) cluster.nodes.splice(stale, 1);
  const tf = cluster.terraform;
  const longhorn = cluster.shape.longhorn && declared.longhorn;
  const iso = isoOf(cluster, plan, hostname);
  const node = buildNode({
    cluster: cluster.name,
    node: { hostname, address: declared.address, role: declared.role, host: declared.host, longhorn },
    longhorn,
    talosVersion: iso.version,
    kubernetesVersion: plan.variables.talos_kubernetes_version,
    // A new machine boots the image of the installer Terraform builds it from.
    schematic: iso.schematic,
    platform: tf.installerPlatform,
    bootedAt: Date.now(),
    lastUpAt: Date.now(),
  });
  cluster.nodes.push(node);
  runtime.lifecycle.freshMachine(cluster, node, { replacesIncarnation: false });
  runtime.recorder.event({ cluster: cluster.name, node: node.address, kind: 'vm-created', detail: hostname });
}

/** What one applied change does to the machines. */
function effect(cluster: SimCluster, change: PlannedChange, plan: SimPlan, runtime: ApplyRuntime, phase: Phase): void {
  const node = nodeFor(cluster, change);
  const event = (kind: 'secrets-replaced' | 'vm-replaced' | 'vm-destroyed'): void =>
    runtime.recorder.event({ cluster: cluster.name, ...(node ? { node: node.address } : {}), kind, detail: change.address });
  if (change.type === 'talos_machine_secrets' && phase === 'create') event('secrets-replaced');
  if (change.type === 'proxmox_virtual_environment_vm') {
    if (phase === 'delete' && node && change.actions.length === 1) {
      event('vm-destroyed');
      runtime.lifecycle.destroyVm(cluster, node);
    } else if (phase === 'create' && isReplacement(change) && node) {
      // Under forget-then-create the old VM keeps running beside the new one; the simulator models only the new machine.
      event('vm-replaced');
      const iso = isoOf(cluster, plan, node.hostname);
      node.talosVersion = iso.version;
      node.schematic = iso.schematic;
      runtime.lifecycle.freshMachine(cluster, node);
    } else if (phase === 'create') createMachine(cluster, change, plan, runtime);
  }
  // The Talos provider applies the configuration to a machine that waits for it; deleting the resource only forgets it.
  if (change.type === 'talos_machine_configuration_apply' && (phase === 'create' || phase === 'update') && node)
    runtime.lifecycle.joinNode(cluster, node);
}

/** Records the change in the state, as tofu persists each finished resource. */
function record(cluster: SimCluster, change: PlannedChange, phase: Phase, deposedId?: string): string | undefined {
  const resources = cluster.terraform.state.resources;
  // The deposed object of a create-before-destroy is no longer in the state's current slot.
  if (phase === 'delete-deposed') return deposedId;
  if (phase === 'delete' || phase === 'forget') {
    const id = resources[change.address]?.attributes['id'];
    delete resources[change.address];
    return id === undefined ? undefined : String(id);
  }
  const previous = resources[change.address];
  const next: ResourceInstance = {
    address: change.address,
    type: change.type,
    name: change.name,
    ...(change.index === undefined ? {} : { index: change.index }),
    provider: change.provider,
    attributes: { ...change.after },
  };
  if (phase === 'update' && previous?.attributes['id'] !== undefined) next.attributes['id'] = previous.attributes['id'];
  else delete next.attributes['id'];
  assignIds({ [next.address]: next }, resources, {
    machineSecrets: cluster.credentials.machineSecrets,
    kubeconfig: cluster.credentials.kubeconfig,
  });
  resources[next.address] = next;
  return String(next.attributes['id']);
}

/** The eight hex digits tofu names a deposed object with, stable per address here. */
function deposedKey(change: PlannedChange): string {
  let hash = 0;
  for (const ch of change.address) hash = (Math.imul(hash, 31) + ch.charCodeAt(0)) >>> 0;
  return hash.toString(16).padStart(8, '0').slice(-8);
}

/** The resource a failure is reported on, with the configuration line tofu quotes. */
function failure(change: PlannedChange, summary: string): string {
  const line = 10 + (RANK[change.type] ?? 5) * 12;
  return diagnostic(
    'Error',
    summary,
    `  with ${change.address},\n  on main.tf line ${line}, in resource "${change.type}" "${change.name}":\n${String(line).padStart(4)}: resource "${change.type}" "${change.name}" {\n`,
  );
}

/** A Go duration of whole seconds as `time.Duration.String` prints it: `10s`, `1m0s`, `1h0m0s`. */
function goSeconds(total: number): string {
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  return h > 0 ? `${h}h${m}m${s}s` : m > 0 ? `${m}m${s}s` : `${s}s`;
}

/** hook_ui.go `stillApplying` (v1.12.6): every 10 s of a change, its address, what it is still doing, the prior id, the time so far. */
function stillApplying(io: ExecIO, shown: string, phase: string, id: string | number | boolean | undefined, lines: number): void {
  const doing = phase === 'delete' || phase === 'delete-deposed' ? 'destroying' : phase === 'update' ? 'modifying' : 'creating';
  const idSuffix = id === undefined || doing === 'creating' ? '' : `id=${String(id)}, `;
  for (let i = 1; i <= lines; i += 1) io.out(`${shown}: Still ${doing}... [${idSuffix}${goSeconds(10 * i)} elapsed]\n`);
}

/**
 * Applies `plan` to the cluster and prints what tofu prints. The state is written (serial + 1)
 * whenever anything was applied, a partial apply included. Returns the exit code.
 */
export async function applyPlan(cluster: SimCluster, plan: SimPlan, io: ExecIO, runtime: ApplyRuntime): Promise<number> {
  const { recorder, timing } = runtime;
  const steps = applyOrder(plan.changes);
  const failAfterFirst = cluster.faults.tofuApplyFail;
  let done = 0;
  let firstLine = true;
  for (const change of steps) {
    if (failAfterFirst !== undefined && done === 1) {
      cluster.terraform.state.serial += 1;
      recorder.event({ cluster: cluster.name, kind: 'tofu-apply', detail: `failed after 1 of ${steps.length}: ${failAfterFirst}` });
      io.err(failure(change, failAfterFirst));
      return 1;
    }
    const priorId = cluster.terraform.state.resources[change.address]?.attributes['id'];
    for (const phase of phasesOf(change)) {
      const id = phase === 'delete-deposed' ? priorId : cluster.terraform.state.resources[change.address]?.attributes['id'];
      // views/hook_ui.go (v1.12.6): a deposed object is named with its key; a forget prints nothing.
      const shown = phase === 'delete-deposed' ? `${change.address} (deposed object ${deposedKey(change)})` : change.address;
      if (phase === 'forget') {
        record(cluster, change, phase);
        continue;
      }
      if (phase === 'delete' || phase === 'delete-deposed') io.out(`${shown}: Destroying... [id=${String(id)}]\n`);
      else if (phase === 'update') io.out(`${change.address}: Modifying... [id=${String(id)}]\n`);
      else io.out(`${change.address}: Creating...\n`);
      if (firstLine) {
        firstLine = false;
        await cluster.faults.tofuApplyFirstLine?.();
      }
      stillApplying(io, shown, phase, id, timing.tofuStillLines ?? 0);
      await wait(timing.stepMs, io.signal);
      const newId = record(cluster, change, phase, id === undefined ? undefined : String(id));
      effect(cluster, change, plan, runtime, phase);
      if (phase === 'delete' || phase === 'delete-deposed') io.out(`${shown}: Destruction complete after ${seconds(change, 'delete')}\n`);
      else if (phase === 'update')
        io.out(`${change.address}: Modifications complete after ${seconds(change, phase)} [id=${newId ?? ''}]\n`);
      else io.out(`${change.address}: Creation complete after ${seconds(change, phase)} [id=${newId ?? ''}]\n`);
    }
    done++;
  }
  const tf = cluster.terraform;
  // The state manager writes only a state that changed; a no-op apply leaves the serial alone.
  if (planHasChanges(plan)) tf.state.serial += 1;
  tf.applied = structuredClone(plan.variables);
  tf.talosVersion = plan.variables.talos_version;
  tf.kubernetesVersion = plan.variables.talos_kubernetes_version;
  const { add, change, destroy } = changeCounts(plan.changes);
  const summary = `${add} added, ${change} changed, ${destroy} destroyed`;
  recorder.event({ cluster: cluster.name, kind: 'tofu-apply', detail: summary });
  const outputs = Object.entries(outputValues(cluster))
    .map(([name, o]) => `${name} = ${o.sensitive ? '<sensitive>' : JSON.stringify(o.value)}\n`)
    .join('');
  io.out(`\nApply complete! Resources: ${summary}.\n\nOutputs:\n\n${outputs}`);
  return 0;
}
