/** talosctl's command tree and a pflag-compatible parser (interspersed flags, `--f=v`, `-fv`, lists). */

type FlagKind = 'bool' | 'string' | 'list';

interface FlagSpec {
  name: string;
  short?: string;
  kind: FlagKind;
  help: string;
  defaultValue?: string;
}

interface CommandSpec {
  name: string;
  aliases?: string[];
  flags?: FlagSpec[];
  sub?: CommandSpec[];
  /** Positional arguments accepted; absent means none checked. */
  args?: { min: number; max: number };
  short: string;
}

const bool = (name: string, help: string, short?: string, defaultValue?: string): FlagSpec => ({
  name,
  kind: 'bool',
  help,
  ...(short ? { short } : {}),
  ...(defaultValue ? { defaultValue } : {}),
});
const str = (name: string, help: string, short?: string, defaultValue?: string): FlagSpec => ({
  name,
  kind: 'string',
  help,
  ...(short ? { short } : {}),
  ...(defaultValue ? { defaultValue } : {}),
});
const list = (name: string, help: string, short?: string): FlagSpec => ({ name, kind: 'list', help, ...(short ? { short } : {}) });

const GLOBAL_FLAGS: FlagSpec[] = [
  str('cluster', 'Cluster to connect to if a proxy endpoint is used.'),
  str('context', 'Context to be used in command'),
  list('endpoints', 'override default endpoints in Talos configuration', 'e'),
  list('nodes', 'target the specified nodes', 'n'),
  str(
    'talosconfig',
    "The path to the Talos configuration file. Defaults to 'TALOSCONFIG' env variable if set, otherwise '$HOME/.talos/config' and '/var/run/secrets/talos.dev/config' in order.",
  ),
  bool('help', 'help for this command', 'h'),
];

