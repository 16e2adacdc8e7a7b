/**
 * Every stable error code the bot raises, and whether the same work, tried again unchanged, may
 * succeed. Logs, metrics and tests match on these codes, so a code is never renamed; a new
 * failure gets a new code here, in kebab-case like the rest.
 */
export const ERROR_CODES = {
  /** A setting or the inventory is wrong: nothing changes until an operator fixes it. */
  'config-invalid': { retryable: false },
  /** A job's data does not match its schema: the job fails at once, without retries. */
  'job-data-invalid': { retryable: false },
  /** The process drains between two steps: the operation continues on a running replica. */
  'drain-checkpoint': { retryable: true },
  /** A stored operation of a kind no playbook runs (written by another version, or by hand): its job fails, nothing changes. */
  'kind-unknown': { retryable: false },
  /** A step stopped with a reason for the operator, who decides between Retry and a rollback. */
  'step-failed': { retryable: false },
  'exec-failed': { retryable: false },
  'exec-timeout': { retryable: true },
  'exec-cancelled': { retryable: false },
  'exec-not-found': { retryable: false },
  'exec-invalid-argument': { retryable: false },
  'exec-output-too-large': { retryable: false },
  'talosctl-output-unparseable': { retryable: false },
  'invalid-installer-image': { retryable: false },
  'unsafe-argument': { retryable: false },
  'snapshot-no-healthy-member': { retryable: true },
  'snapshot-incomplete': { retryable: true },
  /** The bot runs on a node of the cluster it would snapshot: the snapshot would not be off-cluster, so it is not taken. */
  'snapshot-on-cluster': { retryable: false },
  'factory-unreachable': { retryable: true },
  'factory-error': { retryable: false },
  'talosctl-missing': { retryable: false },
  'talosctl-version-mismatch': { retryable: false },
  /** A release's talosctl could not be fetched (unreachable, no such asset): trying later may work. */
  'talosctl-download-failed': { retryable: true },
  /** A downloaded talosctl does not match its release's published sha256: it is deleted, never run. */
  'talosctl-checksum-mismatch': { retryable: false },
  /** A cached talosctl no longer has the sha256 it was downloaded with: it is deleted, never run. */
  'talosctl-changed-on-disk': { retryable: false },
  /** The talosctl cache directory is not the bot's own (another owner, not a directory). */
  'talosctl-cache-unsafe': { retryable: false },
  'tofu-plan-unparseable': { retryable: false },
  'tofu-show-failed': { retryable: true },
  /** Redis lost the bot's data (its epoch key): no lock is taken until an operator re-seeds it. */
  'redis-epoch-lost': { retryable: false },
} as const satisfies Record<string, { retryable: boolean }>;

export type ErrorCode = keyof typeof ERROR_CODES;

/** What every error of the bot's own carries, whatever class it needs to be (BullMQ's `UnrecoverableError`, for one). */
export interface CodedError {
  readonly code: ErrorCode;
  /** Whether the same work tried again unchanged may succeed; from {@link ERROR_CODES}. */
  readonly retryable: boolean;
}

/** The base of the bot's errors: a stable `code`, and whether trying again may help. */
export class BotError extends Error implements CodedError {
  readonly code: ErrorCode;
  readonly retryable: boolean;

  constructor(code: ErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'BotError';
    this.code = code;
    this.retryable = ERROR_CODES[code].retryable;
  }
}

/**
 * An error with a `hint` saying what the operator should do next, shown under the error in
 * Slack (see `errorText`).
 */
export class OpsError extends BotError {
  /** What the operator should do next; shown under the error in Slack. */
  readonly hint: string | undefined;

  constructor(code: ErrorCode, message: string, options: { hint?: string; cause?: unknown } = {}) {
    super(code, message, options);
    this.name = 'OpsError';
    this.hint = options.hint;
  }
}

function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_CODES, value);
}

/** The stable code of one of the bot's errors; undefined for any other error (a library's, a bug). */
export function errorCode(error: unknown): ErrorCode | undefined {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return error instanceof Error && isErrorCode(code) ? code : undefined;
}

/** Whether trying the same work again may succeed: as its code says, and true for an error without one (Redis or Slack away). */
export function isRetryable(error: unknown): boolean {
  const code = errorCode(error);
  return code === undefined ? true : ERROR_CODES[code].retryable;
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
