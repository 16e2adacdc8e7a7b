import { ParseError, requireContent, splitLines } from './parse-error.ts';

/**
 * A header cell is upper case and may contain single spaces (`PEER URLS`, `DB SIZE`,
 * `RAFT APPLIED INDEX`): talosctl's tabwriter pads columns with at least three spaces.
 */
const HEADER_CELL = /^[A-Z][A-Z0-9_/.()%-]*(?: [A-Z0-9_/.()%-]+)*$/;

/** A run of text whose words are separated by single spaces: one cell of a padded row. */
const CELL = /\S+(?: \S+)*/g;

interface Cell {
  text: string;
  start: number;
}

/** A talosctl table split into header names and rows of cells, one cell per header. */
export interface TableRows {
  /** Header names as printed; a repeated name (`VERSION VERSION`) appears twice. */
  headers: string[];
  /** One array per row, as long as `headers`; missing trailing cells are empty strings. */
  rows: string[][];
  /** The raw text of each row, for error messages. */
  lines: string[];
}

function cellsOf(line: string): Cell[] {
  return [...line.matchAll(CELL)].map((m) => ({ text: m[0], start: m.index }));
}

/**
 * Cuts `line` at the header's column positions. Returns `undefined` when a cut would split a
 * word, i.e. the row is not aligned with the header (talosctl 1.14 flushes its tabwriter
 * periodically, so later rows may be aligned differently).
 */
function sliceAtColumns(line: string, header: Cell[]): string[] | undefined {
  const cells: string[] = [];
  for (let i = 0; i < header.length; i += 1) {
    const start = header[i]?.start ?? 0;
    const next = header[i + 1];
    if (i > 0 && start < line.length && line[start - 1] !== ' ') return undefined;
    cells.push(line.slice(start, next === undefined ? undefined : next.start).trim());
  }
  return cells;
}

function sameWords(positional: string[], tokens: Cell[]): boolean {
  const nonEmpty = positional.filter((c) => c !== '');
  return nonEmpty.length === tokens.length && nonEmpty.every((c, i) => c === tokens[i]?.text);
}

function splitRow(line: string, header: Cell[]): string[] {
  const tokens = cellsOf(line);
  if (tokens.length === header.length) return tokens.map((t) => t.text);
  const positional = sliceAtColumns(line, header);
  if (tokens.length < header.length) {
    // Empty cells: position tells which ones when the row is aligned, else only trailing cells
    // (ERRORS, LEARNER on old versions) can be empty.
    if (positional !== undefined && sameWords(positional, tokens)) return positional;
    return [...tokens.map((t) => t.text), ...Array<string>(header.length - tokens.length).fill('')];
  }
  if (positional !== undefined) return positional;
  // Unaligned with surplus words: only the last column holds free text (messages, errors), so
  // the surplus belongs to it.
  const lastStart = tokens[header.length - 1]?.start ?? 0;
  return [...tokens.slice(0, header.length - 1).map((t) => t.text), line.slice(lastStart).trim()];
}

/**
 * Parses a talosctl table (tabwriter output, columns padded by at least two spaces) into its
 * header names and rows. A header with no rows is an empty table.
 *
 * @param source what is being parsed, for error messages, e.g. `talosctl etcd status`
 * @throws {ParseError} on empty input or a header that is not upper-case column names
 */
export function parseTableRows(stdout: string, source = 'talosctl table'): TableRows {
  requireContent(stdout, source);
  const lines = splitLines(stdout).filter((l) => l.trim() !== '');
  const [headerLine = '', ...rowLines] = lines;
  const header = cellsOf(headerLine);
  const bad = header.find((c) => !HEADER_CELL.test(c.text));
  if (bad !== undefined) {
    throw new ParseError(source, `expected a header of upper-case column names, found ${JSON.stringify(bad.text)}`, headerLine);
  }
  return {
    headers: header.map((c) => c.text),
    rows: rowLines.map((line) => splitRow(line, header)),
    lines: rowLines,
  };
}

/**
 * Parses a talosctl table into one record per row keyed by header name. Unknown columns are
 * kept. A repeated header name gets a `#2`, `#3` suffix (`talosctl get extensions` prints
 * `VERSION` twice: resource version, then extension version).
 *
 * @throws {ParseError} see {@link parseTableRows}
 */
export function parseTable(stdout: string, source = 'talosctl table'): Record<string, string>[] {
  return toRecords(parseTableRows(stdout, source));
}

/** Turns parsed rows into records keyed by header name, as {@link parseTable} returns them. */
export function toRecords(table: TableRows): Record<string, string>[] {
  const keys = uniqueKeys(table.headers);
  return table.rows.map((cells) => Object.fromEntries(keys.map((key, i) => [key, cells[i] ?? ''])));
}

function uniqueKeys(headers: string[]): string[] {
  const seen = new Map<string, number>();
  return headers.map((name) => {
    const count = (seen.get(name) ?? 0) + 1;
    seen.set(name, count);
    return count === 1 ? name : `${name}#${count}`;
  });
}

/**
 * Checks that a parsed table has the columns a parser relies on.
 *
 * @throws {ParseError} naming the first missing column
 */
export function requireColumns(headers: string[], required: readonly string[], source: string): void {
  const missing = required.filter((name) => !headers.includes(name));
  if (missing.length > 0) {
    throw new ParseError(source, `the header lacks the column(s) ${missing.join(', ')}`, headers.join('  '));
  }
}

/** Parses a non-negative decimal integer cell, refusing blanks and partial numbers. */
export function integerCell(value: string, column: string, line: string, source: string): number {
  if (!/^[0-9]+$/.test(value)) {
    throw new ParseError(source, `${column} should be a whole number, found ${JSON.stringify(value)}`, line);
  }
  return Number(value);
}

/** Parses a Go `%v` boolean cell. */
export function booleanCell(value: string, column: string, line: string, source: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new ParseError(source, `${column} should be true or false, found ${JSON.stringify(value)}`, line);
}
