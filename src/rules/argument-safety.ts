import { isIPv4, isIPv6 } from 'node:net';
import { BotError } from '../errors.ts';

/** Longer than any address, version, image reference or path the bot passes. */
const MAX_TOKEN = 512;
const MAX_DNS_NAME = 253;

/**
 * Characters an argument may hold: enough for addresses (`fd00::1`, `fe80::1%eth0`), versions,
 * image references (`registry:5000/ns/img:v1.12.11`) and paths. Everything a shell or a flag
 * parser treats specially (whitespace, quotes, `;|&$<>()*?!~#\` and backticks) is absent.
 */
const SAFE_TOKEN = /^[A-Za-z0-9._:/@+=,%-]+$/;
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** An argument refused before it reaches a command line. */
export class UnsafeArgumentError extends BotError {
  override readonly name = 'UnsafeArgumentError';

  constructor(message: string) {
    super('unsafe-argument', message);
  }
}

/** Why `value` is not a safe single argument, or `undefined` when it is. */
function tokenProblem(value: string): string | undefined {
  if (value === '') return 'it is empty';
  if (value.length > MAX_TOKEN) return `it is longer than ${MAX_TOKEN} characters`;
  if (value.startsWith('-')) return 'it starts with "-" and would be read as a flag';
  if (!SAFE_TOKEN.test(value)) return 'it contains whitespace, a control character or a character a shell treats specially';
  return undefined;
}

/**
 * Whether `value` can be passed as one command-line argument as it is: non-empty, not a flag,
 * only letters, digits and `._:/@+=,%-`.
 */
export function isSafeToken(value: unknown): boolean {
  return typeof value === 'string' && tokenProblem(value) === undefined;
}

/**
 * Throws unless {@link isSafeToken}.
 *
 * @throws {UnsafeArgumentError} naming what is wrong
 */
export function assertSafeArgument(value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new UnsafeArgumentError(`an argument must be text, got a ${typeof value}`);
  const problem = tokenProblem(value);
  if (problem !== undefined) throw new UnsafeArgumentError(`refusing the argument ${JSON.stringify(value.slice(0, 80))}: ${problem}`);
}

function isDnsName(value: string): boolean {
  const name = value.endsWith('.') ? value.slice(0, -1) : value;
  if (name === '' || name.length > MAX_DNS_NAME) return false;
  const labels = name.split('.');
  // An all-numeric last label would make a mistyped IPv4 address (10.0.0.256) pass as a name.
  if (/^[0-9]+$/.test(labels[labels.length - 1] ?? '')) return false;
  return labels.every((label) => DNS_LABEL.test(label));
}

/** Whether `value` is a node address: an IPv4 or IPv6 literal, or a DNS name. */
export function isNodeAddress(value: unknown): boolean {
  return typeof value === 'string' && tokenProblem(value) === undefined && (isIPv4(value) || isIPv6(value) || isDnsName(value));
}

/**
 * Throws unless `value` is a node address ({@link isNodeAddress}).
 *
 * @throws {UnsafeArgumentError} saying which forms are accepted
 */
export function assertNodeAddress(value: unknown): asserts value is string {
  assertSafeArgument(value);
  if (!isNodeAddress(value)) {
    throw new UnsafeArgumentError(`${JSON.stringify(value.slice(0, 80))} is not a node address: use an IPv4 or IPv6 address or a DNS name`);
  }
}
