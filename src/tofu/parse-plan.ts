import { z } from 'zod';
import { OpsError } from '../errors.ts';
import { declaredInPlan, type DeclaredNames, type DeclaredVersions } from './declared-versions.ts';

/**
 * One entry of `resource_changes` in `tofu show -json <plan>` (OpenTofu's JSON output format).
 * `before`/`after` hold the resource's values, sensitive ones included in plain text; which are
 * sensitive only `before_sensitive`/`after_sensitive` say (opentofu internal/command/jsonplan/plan.go,
 * `marshalResourceChange`, v1.12.6). So a value is read only through `attributeChanges`, which
 * never keeps one either side marks sensitive.
 */
const ResourceChange = z.looseObject({
  address: z.string().min(1),
  mode: z.string().optional(),
  type: z.string().min(1),
  provider_name: z.string().optional(),
  change: z.looseObject({
    actions: z.array(z.string()).min(1),
    before: z.unknown().optional(),
    after: z.unknown().optional(),
    before_sensitive: z.unknown().optional(),
    after_sensitive: z.unknown().optional(),
  }),
  action_reason: z.string().optional(),
  /** The `for_each` key or `count` index: a VM's hostname in the runbook's configuration. */
  index: z.union([z.string(), z.number()]).optional(),
});

/** One entry of `output_changes`: only a non-sensitive string output's values are ever read. */
const OutputChange = z.looseObject({
  actions: z.array(z.string()).min(1),
  before: z.unknown().optional(),
  after: z.unknown().optional(),
  before_sensitive: z.unknown().optional(),
  after_sensitive: z.unknown().optional(),
});

/** One entry of `variables`: jsonplan `Variable` (opentofu internal/command/jsonplan/plan.go, v1.12.6), the value as cty JSON. */
const PlanVariable = z.looseObject({ value: z.unknown().optional() });

export const PlanJson = z.looseObject({
  format_version: z.string(),
  variables: z.record(z.string(), PlanVariable).optional(),
  resource_changes: z.array(ResourceChange).optional(),
  output_changes: z.record(z.string(), OutputChange).optional(),
});
export type PlanJson = z.infer<typeof PlanJson>;

/**
 * The action of one change. `replace` covers both orders (`delete,create` and `create,delete`, the
 * latter under create_before_destroy); `forget-replace` is `forget,create`, a replacement under
 * `lifecycle.destroy = false` (OpenTofu ≥ 1.12) that leaves the old object in place, out of the
 * state. `unknown` is any other list, which the bot never applies.
 */
export type ChangeAction = 'create' | 'read' | 'update' | 'replace' | 'forget-replace' | 'delete' | 'forget' | 'no-op' | 'unknown';

export interface PlannedChange {
  address: string;
  /** Resource type, e.g. `talos_machine_secrets`. */
  type: string;
  /** `Talos`, `Proxmox`, or the provider's own name. */
  provider: string;
  action: ChangeAction;
  /** As tofu wrote them, e.g. `["delete","create"]`. */
  actions: string[];
  /** Why tofu replaces it, e.g. `replace_because_cannot_update`. */
  reason?: string;
  /** The `for_each` key, e.g. a VM's hostname. */
  key?: string;
  /**
   * A Proxmox VM's `stop_on_destroy` as the state holds it (bpg/terraform-provider-proxmox, default
   * false: the destroy shuts the guest down gracefully first). Only this boolean is read from `before`.
   */
  stopOnDestroy?: boolean;
  /** A configuration apply's `apply_mode` after the change (`auto`, `reboot`, `no_reboot`, `staged`), when the plan sets one. */
  applyMode?: string;
  /** What an update or a replacement changes, attribute by attribute, as a reviewer reads a diff; sensitive values blanked. */
  attributes?: AttributeChange[];
}

/** One top-level attribute a change moves: its name, and its values unless either side is sensitive. */
export interface AttributeChange {
  name: string;
  /** Marked sensitive before or after: only the name is kept, never a value. */
  sensitive: boolean;
  /** The values as short text (`(known after apply)`, `null`); absent when sensitive. */
  before?: string;
  after?: string;
  /** Changing it forces the replacement (`replace_paths`). */
  forcesReplacement?: boolean;
}

