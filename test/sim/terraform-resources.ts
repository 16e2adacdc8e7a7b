/**
 * The Terraform configuration of a simulated cluster, reduced to what `tofu plan` compares: the
 * resource instances the declared inputs ask for, and the difference to the state. Resource
 * names follow the runbook (`proxmox_virtual_environment_vm.talos[<host>]`,
 * `talos_machine_configuration_apply.this[<host>]`, `talos_machine_secrets.this`).
 */
import type { ClusterShape, DeclaredInputs, ResourceInstance, ResourceLifecycle } from './types.ts';

export const TALOS_PROVIDER = 'registry.opentofu.org/siderolabs/talos';
export const PROXMOX_PROVIDER = 'registry.opentofu.org/bpg/proxmox';

/** Attributes the providers mark "forces replacement": changing one deletes and recreates the object. */
const REPLACING_ATTRIBUTES = new Set(['generation']);

/**
 * Attributes the providers' schemas mark sensitive (siderolabs/talos: `machine_secrets` and
 * `client_configuration` of `talos_machine_secrets`, `kubeconfig_raw` of `talos_cluster_kubeconfig`).
 * The human plan shows them as `(sensitive value)`; `tofu show -json` prints them in plain text.
 */
export const SENSITIVE_ATTRIBUTES = new Set(['machine_secrets', 'client_configuration', 'kubeconfig_raw']);

/** Attributes the provider computes when it creates the object: unknown in the plan of a create. */
const COMPUTED_ATTRIBUTES = ['id', ...SENSITIVE_ATTRIBUTES];

/** The values a cluster's providers generate: its secrets and its kubeconfig. */
export interface GeneratedValues {
  machineSecrets: string;
  kubeconfig: string;
}

/** One entry of a plan's `resource_changes` (reference/tofu-facts.md, JSON plan). */
export interface PlannedChange {
  address: string;
  type: string;
  name: string;
  index?: string;
  provider: string;
  /**
   * As opentofu internal/command/jsonplan/plan.go (`actionString`, v1.12.6) writes them: `["no-op"]`,
   * `["create"]`, `["update"]`, `["delete"]`, `["delete","create"]`, `["create","delete"]`
   * (create_before_destroy), `["forget"]` and `["forget","create"]` (a replacement under
   * `lifecycle.destroy = false`).
   */
  actions: string[];
  /**
   * `replace_because_cannot_update`, `replace_by_request` (`-replace`), `replace_by_triggers`,
   * `delete_because_each_key`, `forgot_because_lifecycle_destroy_in_config`.
   */
  actionReason?: string;
  before: Record<string, string | number | boolean> | null;
  after: Record<string, string | number | boolean> | null;
}

/** The `lifecycle` block by which a configuration ties each node's configuration apply to its VM. */
export const CONFIG_APPLY_BLOCK = 'talos_machine_configuration_apply.this';
export const CONFIG_APPLY_TRIGGER = 'proxmox_virtual_environment_vm.talos[each.key]';

/**
 * The declared inputs that describe a cluster shape exactly as it was built. The estate ties each
 * configuration apply to its VM (`replace_triggered_by`), as the runbook asks; a test unties it with
 * `SimTerraform.setLifecycle(cluster, CONFIG_APPLY_BLOCK, {})`.
 */
export function inputsFromShape(shape: ClusterShape): DeclaredInputs {
  return {
    talos_version: shape.talosVersion,
    talos_kubernetes_version: shape.kubernetesVersion,
    talos_config_patch_revision: 1,
    talos_secrets_generation: 1,
    talos_nodes: Object.fromEntries(
      shape.nodes.map((n) => [
        n.hostname,
        {
          address: n.address,
          role: n.role,
          host: n.host,
          longhorn: shape.longhorn && (n.longhorn ?? false),
          ...(n.installer === 'longhorn' ? { longhorn_installer: true } : {}),
          vm_generation: 1,
        },
      ]),
    ),
    lifecycle: { [CONFIG_APPLY_BLOCK]: { replace_triggered_by: [CONFIG_APPLY_TRIGGER] } },
  };
}

function instance(
  type: string,
  name: string,
  provider: string,
  attributes: ResourceInstance['attributes'],
  index?: string,
): ResourceInstance {
  return {
    address: `${type}.${name}${index === undefined ? '' : `[${JSON.stringify(index)}]`}`,
    type,
    name,
    ...(index === undefined ? {} : { index }),
    provider,
    attributes,
  };
}

