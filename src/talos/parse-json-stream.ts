import { ParseError, requireContent } from './parse-error.ts';

/**
 * Splits text holding several JSON values one after another (talosctl prints
 * `get -o json` as concatenated objects and `version --json` as one object per line, not as an
 * array) and parses each.
 *
 * @param source what is being parsed, for error messages
 * @throws {ParseError} on empty input, text between values, or an unterminated value
 */
export function parseJsonStream(text: string, source: string): unknown[] {
  requireContent(text, source);
  const values: unknown[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i] ?? '';
    if (/\s/.test(ch)) {
      i += 1;
      continue;
    }
    if (ch !== '{' && ch !== '[') {
      throw new ParseError(source, 'expected a JSON object', text.slice(i, i + 80));
    }
    const end = endOfValue(text, i);
    if (end === undefined) {
      throw new ParseError(source, 'a JSON value is not terminated: the output is truncated', text.slice(i, i + 80));
    }
    const chunk = text.slice(i, end);
    try {
      values.push(JSON.parse(chunk));
    } catch (error) {
      throw new ParseError(source, `invalid JSON (${error instanceof Error ? error.message : String(error)})`, chunk);
    }
    i = end;
  }
  return values;
}

/** Index just past the object or array starting at `start`, by bracket depth outside strings. */
function endOfValue(text: string, start: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i += 1) {
    const ch = text[i];
    if (inString) {
      if (ch === '\\') i += 1;
      else if (ch === '"') inString = false;
      continue;
    }
    if (ch === '"') inString = true;
    else if (ch === '{' || ch === '[') depth += 1;
    else if (ch === '}' || ch === ']') {
      depth -= 1;
      if (depth === 0) return i + 1;
    }
  }
  return undefined;
}
