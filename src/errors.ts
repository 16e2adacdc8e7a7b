/**
 * An error with a stable `code` for mapping it to what an operator reads, and an optional
 * `hint` saying what to do next.
 */
export class OpsError extends Error {
  readonly code: string;
  /** What the operator should do next; shown under the error in Slack. */
  readonly hint: string | undefined;

  constructor(code: string, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'OpsError';
    this.code = code;
    this.hint = options.hint;
  }
}