/** The resource instances a configuration applied with `inputs` consists of (without provider-assigned ids). */
export function desiredResources(cluster: string, inputs: DeclaredInputs, schematic: string): Record<string, ResourceInstance> {
  const list: ResourceInstance[] = [
    instance('talos_machine_secrets', 'this', TALOS_PROVIDER, { generation: inputs.talos_secrets_generation }),
    instance('talos_image_factory_schematic', 'this', TALOS_PROVIDER, { schematic }),
    instance('talos_cluster_kubeconfig', 'this', TALOS_PROVIDER, { cluster, secrets_generation: inputs.talos_secrets_generation }),
  ];
  for (const [hostname, node] of Object.entries(inputs.talos_nodes)) {
    list.push(
      instance(
        'proxmox_virtual_environment_vm',
        'talos',
        PROXMOX_PROVIDER,
        {
          name: hostname,
          node_name: node.host,
          address: node.address,
          role: node.role,
          longhorn: node.longhorn,
          generation: node.vm_generation,
          // bpg/terraform-provider-proxmox docs/resources/virtual_environment_vm.md: `stop_on_destroy` defaults to
          // false, so a destroy shuts the guest down gracefully and waits up to `timeout_shutdown_vm` (1800 s).
          stop_on_destroy: node.stop_on_destroy ?? false,
        },
        hostname,
      ),
      instance(
        'talos_machine_configuration_apply',
        'this',
        TALOS_PROVIDER,
        {
          node: node.address,
          machine_type: node.role,
          talos_version: inputs.talos_version,
          kubernetes_version: inputs.talos_kubernetes_version,
          config_patch_revision: inputs.talos_config_patch_revision,
          secrets_generation: inputs.talos_secrets_generation,
        },
        hostname,
      ),
    );
  }
  return Object.fromEntries(list.map((r) => [r.address, r]));
}

/** Provider-assigned ids and generated values, as the state records them after a create. */
export function assignIds(
  resources: Record<string, ResourceInstance>,
  taken: Record<string, ResourceInstance> = {},
  generated?: GeneratedValues,
): void {
  let nextVmId =
    Math.max(
      99,
      ...Object.values(taken)
        .map((r) => Number(r.attributes['id'] ?? 0))
        .filter((n) => Number.isFinite(n)),
    ) + 1;
  for (const r of Object.values(resources)) {
    if (generated !== undefined && r.type === 'talos_machine_secrets' && r.attributes['machine_secrets'] === undefined) {
      r.attributes['machine_secrets'] = `${generated.machineSecrets} generation-${String(r.attributes['generation'])}`;
      r.attributes['client_configuration'] = `ca-key-${generated.machineSecrets.slice(-24)}-${String(r.attributes['generation'])}`;
    }
    if (generated !== undefined && r.type === 'talos_cluster_kubeconfig' && r.attributes['kubeconfig_raw'] === undefined)
      r.attributes['kubeconfig_raw'] = generated.kubeconfig;
    if (r.attributes['id'] !== undefined) continue;
    if (r.type === 'proxmox_virtual_environment_vm') r.attributes['id'] = String(nextVmId++);
    else if (r.type === 'talos_machine_secrets') r.attributes['id'] = 'machine_secrets';
    else if (r.type === 'talos_machine_configuration_apply') r.attributes['id'] = 'machine_configuration_apply';
    else if (r.type === 'talos_image_factory_schematic') r.attributes['id'] = String(r.attributes['schematic']);
    else r.attributes['id'] = String(r.attributes['cluster'] ?? r.name);
  }
}

function differs(before: ResourceInstance, after: ResourceInstance): { replace: boolean; update: boolean } {
  let replace = false;
  let update = false;
  for (const [key, value] of Object.entries(after.attributes)) {
    if (before.attributes[key] === value) continue;
    if (REPLACING_ATTRIBUTES.has(key)) replace = true;
    else update = true;
  }
  return { replace, update };
}

/** `type.name` of a resource instance: the block its `lifecycle` is declared in. */
function blockOf(r: { type: string; name: string }): string {
  return `${r.type}.${r.name}`;
}

/**
 * The actions of a replacement under the resource's lifecycle, as opentofu
 * internal/tofu/node_resource_abstract_instance.go (v1.12.6, `plan`) decides them: create_before_destroy
 * gives CreateThenDelete, otherwise DeleteThenCreate; then, with `lifecycle.destroy = false`, any
 * replacement becomes ForgetThenCreate (the old object stays, only forgotten).
 */
function replaceActions(lifecycle: ResourceLifecycle | undefined): string[] {
  if (lifecycle?.destroy === false) return ['forget', 'create'];
  return lifecycle?.create_before_destroy === true ? ['create', 'delete'] : ['delete', 'create'];
}

/** Drops what the provider computes again on create: unknown in the plan, so absent from `after`. */
function withoutComputed(attributes: ResourceInstance['attributes']): ResourceInstance['attributes'] {
  const after = { ...attributes };
  for (const key of COMPUTED_ATTRIBUTES) delete after[key];
  return after;
}

/**
 * The resource changes from `applied` to `desired`, sorted by address as OpenTofu sorts them. A
 * configuration apply is replaced with its VM only when its block declares `replace_triggered_by`
 * on the VM; `-replace=<its address>` replaces it by request. `lifecycle` holds the configuration's
 * lifecycle blocks.
 */
