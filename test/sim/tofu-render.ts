/**
 * How OpenTofu 1.12 prints plans and diagnostics without colour (`-no-color`): the human plan of
 * `tofu plan`/`tofu show`, the JSON plan of `tofu show -json`, and the boxed diagnostics on
 * stderr (reference/tofu-facts.md).
 */
import { acts, SENSITIVE_ATTRIBUTES, type PlannedChange } from './terraform-resources.ts';
import { TOFU_VERSION, type SimPlan } from './tofu-plan.ts';

/** A diagnostic as tofu draws it on stderr; `detail` may be empty (errors made from a Go error). */
export function diagnostic(severity: 'Error' | 'Warning', summary: string, detail: string): string {
  const body = detail
    .split('\n')
    .map((l) => (l === '' ? '│ ' : `│ ${l}`))
    .join('\n');
  return `╷\n│ ${severity}: ${summary}\n│ \n${body}\n╵\n`;
}

type Value = string | number | boolean;

function literal(value: Value): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

function isReplace(change: PlannedChange): boolean {
  return change.actions.length === 2;
}

function isForget(change: PlannedChange): boolean {
  return change.actions[0] === 'forget';
}

/** internal/command/jsonformat/plan.go (v1.12.6, `resourceChangeComment`). */
function heading(change: PlannedChange): string {
  const address = change.address;
  if (change.actions[0] === 'create' && change.actions.length === 1) return `  # ${address} will be created\n`;
  if (change.actions[0] === 'update') return `  # ${address} will be updated in-place\n`;
  if (isReplace(change)) {
    const head =
      change.actionReason === 'replace_by_triggers'
        ? `  # ${address} will be replaced due to changes in replace_triggered_by`
        : change.actionReason === 'replace_by_request'
          ? `  # ${address} will be replaced, as requested`
          : `  # ${address} must be replaced`;
    return isForget(change) ? `${head} - older instance will not be destroyed (lifecycle.destroy = false)\n` : `${head}\n`;
  }
  if (isForget(change)) {
    const because =
      change.actionReason === 'forgot_because_lifecycle_destroy_in_config'
        ? ' \n (because lifecycle.destroy = false is set in the configuration)'
        : '';
    return `  # ${address} will be removed from the OpenTofu state but will not be destroyed${because}\n`;
  }
  const because =
    change.actionReason === 'delete_because_each_key'
      ? `  # (because key [${JSON.stringify(change.index)}] is not in for_each map)\n`
      : change.actionReason === 'delete_because_no_resource_config'
        ? `  # (because ${change.type}.${change.name} is not in configuration)\n`
        : '';
  return `  # ${address} will be destroyed\n${because}`;
}

/** The attribute lines of one block, `=` aligned as the renderer aligns them. */
function attributeLines(change: PlannedChange): string[] {
  const before = change.before ?? {};
  const after = change.after ?? {};
  // A new object's id is assigned by the provider: it shows as unknown.
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after), 'id'])].sort();
  const rows: [symbol: string, key: string, value: string][] = [];
  let hidden = 0;
  for (const key of keys) {
    const was = before[key];
    const will = after[key];
    if (SENSITIVE_ATTRIBUTES.has(key)) {
      // A sensitive attribute is never printed in the human plan, whatever the change.
      if (change.actions[0] === 'create' && change.actions.length === 1) rows.push(['+', key, '(sensitive value)']);
      else if (change.actions.length === 1 && (change.actions[0] === 'delete' || isForget(change)))
        rows.push(['-', key, '(sensitive value) -> null']);
      else if (isReplace(change)) rows.push(['~', key, '(sensitive value)']);
      else hidden++;
      continue;
    }
    if (change.actions[0] === 'create' && change.actions.length === 1) {
      rows.push(['+', key, will === undefined ? '(known after apply)' : literal(will)]);
    } else if ((change.actions[0] === 'delete' || isForget(change)) && change.actions.length === 1) {
      rows.push(['-', key, `${literal(was ?? '')} -> null`]);
    } else if (key === 'id') {
      rows.push(isReplace(change) ? ['~', key, `${literal(was ?? '')} -> (known after apply)`] : [' ', key, literal(was ?? '')]);
    } else if (was !== will) {
      const forces = isReplace(change) && key === 'generation' ? ' # forces replacement' : '';
      rows.push([
        '~',
        key,
        `${was === undefined ? 'null' : literal(was)} -> ${will === undefined ? '(known after apply)' : literal(will)}${forces}`,
      ]);
    } else hidden++;
  }
  if (
    isReplace(change) &&
    change.actionReason === 'replace_because_cannot_update' &&
    !rows.some((r) => r[2].endsWith('# forces replacement'))
  ) {
    // A replacement the test forced (the `tofuPlan` fault) shows no attribute cause; mark the id as the provider would.
    const id = rows.find((r) => r[1] === 'id');
    if (id) id[2] += ' # forces replacement';
  }
  const width = Math.max(0, ...rows.map((r) => r[1].length));
  const lines = rows.map(([symbol, key, value]) => `      ${symbol} ${key.padEnd(width)} = ${value}`);
  if (hidden > 0) lines.push(`        # (${hidden} unchanged attribute${hidden === 1 ? '' : 's'} hidden)`);
  return lines;
}