const ROOT: CommandSpec = {
  name: 'talosctl',
  short: 'A CLI for out-of-band management of Kubernetes nodes created by Talos',
  sub: [
    {
      name: 'version',
      short: 'Prints the version',
      flags: [
        bool('client', 'Print client version only'),
        bool('short', 'Print the short version'),
        bool('json', 'Print the JSON output'),
        bool('insecure', 'use Talos maintenance mode API', 'i'),
      ],
      args: { min: 0, max: 0 },
    },
    {
      name: 'health',
      short: 'Check cluster health',
      flags: [
        list('control-plane-nodes', 'specify IPs of control plane nodes'),
        list('worker-nodes', 'specify IPs of worker nodes'),
        str('init-node', 'specify IPs of init node'),
        str('wait-timeout', 'timeout to wait for the cluster to be ready', undefined, '20m0s'),
        str('k8s-endpoint', 'use endpoint instead of kubeconfig default'),
        bool('server', 'run server-side check', undefined, 'true'),
        bool('run-e2e', 'run Kubernetes e2e test'),
      ],
      args: { min: 0, max: 0 },
    },
    {
      name: 'service',
      aliases: ['services'],
      short: 'Retrieve the state of a service (or all services), control service state',
      args: { min: 0, max: 2 },
    },
    {
      name: 'etcd',
      short: 'Manage etcd',
      sub: [
        { name: 'status', short: 'Get the status of etcd cluster member', args: { min: 0, max: 0 } },
        { name: 'members', short: 'Get the list of etcd cluster members', args: { min: 0, max: 0 } },
        { name: 'snapshot', short: 'Stream snapshot of the etcd node to the path.', args: { min: 1, max: 1 } },
        { name: 'remove-member', short: 'Remove the node from etcd cluster', args: { min: 1, max: 1 } },
        {
          name: 'alarm',
          short: 'Manage etcd alarms',
          sub: [{ name: 'list', short: 'List the etcd alarms for the node.', args: { min: 0, max: 0 } }],
        },
      ],
    },
    {
      name: 'get',
      short: "Get a specific resource or list of resources (use 'talosctl get rd' to see all available resource types).",
      flags: [
        str('output', 'output mode (json, table, yaml, jsonpath)', 'o', 'table'),
        str('namespace', 'resource namespace (default is to use default namespace per resource)'),
        bool('watch', 'watch resource changes', 'w'),
        bool('insecure', 'get resources using the insecure (encrypted with no auth) maintenance service', 'i'),
      ],
      args: { min: 1, max: 2 },
    },
    {
      name: 'upgrade',
      short: 'Upgrade Talos on the target node',
      flags: [
        str('image', 'the container image to use for performing the install', 'i'),
        bool('stage', 'stage the upgrade to perform it after a reboot', 's'),
        bool('force', 'force the upgrade (skip checks on etcd health and members, might lead to data loss)', 'f'),
        bool(
          'wait',
          'wait for the operation to complete, tracking its progress. always set to true when --debug is set',
          undefined,
          'true',
        ),
        bool('debug', 'debug operation from kernel logs. --wait is set to true when this flag is set'),
        str('timeout', 'time to wait for the operation is complete if --debug or --wait is set', undefined, '30m0s'),
        str(
          'reboot-mode',
          'select the reboot mode during upgrade. Mode "powercycle" bypasses kexec. Valid values are: ["default" "powercycle"].',
          'm',
          'default',
        ),
        bool('preserve', 'preserve data', 'p'),
        bool('insecure', 'upgrade using the insecure (encrypted with no auth) maintenance service'),
        // From v1.13 (v1.13.7 for --no-reboot); older clients refuse them (test/sim/talosctl/upgrade.ts).
        bool('drain', 'drain the Kubernetes node before rebooting (cordon + evict pods)', undefined, 'true'),
        str('drain-timeout', 'timeout for draining the Kubernetes node', undefined, '5m0s'),
        bool('legacy', 'force use of legacy upgrade method'),
        bool('no-reboot', 'do not reboot the node after upgrade (skip reboot and drain)'),
        str('progress', 'output mode for upgrade progress. Values: [AUTO PLAIN]', undefined, 'AUTO'),
      ],
      args: { min: 0, max: 0 },
    },
    { name: 'rollback', short: 'Rollback a node to the previous installation', args: { min: 0, max: 0 } },
    {
      name: 'bootstrap',
      short: 'Bootstrap the etcd cluster on the specified node.',
      flags: [
        str('recover-from', 'recover etcd cluster from the snapshot'),
        bool('recover-skip-hash-check', 'skip integrity check when recovering etcd (use when recovering from data directory copy)'),
      ],
      args: { min: 0, max: 0 },
    },
    {
      name: 'reset',
      short: 'Reset a node',
      flags: [
        bool('graceful', 'if true, attempt to cordon/drain node and leave etcd (if applicable)', undefined, 'true'),
        bool('reboot', 'if true, reboot the node after resetting instead of shutting down'),
        bool(
          'wait',
          'wait for the operation to complete, tracking its progress. always set to true when --debug is set',
          undefined,
          'true',
        ),
        bool('debug', 'debug operation from kernel logs. --wait is set to true when this flag is set'),
        str('timeout', 'time to wait for the operation is complete if --debug or --wait is set', undefined, '30m0s'),
        str('wipe-mode', 'disk reset mode', undefined, 'all'),
        list('system-labels-to-wipe', 'if set, just wipe selected system disk partitions by label but keep other partitions intact'),
        list('user-disks-to-wipe', 'if set, wipes defined devices in the list'),
        bool('insecure', 'reset using the insecure (encrypted with no auth) maintenance service'),
      ],
      args: { min: 0, max: 0 },
    },
    {
      name: 'upgrade-k8s',
      short: 'Upgrade Kubernetes control plane in the Talos cluster.',
      flags: [
        str('to', 'the Kubernetes control plane version to upgrade to', undefined, '1.34.1'),
        str('from', 'the Kubernetes control plane version to upgrade from'),
        bool('dry-run', 'skip the actual upgrade and show the upgrade plan instead'),
        str('endpoint', 'the cluster control plane endpoint'),
        bool('pre-pull-images', 'pre-pull images before upgrade', undefined, 'true'),
        bool('upgrade-kubelet', 'upgrade kubelet service', undefined, 'true'),
        str('apiserver-image', 'kube-apiserver image to use'),
        str('controller-manager-image', 'kube-controller-manager image to use'),
        str('scheduler-image', 'kube-scheduler image to use'),
        str('kubelet-image', 'kubelet image to use'),
        str('proxy-image', 'kube-proxy image to use'),
        bool('with-docs', 'patch all machine configs adding the documentation for each field', undefined, 'true'),
        bool('with-examples', 'patch all machine configs with the commented examples', undefined, 'true'),
      ],
      args: { min: 0, max: 0 },
    },
  ],
};

/** A parse error whose message talosctl prints together with the command usage. */
export class UsageError extends Error {
  readonly usage: string;
  constructor(message: string, usage: string) {
    super(message);
    this.usage = usage;
  }
}

export interface ParsedArgs {
  /** Canonical command path, e.g. `['etcd', 'status']`. */
  path: string[];
  args: string[];
  bool(name: string): boolean;
  str(name: string): string | undefined;
  list(name: string): string[];
  /** Whether the flag was given on the command line. */
  has(name: string): boolean;
}