export function diffResources(
  applied: Record<string, ResourceInstance>,
  desired: Record<string, ResourceInstance>,
  lifecycle: Record<string, ResourceLifecycle> = {},
  forceReplace: ReadonlySet<string> = new Set(),
  removed: readonly { from: string; destroy: boolean }[] = [],
): PlannedChange[] {
  const changes: PlannedChange[] = [];
  const replacedVms = new Set<string>();
  const base = (r: ResourceInstance): Omit<PlannedChange, 'actions' | 'before' | 'after'> => ({
    address: r.address,
    type: r.type,
    name: r.name,
    ...(r.index === undefined ? {} : { index: r.index }),
    provider: r.provider,
  });
  for (const want of Object.values(desired)) {
    const have = applied[want.address];
    if (!have) {
      changes.push({ ...base(want), actions: ['create'], before: null, after: withoutComputed(want.attributes) });
      continue;
    }
    const after = { ...have.attributes, ...want.attributes };
    const { replace, update } = differs(have, want);
    // `-replace=<address>` (node_resource_abstract_instance.go v1.12.6, `plan`): an instance in the
    // state and the configuration is replaced whatever else it would do, and the request is the reason.
    const requested = forceReplace.has(want.address);
    if (replace || requested) {
      if (want.type === 'proxmox_virtual_environment_vm' && want.index !== undefined) replacedVms.add(want.index);
      changes.push({
        ...base(want),
        actions: replaceActions(lifecycle[blockOf(want)]),
        actionReason: requested ? 'replace_by_request' : 'replace_because_cannot_update',
        before: { ...have.attributes },
        after: withoutComputed(after),
      });
    } else {
      if (update && want.type === 'proxmox_virtual_environment_vm' && want.index !== undefined) replacedVms.add(want.index);
      changes.push({ ...base(want), actions: [update ? 'update' : 'no-op'], before: { ...have.attributes }, after });
    }
  }
  for (const have of Object.values(applied)) {
    if (desired[have.address]) continue;
    // internal/tofu/node_resource_plan_orphan.go (v1.12.6, `managedResourceExecute`): an instance whose for_each key
    // is gone, in a block with `lifecycle.destroy = false`, is forgotten instead of destroyed; a `removed` block whose
    // `from` contains the instance decides instead, taking precedence. Only the lifecycle sets an action reason.
    const skipDestroy = have.index !== undefined && lifecycle[blockOf(have)]?.destroy === false;
    let shouldDestroy = !skipDestroy;
    for (const statement of removed)
      if (statement.from === blockOf(have) || statement.from === have.address) shouldDestroy = statement.destroy;
    if (!shouldDestroy) {
      changes.push({
        ...base(have),
        actions: ['forget'],
        ...(skipDestroy ? { actionReason: 'forgot_because_lifecycle_destroy_in_config' } : {}),
        before: { ...have.attributes },
        after: null,
      });
      continue;
    }
    changes.push({
      ...base(have),
      actions: ['delete'],
      actionReason: have.index === undefined ? 'delete_because_no_resource_config' : 'delete_because_each_key',
      before: { ...have.attributes },
      after: null,
    });
  }
  // replace_triggered_by (opentofu v1.12.6 internal/tofu/node_resource_plan_instance.go `replaceTriggered`,
  // eval_context_builtin.go `EvaluateReplaceTriggeredBy`, plans/action.go `CanTriggerDownstreamReplace`): only
  // a configuration that declares the reference replaces the configuration apply with its VM. Without it a
  // recreated VM keeps the old apply in the state, and nothing configures the new machine.
  const triggers = lifecycle[CONFIG_APPLY_BLOCK]?.replace_triggered_by ?? [];
  const tied = triggers.includes(CONFIG_APPLY_TRIGGER) || triggers.includes('proxmox_virtual_environment_vm.talos');
  for (const change of changes) {
    if (!tied || change.type !== 'talos_machine_configuration_apply' || change.index === undefined || !replacedVms.has(change.index))
      continue;
    if (change.actions[0] === 'create' || change.actions[0] === 'delete') continue;
    // A trigger names the reason even when the instance was replaced for another cause (`-replace` included).
    if (change.actions.length === 2) {
      change.actionReason = 'replace_by_triggers';
      continue;
    }
    change.actions = replaceActions(lifecycle[blockOf(change)]);
    change.actionReason = 'replace_by_triggers';
    change.after = withoutComputed(change.after ?? {});
  }
  return changes.sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
}

/** Whether a change replaces its object (`delete,create`, `create,delete` or `forget,create`). */
export function isReplacement(change: { actions: string[] }): boolean {
  return change.actions.length === 2;
}

/** Whether a change does anything. */
export function acts(change: PlannedChange): boolean {
  return change.actions.join() !== 'no-op';
}
