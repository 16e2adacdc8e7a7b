/**
 * `/talos <subcommand> …` text → a typed command. Only this parser sees raw text;
 * everything it lets through is a plain token (a cluster name, a version, an address,
 * an operation id), so nothing an operator types can reach a child process unchecked.
 */
import type { PlaybookCommand } from '../jobs/engine/playbook.ts';
import { PLAYBOOK_COMMANDS, type OperationKind } from '../jobs/playbooks/index.ts';
import { isNodeAddress } from '../src/rules/argument-safety.ts';

export type Command =
  | { kind: 'help' }
  | { kind: 'health'; cluster?: string }
  | { kind: 'gates'; cluster?: string }
  | PlaybookRequestCommand
  | { kind: 'status' }
  | { kind: 'cancel'; op: string }
  | { kind: 'record'; op: string }
  | { kind: 'guided'; playbook: OperationKind }
  | { kind: 'doctor' };

/**
 * A playbook's command, by the name its declaration gives (an operation kind of the registry), with
 * what its argument declares: a version, a node, or neither.
 */
export interface PlaybookRequestCommand {
  kind: OperationKind;
  version?: string;
  node?: string;
  cluster?: string;
}

export type ParseResult = { ok: true; command: Command } | { ok: false; reason: string };

/** A playbook command's usage: `/talos upgrade talos <version> [cluster]`. `said` is the last word as the operator typed it. */
export function usage(command: PlaybookCommand, said = command.words.at(-1)): string {
  const words = [...command.words.slice(0, -1), said].join(' ');
  const argument = command.argument.kind === 'none' ? '' : ` <${command.argument.kind}>`;
  return `/talos ${words}${argument} [cluster]`;
}

/** `/talos help`: the read commands, each playbook's line from its declaration, then the commands about operations. */
export function helpText(commands: readonly PlaybookCommand[]): string {
  return [
    "*`/talos` commands* (the cluster defaults to this channel's cluster):",
    '• `/talos health [cluster]` — run the standard health gate',
    '• `/talos gates [cluster]` — production-readiness report',
    ...commands.map((c) => `• \`${usage(c)}\` — ${c.help}`),
    '• `/talos status` — running and recent operations',
    '• `/talos cancel <op>` — stop an operation between steps',
    '• `/talos record <op>` — the maintenance record of an operation',
    '• `/talos doctor` — check what the bot needs: Slack, Terraform, talosctl, Redis, snapshots, windows (operators)',
    '• `/talos help` — this list',
  ].join('\n');
}

export const HELP_TEXT = helpText(PLAYBOOK_COMMANDS);

