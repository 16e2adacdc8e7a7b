import { readGoQuoted } from './parse-go-quoted.ts';

/** One progress line of `talosctl upgrade|reboot|reset --wait`, attributed to its node. */
export interface ProgressLine {
  node: string;
  message: string;
}

/** A sequence, phase or task event: `phase: drain action: START`. */
export interface TaskEvent {
  kind: 'sequence' | 'phase' | 'task';
  name: string;
  /** e.g. `START`, `STOP`. */
  action: string;
  /** The error text of a failed step (`… error: [code: .. message: ..]`). */
  error?: string;
}

/** `stage: RUNNING ready: true unmetCond: []`: the machine status the tracker saw. */
export interface MachineStage {
  stage: string;
  ready: boolean;
}

/**
 * Words that start legacy tracker messages or whole-command errors; an unquoted `word: …` line
 * starting with one of them is not a node's progress line.
 */
const NOT_NODES = new Set(['error', 'warning', 'sequence', 'phase', 'task', 'stage', 'service', 'rpc', 'http', 'https']);
/** Address or hostname, possibly IPv6 with zone: no spaces, no quotes. */
const NODE_TOKEN = /^[0-9A-Za-z][0-9A-Za-z.:%_-]*$/;
/** A terminal redraws progress as `    * <node>: <msg>` under a spinner line. */
const TTY_ITEM = /^\s+\* (\S+?): (.*)$/;

/**
 * Parses one progress line: `"10.0.0.5": phase: drain action: START` (legacy flow, node
 * %q-quoted), `10.0.0.5: upgrade completed` (1.13+ flow, unquoted), or the terminal redraw
 * form `    * 10.0.0.5: post check passed`. Returns `undefined` for other lines.
 */
export function parseProgressLine(line: string): ProgressLine | undefined {
  const text = line.replace(/\r$/, '');
  const quoted = readGoQuoted(text);
  if (quoted !== undefined) {
    if (!text.startsWith(': ', quoted.end) || quoted.value === '') return undefined;
    return { node: quoted.value, message: text.slice(quoted.end + 2) };
  }
  const tty = TTY_ITEM.exec(text);
  if (tty !== null) return { node: tty[1] ?? '', message: tty[2] ?? '' };
  const split = text.indexOf(': ');
  if (split <= 0) return undefined;
  const node = text.slice(0, split);
  if (!NODE_TOKEN.test(node) || NOT_NODES.has(node.toLowerCase())) return undefined;
  return { node, message: text.slice(split + 2) };
}

function messageOf(line: string): string {
  return parseProgressLine(line)?.message ?? line.trim();
}

/** `post check passed`: the tracker saw the boot ID change. The version must still be checked. */
export function isPostCheckPassed(line: string): boolean {
  return messageOf(line) === 'post check passed';
}

/** `upgrade completed` (1.13+ flow): the installer finished on the node; the reboot follows. */
export function isUpgradeCompleted(line: string): boolean {
  return messageOf(line) === 'upgrade completed';
}

/** `waiting for actor ID`: talosctl is waiting for the node to accept the request. */
export function isWaitingForActorId(line: string): boolean {
  return messageOf(line) === 'waiting for actor ID';
}

/** `unavailable, retrying...`: the node is rebooting or unreachable for now. */
export function isUnavailableLine(line: string): boolean {
  return messageOf(line) === 'unavailable, retrying...';
}

/** The 1.13+ client fell back to the legacy upgrade API because the node is older. */
export function isLegacyFallback(line: string): boolean {
  return line.includes('New upgrade API is not available, falling back to legacy');
}

/**
 * The tracker ends its event watch on these with an expected error and watches on, printing it as
 * `error: …` (cmd/talosctl/pkg/talos/action/node.go v1.13.9): routine in every upgrade and reboot.
 */
const ROUTINE_ERRORS = new Set(['error: stopAllServices task completed', 'error: reboot sequence completed']);

const FAILURE_PATTERNS: readonly RegExp[] = [
  /^sequence error: /,
  / action: \S+ error: /,
  /^error\b/,
  /^rpc error: /,
  /\brpc error: code = /,
  /\bupgrade failed with exit code [0-9]+/,
];

/**
 * Whether a line reports a failed upgrade, reboot or reset: `sequence error: …`, a step that
 * ended with `error: [...]`, `error: …` / `error from node …`, a server-side rejection
 * (`"10.0.0.5": rpc error: …`), or `upgrade failed with exit code N`. A failed eviction is not a
 * failure: the drain retries it.
 */
export function isFailureLine(line: string): boolean {
  const message = messageOf(line);
  if (ROUTINE_ERRORS.has(message)) return false;
  return FAILURE_PATTERNS.some((p) => p.test(message) || p.test(line.trim()));
}

