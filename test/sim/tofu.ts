/** A fake `tofu` for the cluster's Terraform directory: outputs, fmt, validate, plan, show and apply (reference/tofu-facts.md). */
import { readFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { ExecIO } from './exec-io.ts';
import { readDeclaredInputs } from './terraform.ts';
import { applyPlan, type ApplyRuntime } from './tofu-apply.ts';
import { computePlan, outputValues, planHasChanges, readPlanFile, TOFU_VERSION, writePlanFile, type SimPlan } from './tofu-plan.ts';
import { diagnostic, planText, showJson } from './tofu-render.ts';
import { replaceFlags, replaceRequest, stateList } from './tofu-state.ts';
import { desiredResources } from './terraform-resources.ts';
import type { CallRecord, SimCluster, SimState } from './types.ts';

export interface TofuRequest {
  argv: string[];
  cwd: string;
}

const PROVIDERS: Record<string, string> = {
  'registry.opentofu.org/bpg/proxmox': '0.84.1',
  'registry.opentofu.org/siderolabs/talos': '0.9.0',
};

function option(args: string[], name: string): string | boolean | undefined {
  for (const a of args) {
    const m = /^--?([a-z-]+)(?:=(.*))?$/.exec(a);
    if (m && m[1] === name) return m[2] ?? true;
  }
  return undefined;
}

/** Where the simulated clusters' state lives, as each root module's backend block names it. */
export const SIM_STATE_URL = 'http://tofu-state.sim.invalid/state';

/**
 * The cluster whose state a tofu run in `cwd` works on. OpenTofu takes the backend from the root
 * module in the working directory (opentofu/opentofu v1.9.0, website/docs/language/settings/backends/configuration.mdx:
 * "Backend configuration ... in the root module"), so a git copy of the repository elsewhere (the bot's
 * `terraformRepo` checkout) reads the same state as the operator's directory. Nothing else names a cluster.
 */
async function stateOf(state: SimState, cwd: string): Promise<SimCluster | undefined> {
  const mine = Object.values(state.clusters).find((c) => resolve(c.terraformDir) === resolve(cwd));
  if (mine !== undefined) return mine;
  const root = await readFile(join(cwd, 'main.tf'), 'utf8').catch(() => '');
  const address = /backend\s+"http"\s*\{[^}]*address\s*=\s*"([^"]+)"/.exec(root)?.[1];
  return Object.values(state.clusters).find((c) => address === `${SIM_STATE_URL}/${c.name}`);
}

/**
 * Runs one tofu invocation. `runtime` (the simulator's clock, machine lifecycle and recorder) is
 * what `apply` needs to change the machines; without it apply fails as if tofu could not reach them.
 */
