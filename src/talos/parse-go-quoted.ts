/**
 * Go `%q` strings, which talosctl uses for node addresses (`"10.0.0.5": phase: drain`), paths
 * (`etcd snapshot saved to "db.snapshot"`) and string lists (`["172.20.0.2" "172.20.0.3"]`).
 */

const SIMPLE_ESCAPES: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  '"': '"',
  "'": "'",
};

const HEX_ESCAPE_DIGITS: Readonly<Record<string, number>> = { x: 2, u: 4, U: 8 };

/** A Go-quoted string read from `text`, and the index just past its closing quote. */
export interface GoQuoted {
  value: string;
  end: number;
}

/**
 * Reads the Go-quoted string that starts at `text[start]` (which must be `"`).
 * Returns `undefined` when there is no complete, well-formed quoted string there.
 */
export function readGoQuoted(text: string, start = 0): GoQuoted | undefined {
  if (text[start] !== '"') return undefined;
  let value = '';
  let i = start + 1;
  while (i < text.length) {
    const ch = text[i] ?? '';
    if (ch === '"') return { value, end: i + 1 };
    if (ch === '\n') return undefined;
    if (ch !== '\\') {
      value += ch;
      i += 1;
      continue;
    }
    const kind = text[i + 1] ?? '';
    const simple = SIMPLE_ESCAPES[kind];
    if (simple !== undefined) {
      value += simple;
      i += 2;
      continue;
    }
    const digits = HEX_ESCAPE_DIGITS[kind];
    if (digits !== undefined) {
      const hex = text.slice(i + 2, i + 2 + digits);
      if (!new RegExp(`^[0-9a-fA-F]{${digits}}$`).test(hex)) return undefined;
      const code = Number.parseInt(hex, 16);
      if (code > 0x10ffff) return undefined;
      value += String.fromCodePoint(code);
      i += 2 + digits;
      continue;
    }
    const octal = text.slice(i + 1, i + 4);
    if (/^[0-7]{3}$/.test(octal)) {
      value += String.fromCodePoint(Number.parseInt(octal, 8));
      i += 4;
      continue;
    }
    return undefined;
  }
  return undefined;
}

/** Unquotes a whole Go-quoted string such as `"10.0.0.5"`; `undefined` if it is not one. */
export function unquoteGo(quoted: string): string | undefined {
  const read = readGoQuoted(quoted);
  return read !== undefined && read.end === quoted.length ? read.value : undefined;
}

/**
 * Parses a Go `%q`-formatted string slice, `["a" "b"]` (or `[]`).
 * Returns `undefined` when the text is not such a list.
 */
export function parseGoQuotedList(text: string): string[] | undefined {
  const trimmed = text.trim();
  if (!trimmed.startsWith('[') || !trimmed.endsWith(']')) return undefined;
  const inner = trimmed.slice(1, -1);
  const items: string[] = [];
  let i = 0;
  while (i < inner.length) {
    if (inner[i] === ' ') {
      i += 1;
      continue;
    }
    const read = readGoQuoted(inner, i);
    if (read === undefined) return undefined;
    items.push(read.value);
    i = read.end;
  }
  return items;
}