/** A change the runbook forbids in routine maintenance (`stop`) or allows only in one procedure (`caution`). */
export interface PlanDanger {
  level: 'stop' | 'caution';
  address: string;
  action: ChangeAction;
  /** What it means and what to do, for the operator. */
  meaning: string;
}

export interface PlanReview {
  /** Every change other than `no-op`, in plan order. */
  changes: PlannedChange[];
  dangers: PlanDanger[];
  counts: Record<Exclude<ChangeAction, 'no-op'>, number>;
  /** `talos_version` as the plan moves it (`output_changes`), when it does. */
  talosVersion?: { from?: string; to: string };
  /** The Talos and Kubernetes versions the plan declares, or why each could not be read. */
  declared: DeclaredVersions;
}

const SOURCE = 'tofu show -json';

/**
 * Parses `tofu show -json <planfile>`.
 *
 * @throws {OpsError} `tofu-plan-unparseable` when the output is not a plan in the JSON format;
 *   the message never quotes the output, which may hold sensitive values
 */
export function parsePlanJson(stdout: string): PlanJson {
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch {
    throw new OpsError('tofu-plan-unparseable', `cannot parse ${SOURCE} output: it is not JSON`, {
      hint: 'check that TOFU_BIN is OpenTofu 1.6 or newer',
    });
  }
  const parsed = PlanJson.safeParse(raw);
  if (!parsed.success) {
    const where = parsed.error.issues[0]?.path.join('.') ?? '';
    throw new OpsError('tofu-plan-unparseable', `cannot parse ${SOURCE} output: unexpected shape${where === '' ? '' : ` at ${where}`}`, {
      hint: 'check that TOFU_BIN is OpenTofu 1.6 or newer',
    });
  }
  // The format's major version changes only with incompatible changes (jsonplan `FormatVersion`): a plan in another one is not read at all.
  const major = parsed.data.format_version.split('.')[0];
  if (major !== '1') {
    throw new OpsError(
      'tofu-plan-unparseable',
      `cannot read ${SOURCE} output: its format_version ${JSON.stringify(parsed.data.format_version.slice(0, 20))} is not 1.x, the one the bot reads`,
      {
        hint: 'use an OpenTofu whose JSON plan format is 1.x, or update the bot',
      },
    );
  }
  return parsed.data;
}

/** The action lists of opentofu internal/command/jsonplan/plan.go (`actionString`, v1.12.6); anything else is `unknown`. */
export function actionOf(actions: string[]): ChangeAction {
  const key = actions.join(',');
  if (key === 'delete,create' || key === 'create,delete') return 'replace';
  if (key === 'forget,create') return 'forget-replace';
  if (actions.length === 1 && ['create', 'read', 'update', 'delete', 'forget', 'no-op'].includes(key)) return key as ChangeAction;
  return 'unknown';
}

function providerOf(providerName: string | undefined, type: string): string {
  const name = (providerName ?? '').split('/').pop() || type.split('_')[0] || type;
  if (name === 'talos') return 'Talos';
  if (name === 'proxmox') return 'Proxmox';
  return name;
}

const SECRETS = 'talos_machine_secrets';
const VM = 'proxmox_virtual_environment_vm';

const SECRETS_MEANING: Partial<Record<ChangeAction, string>> = {
  replace: 'replaces the cluster secrets: a cluster migration, not maintenance: stop and do not apply',
  'forget-replace':
    'forgets the cluster secrets and generates new ones (a replacement under `lifecycle.destroy = false`): a cluster migration, not maintenance: stop and do not apply',
  delete: 'destroys the cluster secrets: a cluster migration, not maintenance: stop and do not apply',
  forget:
    'removes the cluster secrets from the Terraform state, which holds the only copy Terraform has; the next plan would generate new ones: stop and do not apply',
};

