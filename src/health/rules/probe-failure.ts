import { sanitizeErrorText } from '../../exec/sanitize-error-text.ts';
import type { CheckResult } from '../check-result.ts';

/** Summary and evidence lines are cut here so a tool's runaway output cannot flood the thread. */
const MAX_LINE = 300;
const MAX_EVIDENCE_LINES = 10;

function cut(line: string): string {
  return line.length <= MAX_LINE ? line : `${line.slice(0, MAX_LINE)}…`;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message;
  if (typeof error === 'string') return error;
  try {
    return JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

function field(error: unknown, key: string): unknown {
  return typeof error === 'object' && error !== null ? (error as Record<string, unknown>)[key] : undefined;
}

/**
 * Whether the error is a timeout: the process runner's `exec-timeout`, an `AbortSignal.timeout`
 * (`TimeoutError`), a Node `ETIMEDOUT`, or execa's `timedOut`.
 */
function isTimeout(error: unknown, message: string): boolean {
  const code = field(error, 'code');
  return (
    code === 'exec-timeout' ||
    code === 'ETIMEDOUT' ||
    field(error, 'name') === 'TimeoutError' ||
    field(error, 'timedOut') === true ||
    /\btimed out\b/i.test(message)
  );
}

/** The tail of a failed command's stderr, when the error carries one (the process runner's `ExecError.result`). */
function stderrTail(error: unknown): string[] {
  const stderr = field(field(error, 'result'), 'stderr');
  if (typeof stderr !== 'string') return [];
  return sanitizeErrorText(stderr)
    .split('\n')
    .filter((l) => l.trim() !== '')
    .slice(-5);
}

/**
 * The check result for a probe that threw or timed out: always `failed`, never a pass. A timeout
 * reads "timed out after Ns" (N from the message when it names one, else from `durationMs`).
 *
 * @param durationMs how long the probe ran, in milliseconds
 */
export function probeFailed(id: string, title: string, error: unknown, durationMs: number): CheckResult {
  const message = sanitizeErrorText(messageOf(error)) || 'no error message';
  const lines = message.split('\n').filter((l) => l.trim() !== '');
  const first = lines[0] ?? message;
  let summary: string;
  if (isTimeout(error, message)) {
    const stated = /\btimed out after [0-9.]+\s*(?:ms|s|m|h)\b/i.exec(message)?.[0];
    summary = `${title}: ${stated ?? `timed out after ${Math.max(1, Math.round(durationMs / 1000))}s`}`;
  } else {
    summary = `${title}: probe failed: ${cut(first)}`;
  }
  const tail = stderrTail(error).filter((l) => !lines.includes(l));
  const evidence = [...lines, ...tail].slice(0, MAX_EVIDENCE_LINES).map(cut);
  return { id, title, status: 'failed', summary: cut(summary), evidence, durationMs };
}