/** computed/renderers/util.go (v1.12.6, `DiffActionSymbol`). */
function symbolOf(change: PlannedChange): string {
  const key = change.actions.join();
  if (key === 'delete,create') return '-/+';
  if (key === 'create,delete') return '+/-';
  if (key === 'forget,create') return '  ./+';
  if (key === 'forget') return '  .';
  return change.actions[0] === 'create' ? '  +' : change.actions[0] === 'delete' ? '  -' : '  ~';
}

function block(change: PlannedChange): string {
  const symbol = symbolOf(change);
  return `${heading(change)}${symbol} resource "${change.type}" "${change.name}" {\n${attributeLines(change)
    .map((l) => `${l}\n`)
    .join('')}    }\n`;
}

/**
 * `Plan: N to add, N to change, N to destroy[, N to forget].` counts, which also head the apply summary
 * (jsonformat/plan.go, v1.12.6: a forget-then-create adds and forgets, it destroys nothing).
 */
export function changeCounts(changes: PlannedChange[]): { add: number; change: number; destroy: number; forget: number } {
  let add = 0;
  let change = 0;
  let destroy = 0;
  let forget = 0;
  for (const c of changes.filter(acts)) {
    if (isForget(c)) {
      forget++;
      if (isReplace(c)) add++;
    } else if (isReplace(c)) {
      add++;
      destroy++;
    } else if (c.actions[0] === 'create') add++;
    else if (c.actions[0] === 'delete') destroy++;
    else change++;
  }
  return { add, change, destroy, forget };
}

/** The human plan: the same text `tofu plan` and `tofu show <planfile>` print. */
export function planText(plan: SimPlan): string {
  const acting = plan.changes.filter(acts);
  const outputs = Object.entries(plan.outputChanges);
  const changedOutputs = outputs.filter(([, o]) => o.actions.join() !== 'no-op');
  if (acting.length === 0 && changedOutputs.length === 0) {
    return (
      '\nNo changes. Your infrastructure matches the configuration.\n\n' +
      'OpenTofu has compared your real infrastructure against your configuration\nand found no differences, so no changes are needed.\n'
    );
  }
  let text = '';
  if (acting.length > 0) {
    const has = (key: string): boolean => acting.some((c) => c.actions.join() === key);
    // jsonformat/plan.go (v1.12.6): one legend line per action present, in this order.
    const legend = [
      has('create') ? '  + create\n' : '',
      has('update') ? '  ~ update in-place\n' : '',
      has('delete') ? '  - destroy\n' : '',
      has('delete,create') ? '-/+ destroy and then create replacement\n' : '',
      has('create,delete') ? '+/- create replacement and then destroy\n' : '',
      has('forget,create') ? './+ forget and then create replacement\n' : '',
      has('forget') ? '  . forget\n' : '',
    ].join('');
    const { add, change, destroy, forget } = changeCounts(acting);
    text +=
      '\nOpenTofu used the selected providers to generate the following execution\nplan. Resource actions are indicated with the following symbols:\n' +
      legend +
      '\nOpenTofu will perform the following actions:\n' +
      acting.map((c) => `\n${block(c)}`).join('') +
      `\nPlan: ${add} to add, ${change} to change, ${destroy} to destroy${forget > 0 ? `, ${forget} to forget` : ''}.\n`;
  }
  if (changedOutputs.length > 0) {
    // Keys are padded to the longest output name, changed or not.
    const width = Math.max(...outputs.map(([name]) => name.length));
    const lines = changedOutputs.map(([name, o]) => {
      const symbol = o.actions[0] === 'create' ? '+' : '~';
      const value = o.sensitive
        ? '(sensitive value)'
        : o.actions[0] === 'create'
          ? JSON.stringify(o.after)
          : `${JSON.stringify(o.before)} -> ${JSON.stringify(o.after)}`;
      return `  ${symbol} ${name.padEnd(width)} = ${value}`;
    });
    text += `\nChanges to Outputs:\n${lines.join('\n')}\n`;
    if (acting.length === 0) {
      text +=
        '\nYou can apply this plan to save these new output values to the OpenTofu state,\nwithout changing any real infrastructure.\n';
    }
  }
  return text;
}