function dangerOf(change: PlannedChange): PlanDanger | undefined {
  const { address, action, type } = change;
  if (action === 'unknown') {
    // A newer OpenTofu may write actions this bot has never seen (jsonplan `actionString` passes an unknown one through): what applying it does is unknown.
    const meaning = `has the action ${JSON.stringify(change.actions)}, which the bot does not recognise, so it cannot tell what applying it does: stop and do not apply; review the plan by hand, and check that TOFU_BIN is an OpenTofu release the bot knows`;
    return { level: 'stop', address, action, meaning };
  }
  const secrets = type === SECRETS ? SECRETS_MEANING[action] : undefined;
  if (secrets !== undefined) return { level: 'stop', address, action, meaning: secrets };
  if (type === VM && action === 'replace') {
    return { level: 'stop', address, action, meaning: 'replaces a Talos VM, destroying the node and its disks: stop and do not apply' };
  }
  if (type === VM && action === 'forget-replace') {
    return {
      level: 'stop',
      address,
      action,
      meaning:
        "replaces a Talos VM under `lifecycle.destroy = false`: a second VM with the node's address is created and the old one keeps running, out of Terraform's state: stop and do not apply",
    };
  }
  if (type === VM && action === 'delete') {
    return {
      level: 'caution',
      address,
      action,
      meaning: 'destroys a Talos VM: apply only after the node was reset and its Node deleted (`/talos remove`)',
    };
  }
  // `["forget"]` (opentofu internal/plans/action.go `Forget`, rendered by internal/command/jsonplan/plan.go
  // `actionString`, v1.12.6; reasons `forgot_because_lifecycle_destroy_in_config`/`_in_state`): a `removed` block or
  // `lifecycle.destroy = false` takes the object out of the state and leaves it running. The runbook's Ownership
  // section keeps every node's VM and Talos configuration in Terraform, so a forget is refused as a replacement is.
  if (action === 'forget' && (type === VM || type.startsWith('talos_'))) {
    const what = type === VM ? 'a Talos VM' : `the Talos resource ${type}`;
    return {
      level: 'stop',
      address,
      action,
      meaning: `removes ${what} from the Terraform state without destroying it (a \`removed\` block or \`lifecycle.destroy = false\`): the node keeps running outside Terraform's ownership, which the runbook forbids: stop and do not apply; keep the resource in the configuration, or remove the node with \`/talos remove\` and destroy its VM`,
    };
  }
  return undefined;
}

/** The changes of a plan, what each does, and which of them the runbook forbids. */
export function reviewPlan(plan: PlanJson, declaredNames: DeclaredNames = {}): PlanReview {
  const changes: PlannedChange[] = (plan.resource_changes ?? [])
    .map((rc) => {
      const change: PlannedChange = {
        address: rc.address,
        type: rc.type,
        provider: providerOf(rc.provider_name, rc.type),
        action: actionOf(rc.change.actions),
        actions: rc.change.actions,
      };
      if (rc.action_reason !== undefined) change.reason = rc.action_reason;
      const key = rc.index ?? /\["([^"]+)"\]$/.exec(rc.address)?.[1];
      if (key !== undefined) change.key = String(key);
      const before = rc.change['before'];
      if (rc.type === VM && typeof before === 'object' && before !== null) {
        const stop = (before as Record<string, unknown>)['stop_on_destroy'];
        change.stopOnDestroy = stop === true;
      }
      const after = rc.change.after;
      const mode = typeof after === 'object' && after !== null ? (after as Record<string, unknown>)['apply_mode'] : undefined;
      if (typeof mode === 'string') change.applyMode = mode;
      if (change.action === 'update' || change.action === 'replace' || change.action === 'forget-replace') {
        const attributes = attributeChanges(rc.change);
        if (attributes.length > 0) change.attributes = attributes;
      }
      return change;
    })
    .filter((c) => c.action !== 'no-op');
  const counts: PlanReview['counts'] = { create: 0, read: 0, update: 0, replace: 0, 'forget-replace': 0, delete: 0, forget: 0, unknown: 0 };
  for (const change of changes) counts[change.action as keyof PlanReview['counts']] += 1;
  const dangers = changes.map(dangerOf).filter((d): d is PlanDanger => d !== undefined);
  const talosVersion = outputMove(plan, 'talos_version');
  return { changes, dangers, counts, declared: declaredInPlan(plan, declaredNames), ...(talosVersion ? { talosVersion } : {}) };
}

