/** A fake `tofu` for the cluster's Terraform directory: outputs, fmt, validate, plan and show (section 7). */
import { readFile, writeFile } from 'node:fs/promises';
import { isAbsolute, resolve } from 'node:path';
import type { ExecIO } from './exec-io.ts';
import type { CallRecord, SimCluster, SimState } from './types.ts';

export interface TofuRequest {
  argv: string[];
  cwd: string;
}

const TOFU_VERSION = '1.10.6';
const PROVIDERS: Record<string, string> = {
  'registry.opentofu.org/bpg/proxmox': '0.84.1',
  'registry.opentofu.org/siderolabs/talos': '0.9.0',
};

function diagnostic(severity: 'Error' | 'Warning', summary: string, detail: string): string {
  const body = detail
    .split('\n')
    .map((l) => (l === '' ? '│ ' : `│ ${l}`))
    .join('\n');
  return `╷\n│ ${severity}: ${summary}\n│ \n${body}\n╵\n`;
}

interface Output {
  sensitive: boolean;
  value: string;
}

function outputs(cluster: SimCluster): Record<string, Output> {
  const tf = cluster.terraform;
  const installer = (schematic: string): string => `factory.talos.dev/${tf.installerPlatform}-installer/${schematic}:${tf.talosVersion}`;
  const list: Record<string, Output> = {
    talos_image_factory_schematic_id: { sensitive: false, value: tf.defaultSchematic },
    talos_installer_image: { sensitive: false, value: installer(tf.defaultSchematic) },
    talos_kubeconfig: { sensitive: true, value: cluster.credentials.kubeconfig },
    talos_kubernetes_version: { sensitive: false, value: tf.kubernetesVersion },
    talos_version: { sensitive: false, value: tf.talosVersion },
    talosconfig: { sensitive: true, value: cluster.credentials.talosconfig },
  };
  if (tf.longhornSchematic) {
    list['talos_longhorn_installer_image'] = { sensitive: false, value: installer(tf.longhornSchematic) };
  }
  for (const [name, value] of Object.entries(cluster.faults.tofuOutputs ?? {})) list[name] = { sensitive: list[name]?.sensitive ?? false, value };
  return Object.fromEntries(Object.entries(list).sort(([a], [b]) => a.localeCompare(b)));
}

interface ResourceChange {
  address: string;
  type: string;
  name: string;
  index?: string;
  provider: string;
  actions: string[];
}

function planChanges(cluster: SimCluster): ResourceChange[] {
  const talos = 'registry.opentofu.org/siderolabs/talos';
  const proxmox = 'registry.opentofu.org/bpg/proxmox';
  const fault = cluster.faults.tofuPlan;
  const first = cluster.nodes[0]?.hostname;
  const list: ResourceChange[] = [
    { address: 'talos_machine_secrets.this', type: 'talos_machine_secrets', name: 'this', provider: talos, actions: fault === 'replace-secrets' ? ['delete', 'create'] : ['no-op'] },
    { address: 'talos_image_factory_schematic.this', type: 'talos_image_factory_schematic', name: 'this', provider: talos, actions: ['no-op'] },
  ];
  for (const node of cluster.nodes) {
    const replaceVm = fault === 'replace-vm' && node.hostname === first;
    const update = fault === 'changes' && node.hostname === first;
    list.push(
      { address: `proxmox_virtual_environment_vm.talos["${node.hostname}"]`, type: 'proxmox_virtual_environment_vm', name: 'talos', index: node.hostname, provider: proxmox, actions: replaceVm ? ['delete', 'create'] : ['no-op'] },
      { address: `talos_machine_configuration_apply.this["${node.hostname}"]`, type: 'talos_machine_configuration_apply', name: 'this', index: node.hostname, provider: talos, actions: update ? ['update'] : ['no-op'] },
    );
  }
  list.push({ address: 'talos_cluster_kubeconfig.this', type: 'talos_cluster_kubeconfig', name: 'this', provider: talos, actions: ['no-op'] });
  return list;
}

