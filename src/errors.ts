/**
 * Errors with a stable `code`, split into those worth retrying (a flaky probe, a busy
 * Slack API) and those that are not (a refused version, an unauthorized click).
 */
export class OpsError extends Error {
  readonly code: string;
  readonly retryable: boolean;
  /** What the operator should do next; shown under the error in Slack. */
  readonly hint: string | undefined;

  constructor(code: string, message: string, options: { retryable?: boolean; hint?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'OpsError';
    this.code = code;
    this.retryable = options.retryable ?? false;
    this.hint = options.hint;
  }
}

export function errorMessage(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}