/** What the provider computes on create: unknown in the plan (`after_unknown`), absent from `after`. */
function unknownAfter(change: PlannedChange): Record<string, boolean> {
  if (!change.actions.includes('create')) return {};
  const unknown: Record<string, boolean> = { id: true };
  if (change.type === 'talos_machine_secrets') Object.assign(unknown, { machine_secrets: true, client_configuration: true });
  if (change.type === 'talos_cluster_kubeconfig') unknown['kubeconfig_raw'] = true;
  return unknown;
}

/** `{ <attribute>: true }` for each sensitive attribute a value holds (jsonstate `SensitiveAsBool`), or false without a value. */
function sensitiveMarks(values: PlannedChange['before'], unknown: Record<string, boolean> = {}): Record<string, boolean> | false {
  if (values === null) return false;
  const keys = [...Object.keys(values), ...Object.keys(unknown)].filter((k) => SENSITIVE_ATTRIBUTES.has(k));
  return Object.fromEntries([...new Set(keys)].sort().map((k) => [k, true]));
}

/**
 * `tofu show -json <planfile>` (internal/command/jsonplan/plan.go and values.go, v1.12.6; format 1.2).
 * Sensitive values are in plain text, as tofu writes them: a resource's `before`/`after` hold every
 * attribute, with `before_sensitive`/`after_sensitive` only marking which are sensitive, and a sensitive
 * output's values sit in `output_changes` and `planned_values.outputs`.
 */
export function showJson(plan: SimPlan): string {
  const outputs = Object.fromEntries(
    Object.entries(plan.outputChanges)
      .filter(([, o]) => o.actions.join() !== 'delete')
      .map(([name, o]) => [name, { sensitive: o.sensitive, ...(o.after === undefined ? {} : { type: 'string', value: o.after }) }]),
  );
  return JSON.stringify({
    format_version: '1.2',
    terraform_version: TOFU_VERSION,
    // jsonplan `marshalPlanVariables` (plan.go, v1.12.6): each variable as `{"value": …}`, defaults included, sensitivity not marked.
    variables: Object.fromEntries(Object.entries(plan.variables).map(([name, value]) => [name, { value }])),
    planned_values: { outputs, root_module: {} },
    resource_changes: plan.changes.map((c) => ({
      address: c.address,
      mode: 'managed',
      type: c.type,
      name: c.name,
      ...(c.index === undefined ? {} : { index: c.index }),
      provider_name: c.provider,
      change: {
        actions: c.actions,
        before: c.before,
        after: c.after,
        after_unknown: unknownAfter(c),
        before_sensitive: sensitiveMarks(c.before),
        after_sensitive: sensitiveMarks(c.after, unknownAfter(c)),
        ...(isReplace(c) && c.actionReason === 'replace_because_cannot_update' && c.before?.['generation'] !== c.after?.['generation']
          ? { replace_paths: [['generation']] }
          : {}),
      },
      ...(c.actionReason ? { action_reason: c.actionReason } : {}),
    })),
    output_changes: Object.fromEntries(
      Object.entries(plan.outputChanges).map(([name, o]) => [
        name,
        // MarshalOutputChanges: the values as they are, sensitivity only as a flag beside them.
        {
          actions: o.actions,
          before: o.before ?? null,
          after: o.after ?? null,
          after_unknown: o.after === undefined,
          before_sensitive: o.sensitive,
          after_sensitive: o.sensitive,
        },
      ]),
    ),
    configuration: {},
    timestamp: plan.timestamp,
    errored: false,
  });
}