function planText(changes: ResourceChange[]): string {
  const acting = changes.filter((c) => c.actions.join() !== 'no-op');
  if (acting.length === 0) {
    return (
      '\nNo changes. Your infrastructure matches the configuration.\n\n' +
      'OpenTofu has compared your real infrastructure against your configuration\nand found no differences, so no changes are needed.\n'
    );
  }
  const symbols = new Set(acting.map((c) => (c.actions.length === 2 ? '-/+ destroy and then create replacement' : '  ~ update in-place')));
  let add = 0;
  let change = 0;
  let destroy = 0;
  const blocks = acting.map((c) => {
    const replace = c.actions.length === 2;
    if (replace) {
      add++;
      destroy++;
    } else change++;
    const head = `  # ${c.address} ${replace ? 'must be replaced' : 'will be updated in-place'}\n`;
    const block = `${replace ? '-/+' : '  ~'} resource "${c.type}" "${c.name}" {\n      ~ id = "${c.index ?? c.name}" -> (known after apply)${replace ? ' # forces replacement' : ''}\n        # (3 unchanged attributes hidden)\n    }\n`;
    return head + block;
  });
  return (
    '\nOpenTofu used the selected providers to generate the following execution\nplan. Resource actions are indicated with the following symbols:\n' +
    [...symbols].map((s) => `${s}\n`).join('') +
    '\nOpenTofu will perform the following actions:\n\n' +
    blocks.join('\n') +
    `\nPlan: ${add} to add, ${change} to change, ${destroy} to destroy.\n`
  );
}

function showJson(changes: ResourceChange[]): string {
  return JSON.stringify({
    format_version: '1.0',
    terraform_version: TOFU_VERSION,
    planned_values: { root_module: {} },
    resource_changes: changes.map((c) => ({
      address: c.address,
      mode: 'managed',
      type: c.type,
      name: c.name,
      ...(c.index ? { index: c.index } : {}),
      provider_name: c.provider,
      change: { actions: c.actions, before: {}, after: {}, after_unknown: {}, before_sensitive: {}, after_sensitive: {} },
      ...(c.actions.length === 2 ? { action_reason: 'replace_because_cannot_update' } : {}),
    })),
    configuration: {},
    errored: false,
  });
}

function option(args: string[], name: string): string | boolean | undefined {
  for (const a of args) {
    const m = /^--?([a-z-]+)(?:=(.*))?$/.exec(a);
    if (m && m[1] === name) return m[2] ?? true;
  }
  return undefined;
}

export async function runTofu(request: TofuRequest, io: ExecIO, state: SimState, call: CallRecord): Promise<number> {
  const chdir = request.argv.find((a) => a.startsWith('-chdir='));
  const cwd = chdir ? resolve(request.cwd, chdir.slice('-chdir='.length)) : request.cwd;
  const argv = request.argv.filter((a) => a !== chdir);
  const [command, ...rest] = argv;
  const args = rest.filter((a) => !a.startsWith('-'));
  const cluster = Object.values(state.clusters).find((c) => resolve(c.terraformDir) === resolve(cwd));
  if (cluster) call.cluster = cluster.name;
  switch (command) {
    case 'version':
    case '-version':
    case '--version': {
      if (option(rest, 'json')) {
        io.out(`${JSON.stringify({ terraform_version: TOFU_VERSION, platform: 'linux_amd64', provider_selections: PROVIDERS, terraform_outdated: false }, null, 2)}\n`);
      } else {
        io.out(`OpenTofu v${TOFU_VERSION}\non linux_amd64\n${Object.entries(PROVIDERS).map(([p, v]) => `+ provider ${p} v${v}\n`).join('')}`);
      }
      return 0;
    }
    case 'output':
      return output(cluster, rest, args, io);
    case 'fmt': {
      const files = cluster?.faults.tofuFmtUnformatted ?? [];
      if (files.length === 0) return 0;
      io.out(files.map((f) => `${f}\n`).join(''));
      return option(rest, 'check') ? 3 : 0;
    }
    case 'validate':
      if (option(rest, 'json')) io.out(`${JSON.stringify({ format_version: '1.0', valid: true, error_count: 0, warning_count: 0, diagnostics: [] }, null, 2)}\n`);
      else io.out('Success! The configuration is valid.\n\n');
      return 0;
    case 'init':
      io.out('\nInitializing the backend...\n\nInitializing provider plugins...\n- Reusing previous version of siderolabs/talos from the dependency lock file\n- Reusing previous version of bpg/proxmox from the dependency lock file\n\nOpenTofu has been successfully initialized!\n');
      return 0;
    case 'plan':
      return plan(cluster, cwd, rest, io);
    case 'show':
      return show(cwd, rest, args, io);
    default:
      io.err(`${command === undefined ? '' : `OpenTofu has no command named "${command}".\n\n`}Usage: tofu [global options] <subcommand> [args]\n`);
      return 1;
  }
}

