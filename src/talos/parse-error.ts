import { BotError } from '../errors.ts';

/** How much of the offending input a {@link ParseError} message quotes. */
const EXCERPT_CHARS = 120;

/**
 * Thrown when talosctl output does not have the shape its parser expects: empty, truncated or
 * unrecognised text. Callers turn it into a failed check; it must never be read as a pass.
 */
export class ParseError extends BotError {
  override readonly name = 'ParseError';
  /** What was being parsed, e.g. `talosctl etcd status`. */
  readonly source: string;
  /** The offending line (or the start of the input), shortened for display. */
  readonly excerpt: string | undefined;

  /**
   * @param source what was being parsed, e.g. `talosctl etcd status`
   * @param problem what is wrong, phrased for an operator
   * @param excerpt the offending text; quoted (escaped, shortened) in the message
   */
  constructor(source: string, problem: string, excerpt?: string) {
    const shown = excerpt === undefined ? undefined : shorten(excerpt);
    // One line: a problem may quote another error's multi-line message (JSON.parse points at the spot).
    super(
      'talosctl-output-unparseable',
      `cannot parse ${source} output: ${problem.replace(/\s*\n\s*/g, ' ')}${shown === undefined ? '' : ` at ${JSON.stringify(shown)}`}`,
    );
    this.source = source;
    this.excerpt = shown;
  }
}

function shorten(text: string): string {
  return text.length <= EXCERPT_CHARS ? text : `${text.slice(0, EXCERPT_CHARS)}…`;
}

/**
 * Splits tool output into lines without their line endings. Windows line endings are accepted
 * because captured output may pass through tools that add them.
 */
export function splitLines(text: string): string[] {
  return text.replace(/\r\n?/g, '\n').split('\n');
}

/** Throws a {@link ParseError} when `text` holds nothing but whitespace. */
export function requireContent(text: string, source: string): void {
  if (text.trim() === '') throw new ParseError(source, 'the output is empty');
}