const CLUSTER = /^[a-z][a-z0-9-]{0,39}$/;
/** A release as the version checks take it: no leading zeros, so `v01.12.11` never stands for `v1.12.11`. */
const VERSION = /^v?(?:0|[1-9]\d{0,2})\.(?:0|[1-9]\d{0,2})\.(?:0|[1-9]\d{0,2})$/;
const OP_ID = /^op-[a-z0-9]{4,40}$/;
const NODE = /^(?:\d{1,3}(?:\.\d{1,3}){3}|[0-9a-fA-F:]{2,39}|[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)$/;
/** Anything outside this set is refused before parsing: shell metacharacters, quotes, unicode look-alikes. */
const PLAIN = /^[A-Za-z0-9._:-]+$/;
const MAX_TEXT = 200;
/** Characters that do not show, or rearrange what follows them: control, format (zero-width, bidi), surrogate, private-use, unassigned. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{Cs}\p{Co}\p{Cn}]/gu;

function codePoint(ch: string): string {
  return `U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}`;
}

/**
 * A refused token as the operator can read it: invisible characters spelled as code points,
 * followed by the first character that is not allowed, so a look-alike (Cyrillic о for o) or a
 * zero-width space is named rather than shown as an apparently plain word.
 */
function describeBadToken(token: string): string {
  const shown = token.replace(/`/g, "'").replace(INVISIBLE, (ch) => `[${codePoint(ch)}]`);
  const first = /[^A-Za-z0-9._:-]/u.exec(token)?.[0] ?? '';
  const named = /^[!-~]$/.test(first) && first !== '`' ? `\`${first}\`` : codePoint(first);
  return `\`${shown}\` contains characters a \`/talos\` argument never has (${named})`;
}

function clusterArg(token: string | undefined): { ok: true; cluster?: string } | { ok: false; reason: string } {
  if (token === undefined) return { ok: true };
  if (!CLUSTER.test(token)) {
    return {
      ok: false,
      reason: `\`${token}\` is not a cluster name. Cluster names are lower-case letters, digits and dashes, e.g. \`production\`.`,
    };
  }
  return { ok: true, cluster: token };
}

function versionArg(
  token: string | undefined,
  what: string,
  example: string,
): { ok: true; version: string } | { ok: false; reason: string } {
  if (token === undefined) return { ok: false, reason: `Name the target ${what} version, e.g. \`${example}\`.` };
  if (!VERSION.test(token)) {
    return {
      ok: false,
      reason: `\`${token}\` is not a ${what} version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. \`${example}\`.`,
    };
  }
  return { ok: true, version: token.startsWith('v') ? token : `v${token}` };
}

function tooMany(usage: string): ParseResult {
  return { ok: false, reason: `Too many arguments. Usage: \`${usage}\`.` };
}

/**
 * A playbook's command, by its declared grammar: the words, then a version, a node or nothing,
 * then the optional cluster. Undefined when no playbook takes `sub`.
 */
function parsePlaybookCommand(commands: readonly PlaybookCommand[], sub: string, args: string[]): ParseResult | undefined {
  const first = sub.toLowerCase();
  const group = commands.filter((c) => c.words[0] === first);
  if (group.length === 0) return undefined;
  let rest = args;
  let command = group[0]!;
  let said = first;
  if (command.words.length > 1) {
    // Two words (`upgrade talos`): the second says which.
    said = rest[0]?.toLowerCase() ?? '';
    const chosen = group.find((c) => c.words[1] === said || (c.aliases ?? []).includes(said));
    if (chosen === undefined) return { ok: false, reason: `Say what to ${first}: ${group.map((c) => `\`${usage(c)}\``).join(' or ')}.` };
    command = chosen;
    rest = rest.slice(1);
  }
  const { argument } = command;
  // The registry's keys are the names its commands declare.
  const kind = command.name as OperationKind;
  if (argument.kind === 'none') {
    if (rest.length > 1) return tooMany(usage(command, said));
    const cluster = clusterArg(rest[0]);
    return cluster.ok ? { ok: true, command: { kind, cluster: cluster.cluster } } : cluster;
  }
  const [value, clusterToken, ...extra] = rest;
  // Left out, the version or the node is asked for in the command's form; without one, it must be typed.
  if (value === undefined && command.form !== undefined) return { ok: true, command: { kind: 'guided', playbook: kind } };
  if (value === undefined) return { ok: false, reason: `Name the ${argument.kind}. Usage: \`${usage(command, said)}\`.` };
  if (argument.kind === 'version') {
    if (extra.length > 0) return tooMany(usage(command, said));
    const version = versionArg(value, argument.what, argument.example);
    if (!version.ok) return version;
    const cluster = clusterArg(clusterToken);
    return cluster.ok ? { ok: true, command: { kind, version: version.version, cluster: cluster.cluster } } : cluster;
  }
  if (extra.length > 0) return tooMany(usage(command, said));
  if (!NODE.test(value) || !isNodeAddress(value))
    return {
      ok: false,
      reason: `\`${value}\` is not a node address or name. Give the node's name or IP address as listed in the inventory.`,
    };
  const cluster = clusterArg(clusterToken);
  return cluster.ok ? { ok: true, command: { kind, node: value, cluster: cluster.cluster } } : cluster;
}

/** `text` parsed; `commands` are the playbooks' commands it knows (the registry's, unless a test extends it). */
export function parseCommand(text: string, commands: readonly PlaybookCommand[] = PLAYBOOK_COMMANDS): ParseResult {
  if (text.length > MAX_TEXT)
    return { ok: false, reason: `That command is ${text.length} characters long; \`/talos\` commands are short. Try \`/talos help\`.` };
  const tokens = text
    .trim()
    .split(/\s+/)
    .filter((t) => t !== '');
  const bad = tokens.find((t) => !PLAIN.test(t));
  if (bad !== undefined) {
    return { ok: false, reason: `${describeBadToken(bad)}. Use plain names, versions and addresses; see \`/talos help\`.` };
  }
  const [sub, ...args] = tokens;
  switch (sub?.toLowerCase()) {
    case undefined:
    case 'help':
      return { ok: true, command: { kind: 'help' } };
    case 'health':
    case 'gates': {
      const kind = sub.toLowerCase() as 'health' | 'gates';
      if (args.length > 1) return tooMany(`/talos ${kind} [cluster]`);
      const cluster = clusterArg(args[0]);
      return cluster.ok ? { ok: true, command: { kind, cluster: cluster.cluster } } : cluster;
    }
    case 'status':
      if (args.length > 0) return tooMany('/talos status');
      return { ok: true, command: { kind: 'status' } };
    case 'doctor':
      if (args.length > 0) return tooMany('/talos doctor');
      return { ok: true, command: { kind: 'doctor' } };
    case 'cancel':
    case 'record': {
      const kind = sub.toLowerCase() as 'cancel' | 'record';
      const [op, ...rest] = args;
      if (op === undefined)
        return { ok: false, reason: `Name the operation, e.g. \`/talos ${kind} op-1a2b3c4d\` (see \`/talos status\`).` };
      if (rest.length > 0) return tooMany(`/talos ${kind} <op>`);
      if (!OP_ID.test(op))
        return { ok: false, reason: `\`${op}\` is not an operation id; ids look like \`op-1a2b3c4d\` (see \`/talos status\`).` };
      return { ok: true, command: { kind, op } };
    }
    default:
      return (
        parsePlaybookCommand(commands, sub ?? '', args) ?? {
          ok: false,
          reason: `\`/talos ${sub}\` is not a command.\n${helpText(commands)}`,
        }
      );
  }
}
