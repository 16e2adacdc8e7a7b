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

/**
 * The one place an error becomes the sentence an operator reads: what happened, then what to do.
 * Plain text, no markup, so it sits with the error class here: an adapter can put it in the data
 * it returns (a plan step's error lines), and a presenter quotes it (src/chat/error-text.ts).
 */
export function errorText(error: unknown): string {
  if (error instanceof OpsError) {
    return error.hint ? `${error.message}. ${capitalize(error.hint)}.` : error.message;
  }
  if (error instanceof Error) return error.message;
  return String(error);
}

function capitalize(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
