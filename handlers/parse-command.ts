/**
 * `/talos <subcommand> …` text → a typed command. Only this parser sees raw text;
 * everything it lets through is a plain token (a cluster name, a version, an address,
 * an operation id), so nothing an operator types can reach a child process unchecked.
 */
import { isNodeAddress } from '../src/rules/argument-safety.ts';

export type Command =
  | { kind: 'help' }
  | { kind: 'health'; cluster?: string }
  | { kind: 'gates'; cluster?: string }
  | { kind: 'plan'; cluster?: string }
  | { kind: 'snapshot'; cluster?: string }
  | { kind: 'upgrade-talos'; version: string; cluster?: string }
  | { kind: 'upgrade-k8s'; version: string; cluster?: string }
  | { kind: 'rollback'; node: string; cluster?: string }
  | { kind: 'remove'; node: string; cluster?: string }
  | { kind: 'status' }
  | { kind: 'cancel'; op: string }
  | { kind: 'record'; op: string };

export type ParseResult = { ok: true; command: Command } | { ok: false; reason: string };

export const HELP_TEXT = [
  '*`/talos` commands* (the cluster defaults to this channel\'s cluster):',
  '• `/talos health [cluster]` — run the standard health gate',
  '• `/talos gates [cluster]` — production-readiness report',
  '• `/talos plan [cluster]` — `tofu fmt`/`validate`/`plan`, kept for review; an approver applies it exactly as planned (staging first, then production)',
  '• `/talos snapshot [cluster]` — etcd snapshot copied off-cluster (operators)',
  '• `/talos upgrade talos <version> [cluster]` — rolling Talos upgrade with approvals (operators)',
  '• `/talos upgrade k8s <version> [cluster]` — Kubernetes upgrade, dry run first (operators)',
  '• `/talos rollback <node> [cluster]` — roll one node back (operators, approval)',
  '• `/talos remove <node> [cluster]` — remove a node (operators, approval)',
  '• `/talos status` — running and recent operations',
  '• `/talos cancel <op>` — stop an operation between steps',
  '• `/talos record <op>` — the maintenance record of an operation',
  '• `/talos help` — this list',
].join('\n');

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
    return { ok: false, reason: `\`${token}\` is not a cluster name. Cluster names are lower-case letters, digits and dashes, e.g. \`production\`.` };
  }
  return { ok: true, cluster: token };
}

function versionArg(token: string | undefined, what: string, example: string): { ok: true; version: string } | { ok: false; reason: string } {
  if (token === undefined) return { ok: false, reason: `Name the target ${what} version, e.g. \`${example}\`.` };
  if (!VERSION.test(token)) {
    return { ok: false, reason: `\`${token}\` is not a ${what} version. Write it as MAJOR.MINOR.PATCH with or without a leading v, e.g. \`${example}\`.` };
  }
  return { ok: true, version: token.startsWith('v') ? token : `v${token}` };
}

function tooMany(usage: string): ParseResult {
  return { ok: false, reason: `Too many arguments. Usage: \`${usage}\`.` };
}

export function parseCommand(text: string): ParseResult {
  if (text.length > MAX_TEXT) return { ok: false, reason: `That command is ${text.length} characters long; \`/talos\` commands are short. Try \`/talos help\`.` };
  const tokens = text.trim().split(/\s+/).filter((t) => t !== '');
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
    case 'gates':
    case 'plan':
    case 'snapshot': {
      const kind = sub.toLowerCase() as 'health' | 'gates' | 'plan' | 'snapshot';
      if (args.length > 1) return tooMany(`/talos ${kind} [cluster]`);
      const cluster = clusterArg(args[0]);
      return cluster.ok ? { ok: true, command: { kind, cluster: cluster.cluster } } : cluster;
    }
    case 'upgrade': {
      const [what, versionToken, clusterToken, ...rest] = args;
      const target = what?.toLowerCase();
      if (target !== 'talos' && target !== 'k8s' && target !== 'kubernetes') {
        return { ok: false, reason: 'Say what to upgrade: `/talos upgrade talos <version> [cluster]` or `/talos upgrade k8s <version> [cluster]`.' };
      }
      const kind = target === 'talos' ? 'upgrade-talos' : 'upgrade-k8s';
      if (rest.length > 0) return tooMany(`/talos upgrade ${target} <version> [cluster]`);
      const version = versionArg(versionToken, target === 'talos' ? 'Talos' : 'Kubernetes', target === 'talos' ? 'v1.12.11' : '1.35.0');
      if (!version.ok) return version;
      const cluster = clusterArg(clusterToken);
      return cluster.ok ? { ok: true, command: { kind, version: version.version, cluster: cluster.cluster } } : cluster;
    }
    case 'rollback':
    case 'remove': {
      const kind = sub.toLowerCase() as 'rollback' | 'remove';
      const [node, clusterToken, ...rest] = args;
      if (node === undefined) return { ok: false, reason: `Name the node's address, e.g. \`/talos ${kind} 10.0.30.12\`.` };
      if (rest.length > 0) return tooMany(`/talos ${kind} <node> [cluster]`);
      if (!NODE.test(node) || !isNodeAddress(node)) return { ok: false, reason: `\`${node}\` is not a node address. Give the node's IP address as listed in the inventory.` };
      const cluster = clusterArg(clusterToken);
      return cluster.ok ? { ok: true, command: { kind, node, cluster: cluster.cluster } } : cluster;
    }
    case 'status':
      if (args.length > 0) return tooMany('/talos status');
      return { ok: true, command: { kind: 'status' } };
    case 'cancel':
    case 'record': {
      const kind = sub.toLowerCase() as 'cancel' | 'record';
      const [op, ...rest] = args;
      if (op === undefined) return { ok: false, reason: `Name the operation, e.g. \`/talos ${kind} op-1a2b3c4d\` (see \`/talos status\`).` };
      if (rest.length > 0) return tooMany(`/talos ${kind} <op>`);
      if (!OP_ID.test(op)) return { ok: false, reason: `\`${op}\` is not an operation id; ids look like \`op-1a2b3c4d\` (see \`/talos status\`).` };
      return { ok: true, command: { kind, op } };
    }
    default:
      return { ok: false, reason: `\`/talos ${sub}\` is not a command.\n${HELP_TEXT}` };
  }
}
