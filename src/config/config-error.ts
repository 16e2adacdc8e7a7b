import type { z } from 'zod';
import { BotError } from '../errors.ts';

/** A start-up error that names every bad setting and how to fix it. */
export class ConfigError extends BotError {
  readonly problems: string[];

  constructor(source: string, problems: string[]) {
    super('config-invalid', `${source} is invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Longer path segments (a cluster name gone wrong) are cut to this many characters. */
const MAX_SEGMENT = 60;

/**
 * One segment of an issue's path as an operator can read it: a plain name as it is, anything
 * else quoted with its newlines and non-ASCII characters escaped, so a look-alike or a newline
 * in a key is visible and cannot add a line of its own.
 */
function showSegment(segment: PropertyKey): string {
  const text = String(segment);
  if (/^[A-Za-z0-9_-]+$/.test(text) && text.length <= MAX_SEGMENT) return text;
  const quoted = JSON.stringify(text.slice(0, MAX_SEGMENT)).replace(
    /[^\x20-\x7e]/g,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
  return text.length > MAX_SEGMENT ? `${quoted}…` : quoted;
}

/** Turns zod issues into one readable line each, path first. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], hints: Record<string, string> = {}): string[] {
  return issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    const hint = hints[path] ?? hints[String(issue.path[0] ?? '')];
    const shown = issue.path.map(showSegment).join('.');
    const where = shown === '' ? '' : `${shown}: `;
    // A refused record key (a cluster name) carries the schema's own message one level down;
    // unknown keys are shown like path segments, since zod quotes them as they are.
    const message =
      issue.code === 'invalid_key'
        ? issue.issues.map((i) => i.message).join('; ')
        : issue.code === 'unrecognized_keys'
          ? `Unrecognized key${issue.keys.length === 1 ? '' : 's'}: ${issue.keys.map((k) => (showSegment(k).startsWith('"') ? showSegment(k) : `"${k}"`)).join(', ')}`
          : issue.message;
    return `${where}${message}${hint ? ` (${hint})` : ''}`;
  });
}