function output(cluster: SimCluster | undefined, rest: string[], args: string[], io: ExecIO): number {
  const name = args[0];
  if (cluster?.faults.tofuOutputFail) {
    io.err(diagnostic('Error', cluster.faults.tofuOutputFail, 'OpenTofu failed to load the state needed to read outputs.'));
    return 1;
  }
  const all = cluster ? outputs(cluster) : {};
  if (name === undefined) {
    if (Object.keys(all).length === 0) {
      io.err(diagnostic('Warning', 'No outputs found', 'The state file either has no outputs defined, or all the defined outputs\nare empty. Please define an output in your configuration with the `output`\nkeyword and run `tofu refresh` for it to become available.'));
      return 0;
    }
    if (option(rest, 'json')) {
      const obj = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, { sensitive: v.sensitive, type: 'string', value: v.value }]));
      io.out(`${JSON.stringify(obj, null, 2)}\n`);
    } else {
      io.out(Object.entries(all).map(([k, v]) => `${k} = ${v.sensitive ? '<sensitive>' : JSON.stringify(v.value)}\n`).join(''));
    }
    return 0;
  }
  const found = all[name];
  if (!found) {
    io.err(
      diagnostic(
        'Error',
        `Output "${name}" not found`,
        'The output variable requested could not be found in the state file. If you\nrecently added this to your configuration, be sure to run `tofu apply`,\nsince the state won\'t be updated with new output variables until that\ncommand is run.',
      ),
    );
    return 1;
  }
  if (option(rest, 'raw')) io.out(found.value);
  else if (option(rest, 'json')) io.out(`${JSON.stringify(found.value)}\n`);
  else io.out(`${found.sensitive ? '<sensitive>' : JSON.stringify(found.value)}\n`);
  return 0;
}

async function plan(cluster: SimCluster | undefined, cwd: string, rest: string[], io: ExecIO): Promise<number> {
  if (!cluster) {
    io.err(diagnostic('Error', 'No configuration files', 'Plan requires configuration to be present. Planning without a configuration\nwould mark everything for destruction, which is normally not what is desired.'));
    return 1;
  }
  if (cluster.faults.tofuPlan === 'error') {
    io.err(diagnostic('Error', 'Error acquiring the state lock', 'Error message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID:        3f1c9a8e-5d2b-4c4e-9a1f-2b7e6c0d9e11\n  Operation: OperationTypeApply'));
    return 1;
  }
  const changes = planChanges(cluster);
  for (const node of cluster.nodes) io.out(`proxmox_virtual_environment_vm.talos["${node.hostname}"]: Refreshing state... [id=${100 + cluster.nodes.indexOf(node)}]\n`);
  io.out(planText(changes));
  const out = option(rest, 'out');
  if (typeof out === 'string') {
    const path = isAbsolute(out) ? out : resolve(cwd, out);
    await writeFile(path, JSON.stringify({ simulatedTofuPlan: 1, cluster: cluster.name, changes }), { mode: 0o600 });
    io.out(`\n─────────────────────────────────────────────────────────────────────────────\n\nSaved the plan to: ${out}\n\nTo perform exactly these actions, run the following command to apply:\n    tofu apply "${out}"\n`);
  }
  const changed = changes.some((c) => c.actions.join() !== 'no-op');
  return changed && option(rest, 'detailed-exitcode') ? 2 : 0;
}

async function show(cwd: string, rest: string[], args: string[], io: ExecIO): Promise<number> {
  const file = args[0];
  if (!file) {
    io.out('No state.\n');
    return 0;
  }
  let changes: ResourceChange[];
  try {
    const parsed = JSON.parse(await readFile(isAbsolute(file) ? file : resolve(cwd, file), 'utf8')) as { changes: ResourceChange[] };
    changes = parsed.changes;
  } catch {
    io.err(diagnostic('Error', 'Failed to read the given file as a state or plan file', `State read error: Error loading statefile: open ${file}: no such file or directory`));
    return 1;
  }
  if (option(rest, 'json')) io.out(`${showJson(changes)}\n`);
  else io.out(planText(changes));
  return 0;
}