/** Longest value quoted in a diff line; a longer one is cut (the whole plan text is attached). */
const VALUE_CHARS = 60;

/** Whether a `*_sensitive` mark says the attribute, or anything inside it, is sensitive (jsonplan marks nested values by path). */
function marked(mark: unknown): boolean {
  if (mark === true) return true;
  if (typeof mark === 'object' && mark !== null) return Object.values(mark).some(marked);
  return false;
}

function shown(value: unknown, unknown: boolean): string {
  if (unknown) return '(known after apply)';
  if (value === undefined || value === null) return 'null';
  // Values come from JSON, so they print back as JSON: a string quoted, a list or map in brackets.
  const text = JSON.stringify(value) ?? 'null';
  return text.length > VALUE_CHARS ? `${text.slice(0, VALUE_CHARS - 1)}…` : text;
}

/**
 * The top-level attributes whose values differ between `before` and `after`, in name order. An
 * attribute either side marks sensitive is named with no value at all, as `tofu plan` prints
 * `(sensitive value)`; an attribute the plan cannot know yet (`after_unknown`) reads `(known after apply)`.
 */
export function attributeChanges(change: {
  before?: unknown;
  after?: unknown;
  after_unknown?: unknown;
  before_sensitive?: unknown;
  after_sensitive?: unknown;
  replace_paths?: unknown;
}): AttributeChange[] {
  const record = (v: unknown): Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  const before = record(change.before);
  const after = record(change.after);
  const unknownAfter = record(change.after_unknown);
  const sensitiveBefore = record(change.before_sensitive);
  const sensitiveAfter = record(change.after_sensitive);
  // A whole resource marked `true` is sensitive through and through.
  const allSensitive = change.before_sensitive === true || change.after_sensitive === true;
  const replacing = new Set(
    (Array.isArray(change.replace_paths) ? change.replace_paths : []).flatMap((p) =>
      Array.isArray(p) && typeof p[0] === 'string' ? [p[0]] : [],
    ),
  );
  const names = [...new Set([...Object.keys(before), ...Object.keys(after), ...Object.keys(unknownAfter)])].sort();
  return names.flatMap((name): AttributeChange[] => {
    const unknown = unknownAfter[name] === true;
    if (!unknown && JSON.stringify(before[name] ?? null) === JSON.stringify(after[name] ?? null)) return [];
    // An id the provider assigns again on a replacement is noise in a review.
    if (name === 'id' && unknown) return [];
    const forces = replacing.has(name) ? { forcesReplacement: true } : {};
    if (allSensitive || marked(sensitiveBefore[name]) || marked(sensitiveAfter[name])) return [{ name, sensitive: true, ...forces }];
    return [{ name, sensitive: false, before: shown(before[name], false), after: shown(after[name], unknown), ...forces }];
  });
}

/** How a plan moves a string output that is not sensitive; undefined when it does not move it. */
function outputMove(plan: PlanJson, name: string): { from?: string; to: string } | undefined {
  const change = plan.output_changes?.[name];
  if (change === undefined || change.actions.join() === 'no-op') return undefined;
  if (change.before_sensitive === true || change.after_sensitive === true || typeof change.after !== 'string') return undefined;
  return typeof change.before === 'string' ? { from: change.before, to: change.after } : { to: change.after };
}

/** Hostnames (the `for_each` keys) of the Talos VMs a plan acts on with `action`. */
export function vmKeys(review: PlanReview, action: ChangeAction): string[] {
  return review.changes.filter((c) => c.type === VM && c.action === action && c.key !== undefined).map((c) => c.key!);
}