/** Parses `sequence|phase|task: <name> action: <ACTION>[ error: <err>]`. */
export function parseTaskEvent(message: string): TaskEvent | undefined {
  const match = /^(sequence|phase|task): (\S+) action: (\S+)(?: error: (.*))?$/.exec(message);
  if (match === null) return undefined;
  const [, kind, name = '', action = '', error] = match;
  const event: TaskEvent = { kind: kind as TaskEvent['kind'], name, action };
  if (error !== undefined) event.error = error;
  return event;
}

/** Parses `stage: RUNNING ready: true unmetCond: [...]`. */
export function parseMachineStage(message: string): MachineStage | undefined {
  const match = /^stage: (\S+) ready: (true|false)\b/.exec(message);
  if (match === null) return undefined;
  return { stage: match[1] ?? '', ready: match[2] === 'true' };
}

/**
 * What one line of `talosctl upgrade` tells a person, in a few words, or undefined for the lines
 * that add nothing (each installer log line, each event of the boot). The ≥ 1.13 flow
 * (cmd/talosctl/cmd/talos/upgrade.go v1.13.9) prints `<node>: pulled image …`, the installer's
 * output and `<node>: upgrade completed`, then `<node name>: cordoning node` … `node drained`, the
 * reboot's tracker lines, and `<node name>: node uncordoned`; the legacy flow its phases.
 */
export function upgradeMilestone(line: string): string | undefined {
  const parsed = parseProgressLine(line);
  if (parsed === undefined)
    return isLegacyFallback(line) ? 'the node has no LifecycleService: talosctl falls back to the legacy upgrade' : undefined;
  const { node, message } = parsed;
  if (message.startsWith('pulled image ')) return `${node}: installer image pulled`;
  if (/^\d{4}\/\d\d\/\d\d \d\d:\d\d:\d\d running Talos installer /.test(message)) return `${node}: installer running`;
  if (message === 'upgrade completed') return `${node}: new image installed (not booted yet)`;
  if (/^upgrade failed with exit code \d+$/.test(message)) return `${node}: the installer ${message.replace('upgrade failed', 'failed')}`;
  if (message === 'cordoning node' || message === 'node cordoned' || message === 'draining node' || message === 'node drained')
    return `${node}: ${message}`;
  const eviction = /^(evicting|evicted|deleting) pod (\S+)$/.exec(message);
  if (eviction) return `${node}: ${eviction[1]} pod ${eviction[2]}`;
  if (message === 'waiting for node to become Ready' || message === 'node uncordoned') return `${node}: ${message}`;
  if (message.startsWith('actor ID: ')) return `${node}: request accepted`;
  if (message === 'unavailable, retrying...') return `${node}: rebooting`;
  if (message === 'post check passed') return `${node}: rebooted`;
  const task = parseTaskEvent(message);
  if (task?.kind === 'phase' && task.action === 'START') return `${node}: phase ${task.name}`;
  if (task?.kind === 'sequence' && task.error !== undefined) return `${node}: sequence ${task.name} failed`;
  return undefined;
}

/** A pod the drain could not evict before its timeout. */
export interface BlockedPod {
  namespace: string;
  name: string;
}

/** The client-side drain of the ≥ 1.13 flow failed: talosctl stopped before the reboot. */
export interface DrainFailure {
  /** The Kubernetes node name. */
  node: string;
  /** The pods whose eviction never went through, when the error names them. */
  pods: BlockedPod[];
  /** The drain timeout as talosctl printed it (`5m0s`), when it timed out. */
  timeout?: string;
  /** The error as printed. */
  text: string;
}

/**
 * Reads `error draining node "<name>": …` (drainNodes, cmd/talosctl/cmd/talos/drain.go v1.13.9,
 * wrapping kubectl's drain errors: `error when evicting pods/"<pod>" -n "<ns>": global timeout
 * reached: 5m0s`, several as `[a, b]`). Returns undefined for any other line.
 */
export function parseDrainFailure(line: string): DrainFailure | undefined {
  const text = line.trim();
  const head = /^error draining node "([^"]+)": /.exec(text);
  if (head === null) return undefined;
  const pods: BlockedPod[] = [];
  for (const match of text.matchAll(/pods\/"([^"]+)" -n "([^"]+)"/g)) pods.push({ name: match[1] ?? '', namespace: match[2] ?? '' });
  const timeout = /global timeout reached: (\S+?)\]?$/.exec(text)?.[1] ?? /global timeout reached: ([0-9a-zµ.]+)/.exec(text)?.[1];
  const failure: DrainFailure = { node: head[1] ?? '', pods, text };
  if (timeout !== undefined) failure.timeout = timeout;
  return failure;
}