export async function runTofu(
  request: TofuRequest,
  io: ExecIO,
  state: SimState,
  call: CallRecord,
  runtime?: ApplyRuntime,
): Promise<number> {
  const chdir = request.argv.find((a) => a.startsWith('-chdir='));
  const cwd = chdir ? resolve(request.cwd, chdir.slice('-chdir='.length)) : request.cwd;
  const argv = request.argv.filter((a) => a !== chdir);
  const [command, ...rest] = argv;
  const args = rest.filter((a) => !a.startsWith('-'));
  const cluster = await stateOf(state, cwd);
  if (cluster) call.cluster = cluster.name;
  switch (command) {
    case 'version':
    case '-version':
    case '--version': {
      if (option(rest, 'json')) {
        io.out(
          `${JSON.stringify({ terraform_version: TOFU_VERSION, platform: 'linux_amd64', provider_selections: PROVIDERS, terraform_outdated: false }, null, 2)}\n`,
        );
      } else {
        io.out(
          `OpenTofu v${TOFU_VERSION}\non linux_amd64\n${Object.entries(PROVIDERS)
            .map(([p, v]) => `+ provider ${p} v${v}\n`)
            .join('')}`,
        );
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
      if (option(rest, 'json'))
        io.out(`${JSON.stringify({ format_version: '1.0', valid: true, error_count: 0, warning_count: 0, diagnostics: [] }, null, 2)}\n`);
      else io.out('Success! The configuration is valid.\n\n');
      return 0;
    case 'init':
      io.out(
        '\nInitializing the backend...\n\nInitializing provider plugins...\n- Reusing previous version of siderolabs/talos from the dependency lock file\n- Reusing previous version of bpg/proxmox from the dependency lock file\n\nOpenTofu has been successfully initialized!\n',
      );
      return 0;
    case 'plan':
      return plan(cluster, cwd, rest, io);
    case 'show':
      return show(cwd, rest, args, io);
    case 'apply':
      return apply(cluster, cwd, rest, args, io, runtime);
    case 'state':
      if (args[0] === 'list' || args[0] === 'ls') return stateList(cluster, args.slice(1), io);
      // Only `state list` is simulated; a test that needs another state subcommand must add it first.
      io.err(`the simulated tofu has no "state ${args[0] ?? ''}" (only "state list")\n`);
      return 1;
    default:
      io.err(
        `${command === undefined ? '' : `OpenTofu has no command named "${command}".\n\n`}Usage: tofu [global options] <subcommand> [args]\n`,
      );
      return 1;
  }
}

function output(cluster: SimCluster | undefined, rest: string[], args: string[], io: ExecIO): number {
  const name = args[0];
  if (cluster?.faults.tofuOutputFail) {
    io.err(diagnostic('Error', cluster.faults.tofuOutputFail, 'OpenTofu failed to load the state needed to read outputs.'));
    return 1;
  }
  const all = cluster ? outputValues(cluster) : {};
  if (name === undefined) {
    if (Object.keys(all).length === 0) {
      io.err(
        diagnostic(
          'Warning',
          'No outputs found',
          'The state file either has no outputs defined, or all the defined outputs\nare empty. Please define an output in your configuration with the `output`\nkeyword and run `tofu refresh` for it to become available.',
        ),
      );
      return 0;
    }
    if (option(rest, 'json')) {
      const obj = Object.fromEntries(Object.entries(all).map(([k, v]) => [k, { sensitive: v.sensitive, type: 'string', value: v.value }]));
      io.out(`${JSON.stringify(obj, null, 2)}\n`);
    } else {
      io.out(
        Object.entries(all)
          .map(([k, v]) => `${k} = ${v.sensitive ? '<sensitive>' : JSON.stringify(v.value)}\n`)
          .join(''),
      );
    }
    return 0;
  }
  const found = all[name];
  if (!found) {
    io.err(
      diagnostic(
        'Error',
        `Output "${name}" not found`,
        "The output variable requested could not be found in the state file. If you\nrecently added this to your configuration, be sure to run `tofu apply`,\nsince the state won't be updated with new output variables until that\ncommand is run.",
      ),
    );
    return 1;
  }
  if (option(rest, 'raw')) io.out(found.value);
  else if (option(rest, 'json')) io.out(`${JSON.stringify(found.value)}\n`);
  else io.out(`${found.sensitive ? '<sensitive>' : JSON.stringify(found.value)}\n`);
  return 0;
}

/** The declared inputs of the working tree, or a diagnostic when the file cannot be read. */
function declaredOrFail(cluster: SimCluster, io: ExecIO): ReturnType<typeof readDeclaredInputs> | undefined {
  try {
    return readDeclaredInputs(cluster);
  } catch {
    io.err(diagnostic('Error', 'Failed to read variables file', 'Given variables file cluster.auto.tfvars.json does not exist.'));
    return undefined;
  }
}

function refreshing(cluster: SimCluster, io: ExecIO): void {
  for (const r of Object.values(cluster.terraform.state.resources)) {
    if (r.type === 'proxmox_virtual_environment_vm') io.out(`${r.address}: Refreshing state... [id=${String(r.attributes['id'])}]\n`);
  }
}

/**
 * The `-replace` addresses of a plan or apply, or undefined after printing why they are refused
 * (arguments/extended.go v1.12.6: an invalid address fails the command with its usage hint).
 */
function forcedReplacements(
  cluster: SimCluster,
  inputs: NonNullable<ReturnType<typeof readDeclaredInputs>>,
  rest: string[],
  io: ExecIO,
  command: 'plan' | 'apply',
): ReturnType<typeof replaceRequest> | undefined {
  const request = replaceRequest(replaceFlags(rest), desiredResources(cluster.name, inputs, cluster.terraform.defaultSchematic));
  if (request.errors === '') return request;
  io.err(`${request.errors}\nFor more help on using this command, run:\n  tofu ${command} -help\n`);
  return undefined;
}

async function plan(cluster: SimCluster | undefined, cwd: string, rest: string[], io: ExecIO): Promise<number> {
  if (!cluster) {
    io.err(
      diagnostic(
        'Error',
        'No configuration files',
        'Plan requires configuration to be present. Planning without a configuration\nwould mark everything for destruction, which is normally not what is desired.',
      ),
    );
    return 1;
  }
  if (cluster.faults.tofuPlan === 'error') {
    io.err(
      diagnostic(
        'Error',
        'Error acquiring the state lock',
        'Error message: ConditionalCheckFailedException: The conditional request failed\nLock Info:\n  ID:        3f1c9a8e-5d2b-4c4e-9a1f-2b7e6c0d9e11\n  Operation: OperationTypeApply',
      ),
    );
    return 1;
  }
  const inputs = declaredOrFail(cluster, io);
  if (!inputs) return 1;
  const replace = forcedReplacements(cluster, inputs, rest, io, 'plan');
  if (!replace) return 1;
  const planned = computePlan(cluster, inputs, replace.addresses);
  refreshing(cluster, io);
  io.out(planText(planned));
  if (replace.warnings !== '') io.out(`\n${replace.warnings}`);
  const out = option(rest, 'out');
  if (typeof out === 'string') {
    await writePlanFile(isAbsolute(out) ? out : resolve(cwd, out), planned);
    io.out(
      `\n─────────────────────────────────────────────────────────────────────────────\n\nSaved the plan to: ${out}\n\nTo perform exactly these actions, run the following command to apply:\n    tofu apply ${JSON.stringify(out)}\n`,
    );
  }
  return planHasChanges(planned) && option(rest, 'detailed-exitcode') ? 2 : 0;
}

async function show(cwd: string, rest: string[], args: string[], io: ExecIO): Promise<number> {
  const file = args[0];
  if (!file) {
    io.out('No state.\n');
    return 0;
  }
  const saved = await readPlanFile(isAbsolute(file) ? file : resolve(cwd, file));
  if (!saved) {
    io.err(
      diagnostic(
        'Error',
        'Failed to read the given file as a state or plan file',
        `State read error: Error loading statefile: open ${file}: no such file or directory`,
      ),
    );
    return 1;
  }
  if (option(rest, 'json')) io.out(`${showJson(saved)}\n`);
  else io.out(planText(saved));
  return 0;
}

/** The approval prompt of an apply without a saved plan (UIInput, non-colour). */
const APPROVAL_PROMPT =
  "\nDo you want to perform these actions?\n  OpenTofu will perform the actions described above.\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ";

async function apply(
  cluster: SimCluster | undefined,
  cwd: string,
  rest: string[],
  args: string[],
  io: ExecIO,
  runtime: ApplyRuntime | undefined,
): Promise<number> {
  const file = args[0];
  if (!cluster) {
    io.err(
      diagnostic(
        'Error',
        'No configuration files',
        "Apply requires configuration to be present. Applying without a configuration would mark everything for destruction, which is normally not what is desired. If you would like to destroy everything, run 'tofu destroy' instead.",
      ),
    );
    return 1;
  }
  if (!runtime) {
    io.err(
      diagnostic(
        'Error',
        'Failed to load plugin schemas',
        'Error while loading schemas for plugin components: the simulator runs apply only with its machine lifecycle.',
      ),
    );
    return 1;
  }
  let planned: SimPlan;
  if (file !== undefined) {
    const saved = await readPlanFile(isAbsolute(file) ? file : resolve(cwd, file));
    if (!saved) {
      io.err(
        diagnostic('Error', `Failed to load ${JSON.stringify(file)} as a plan file`, `Error: stat ${file}: no such file or directory`),
      );
      return 1;
    }
    const state = cluster.terraform.state;
    if (saved.cluster !== cluster.name || saved.lineage !== state.lineage) {
      io.err(
        diagnostic(
          'Error',
          'Saved plan does not match the given state',
          'The given plan file can not be applied because it was created from a different state lineage.',
        ),
      );
      return 1;
    }
    if (saved.serial !== state.serial) {
      io.err(
        diagnostic(
          'Error',
          'Saved plan is stale',
          'The given plan file can no longer be applied because the state was changed by another operation after the plan was created.',
        ),
      );
      return 1;
    }
    // A saved plan is the approval: tofu prints no plan and asks nothing.
    planned = saved;
  } else {
    const inputs = declaredOrFail(cluster, io);
    if (!inputs) return 1;
    const replace = forcedReplacements(cluster, inputs, rest, io, 'apply');
    if (!replace) return 1;
    planned = computePlan(cluster, inputs, replace.addresses);
    refreshing(cluster, io);
    io.out(planText(planned));
    if (replace.warnings !== '') io.out(`\n${replace.warnings}`);
    // -input=false does not skip the approval: only a saved plan or -auto-approve does.
    if (planHasChanges(planned) && !option(rest, 'auto-approve')) {
      io.out(APPROVAL_PROMPT);
      const answer = io.readLine ? await io.readLine() : undefined;
      if (answer === undefined) {
        io.err(diagnostic('Error', 'error asking for approval: EOF', ''));
        return 1;
      }
      io.out('\n');
      if (answer.trim() !== 'yes') {
        io.out('Apply cancelled.\n');
        return 1;
      }
    }
    io.out('\n');
  }
  return applyPlan(cluster, planned, io, runtime);
}
