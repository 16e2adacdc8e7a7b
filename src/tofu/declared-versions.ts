import type { TerraformOutputs } from '../cluster/terraform-outputs.ts';
import { errorText } from '../errors.ts';
import type { PlanJson } from './parse-plan.ts';

/** The two versions Terraform declares for a cluster. */
export type VersionKind = 'talos' | 'kubernetes';
export const VERSION_KINDS: readonly VersionKind[] = ['talos', 'kubernetes'];

/** The runbook's variables (and the reference configuration's outputs of the same names). */
export const RUNBOOK_NAMES: Record<VersionKind, string> = { talos: 'talos_version', kubernetes: 'talos_kubernetes_version' };

export const KIND_WORDS: Record<VersionKind, string> = { talos: 'Talos', kubernetes: 'Kubernetes' };

/**
 * Where a declared version was read, so the follow-up names the exact line to change. An output of the
 * runbook's name carries the runbook's variable of that name (`output "talos_version" { value = var.talos_version }`).
 */
export type DeclaredSource = { variable: string } | { output: string; variable?: string };

/** One declared version, or why the bot could not read it (the rules that need it are then off, and say so). */
export type DeclaredVersion = { version: string; source: DeclaredSource } | { off: string };

export type DeclaredVersions = Record<VersionKind, DeclaredVersion>;

/** The inventory's names: `declaredVersions` and the older `terraformOutputs.talosVersion`. */
export interface DeclaredNames {
  declaredVersions?: { talos?: string; kubernetes?: string };
  terraformOutputs?: { talosVersion?: string };
}

const VERSION = /^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/;

/** The output the inventory names for a kind, if it names one. */
function namedOutput(names: DeclaredNames, kind: VersionKind): string | undefined {
  return names.declaredVersions?.[kind] ?? (kind === 'talos' ? names.terraformOutputs?.talosVersion : undefined);
}

/** `v1.13.9` from `v1.13.9` or `1.13.9`; undefined for anything else (never quoted back: a misnamed output may hold a secret). */
function versionOf(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined;
  const match = VERSION.exec(value.trim());
  return match === null ? undefined : `v${match[1]}.${match[2]}.${match[3]}`;
}

/** The Terraform line that declares `version`: the variable's assignment, or the output's value. */
export function declarationOf(source: DeclaredSource, version: string): string {
  if (source.variable !== undefined) return `${source.variable} = "${version}"`;
  return 'output' in source ? `the value behind output ${source.output} = "${version}"` : `"${version}"`;
}

export function sourceWords(source: DeclaredSource): string {
  return 'output' in source ? `output ${source.output}` : `variable ${source.variable}`;
}

const outputSource = (output: string, kind: VersionKind): DeclaredSource =>
  output === RUNBOOK_NAMES[kind] ? { output, variable: output } : { output };

function notAVersion(kind: VersionKind, where: string): DeclaredVersion {
  return { off: `the ${where} is not a ${KIND_WORDS[kind]} version such as v1.13.9` };
}

/**
 * The versions a plan declares (`tofu show -json <plan>`). By default the runbook's variables
 * `talos_version` and `talos_kubernetes_version` (jsonplan `Variables`, opentofu
 * internal/command/jsonplan/plan.go `marshalPlanVariables`, v1.12.6: every variable set for the plan, and
 * each root variable's default, as `{"value": …}`), then the outputs of those names. An output the
 * inventory names in `declaredVersions` is read instead: its planned value.
 */
export function declaredInPlan(plan: PlanJson, names: DeclaredNames): DeclaredVersions {
  const read = (kind: VersionKind): DeclaredVersion => {
    const named = namedOutput(names, kind);
    if (named === undefined) {
      const variable = RUNBOOK_NAMES[kind];
      const value = plan.variables?.[variable]?.value;
      if (value !== undefined) {
        const version = versionOf(value);
        return version === undefined ? notAVersion(kind, `plan's variable ${variable}`) : { version, source: { variable } };
      }
    }
    const output = named ?? RUNBOOK_NAMES[kind];
    const planned = plannedOutput(plan, output);
    if (planned === 'absent') {
      const fix = `name the output that carries it in the inventory's declaredVersions.${kind}`;
      return {
        off:
          named === undefined
            ? `the plan has no variable ${RUNBOOK_NAMES[kind]} and no output ${output}; ${fix}`
            : `the plan has no output ${output} (declaredVersions.${kind}); declare it, or ${fix}`,
      };
    }
    if (planned === 'sensitive')
      return { off: `the plan's output ${output} is sensitive, so the bot does not read it; declare it without sensitive = true` };
    if (planned === 'unknown') return { off: `the plan's output ${output} is known only after apply` };
    const version = versionOf(planned.value);
    return version === undefined ? notAVersion(kind, `plan's output ${output}`) : { version, source: outputSource(output, kind) };
  };
  return { talos: read('talos'), kubernetes: read('kubernetes') };
}

/** An output's value after the plan: `output_changes`, as `MarshalOutputChanges` writes it (jsonplan/plan.go, v1.12.6). */
function plannedOutput(plan: PlanJson, name: string): { value: unknown } | 'absent' | 'sensitive' | 'unknown' {
  const change = plan.output_changes?.[name];
  if (change === undefined || change.actions.join() === 'delete') return 'absent';
  if (change.after_sensitive === true) return 'sensitive';
  if (change['after_unknown'] === true) return 'unknown';
  return { value: change.after };
}

/** The versions the state declares: the outputs `tofu output -json` prints (by the inventory's names, default the runbook's). */
export async function declaredInState(outputs: TerraformOutputs, signal?: AbortSignal): Promise<DeclaredVersions> {
  const read = async (kind: VersionKind): Promise<DeclaredVersion> => {
    const role = kind === 'talos' ? 'talosVersion' : 'kubernetesVersion';
    const output = outputs.name(role);
    let value: string | undefined;
    try {
      value = await outputs.optional(role, signal);
    } catch (error) {
      return { off: `tofu output could not be read: ${errorText(error)}` };
    }
    if (value === undefined)
      return {
        off: `Terraform has no output ${output}; declare it (and tofu apply), or name the output that carries the declared ${KIND_WORDS[kind]} version in the inventory's declaredVersions.${kind}`,
      };
    const version = versionOf(value);
    return version === undefined ? notAVersion(kind, `output ${output}`) : { version, source: outputSource(output, kind) };
  };
  const [talos, kubernetes] = await Promise.all([read('talos'), read('kubernetes')]);
  return { talos, kubernetes };
}