function usageFor(chain: CommandSpec[]): string {
  const spec = chain[chain.length - 1] ?? ROOT;
  const path = chain.map((c) => c.name).join(' ');
  const render = (flags: FlagSpec[]): string => {
    const rows = flags.map((f) => {
      const type = f.kind === 'bool' ? '' : f.kind === 'list' ? ' strings' : ' string';
      const names = `${f.short ? `-${f.short}, ` : '    '}--${f.name}${type}`;
      const def =
        f.defaultValue && f.kind !== 'bool' ? ` (default "${f.defaultValue}")` : f.defaultValue === 'true' ? ' (default true)' : '';
      return { names, help: `${f.help}${def}` };
    });
    const width = Math.max(...rows.map((r) => r.names.length));
    return rows.map((r) => `  ${r.names.padEnd(width)}   ${r.help}\n`).join('');
  };
  const own = [...(spec.flags ?? []), bool('help', `help for ${spec.name}`, 'h')];
  const sub = spec.sub?.length ? `\nAvailable Commands:\n${spec.sub.map((s) => `  ${s.name.padEnd(18)} ${s.short}\n`).join('')}` : '';
  return (
    `Usage:\n  ${path}${spec.sub ? ' [command]' : ''} [flags]\n${sub}\nFlags:\n${render(own)}\n` +
    `Global Flags:\n${render(GLOBAL_FLAGS.filter((f) => f.name !== 'help'))}`
  );
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const chain: CommandSpec[] = [ROOT];
  const values = new Map<string, string[]>();
  const positionals: string[] = [];
  const current = (): CommandSpec => chain[chain.length - 1] ?? ROOT;
  const known = (): FlagSpec[] => [...GLOBAL_FLAGS, ...(current().flags ?? [])];
  const fail = (message: string): never => {
    throw new UsageError(message, usageFor(chain));
  };
  const setFlag = (flag: FlagSpec, value: string, display: string): void => {
    if (flag.kind === 'bool' && !/^(1|t|T|TRUE|true|True|0|f|F|FALSE|false|False)$/.test(value)) {
      fail(
        `invalid argument ${JSON.stringify(value)} for ${JSON.stringify(display)} flag: strconv.ParseBool: parsing ${JSON.stringify(value)}: invalid syntax`,
      );
    }
    const previous = flag.kind === 'list' ? (values.get(flag.name) ?? []) : [];
    const parts = flag.kind === 'list' ? value.split(',').filter((p) => p !== '') : [value];
    values.set(flag.name, [...previous, ...parts]);
  };
  let onlyPositionals = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i] ?? '';
    if (onlyPositionals || token === '-' || !token.startsWith('-')) {
      const sub = positionals.length === 0 ? current().sub?.find((s) => s.name === token || s.aliases?.includes(token)) : undefined;
      if (sub) chain.push(sub);
      else if (current().sub && positionals.length === 0 && !onlyPositionals)
        fail(`unknown command ${JSON.stringify(token)} for ${JSON.stringify(chain.map((c) => c.name).join(' '))}`);
      else positionals.push(token);
      continue;
    }
    if (token === '--') {
      onlyPositionals = true;
      continue;
    }
    if (token.startsWith('--')) {
      const [name = '', inline] = token.slice(2).split(/=(.*)/s, 2);
      const flag = known().find((f) => f.name === name);
      if (!flag) fail(`unknown flag: --${name}`);
      const spec = flag as FlagSpec;
      if (inline !== undefined) setFlag(spec, inline, `--${name}`);
      else if (spec.kind === 'bool') setFlag(spec, 'true', `--${name}`);
      else if (i + 1 < argv.length) setFlag(spec, argv[++i] ?? '', `--${name}`);
      else fail(`flag needs an argument: --${name}`);
      continue;
    }
    const shorts = token.slice(1);
    for (let j = 0; j < shorts.length; j++) {
      const letter = shorts[j] ?? '';
      const flag = known().find((f) => f.short === letter);
      if (!flag) fail(`unknown shorthand flag: '${letter}' in ${token}`);
      const spec = flag as FlagSpec;
      const rest = shorts.slice(j + 1);
      if (spec.kind === 'bool') {
        if (rest.startsWith('=')) {
          setFlag(spec, rest.slice(1), `-${letter}`);
          break;
        }
        setFlag(spec, 'true', `-${letter}`);
        continue;
      }
      if (rest !== '') setFlag(spec, rest.replace(/^=/, ''), `-${letter}`);
      else if (i + 1 < argv.length) setFlag(spec, argv[++i] ?? '', `-${letter}`);
      else fail(`flag needs an argument: '${letter}' in -${letter}`);
      break;
    }
  }
  const spec = current();
  if (values.has('help') || (spec.sub && spec !== ROOT) || spec === ROOT) {
    throw new UsageError('', usageFor(chain));
  }
  if (spec.args) {
    const { min, max } = spec.args;
    const n = positionals.length;
    if (min === max && n !== min) fail(`accepts ${min} arg(s), received ${n}`);
    if (n < min) fail(`requires at least ${min} arg(s), only received ${n}`);
    if (n > max)
      fail(
        max === 0
          ? `unknown command ${JSON.stringify(positionals[0])} for ${JSON.stringify(chain.map((c) => c.name).join(' '))}`
          : `accepts at most ${max} arg(s), received ${n}`,
      );
  }
  const flagSpec = (name: string): FlagSpec | undefined => known().find((f) => f.name === name);
  const raw = (name: string): string[] | undefined => values.get(name);
  return {
    path: chain.slice(1).map((c) => c.name),
    args: positionals,
    has: (name) => values.has(name),
    bool: (name) => {
      const v = raw(name)?.at(-1) ?? flagSpec(name)?.defaultValue ?? 'false';
      return /^(1|t|T|TRUE|true|True)$/.test(v);
    },
    str: (name) => raw(name)?.at(-1) ?? flagSpec(name)?.defaultValue,
    list: (name) => raw(name) ?? [],
  };
}
