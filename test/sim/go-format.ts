/**
 * Output helpers that reproduce what Go's standard library prints, because the bot's parsers are
 * tested against real talosctl output and the simulator must not be easier to parse than the tool.
 */

/**
 * Go `text/tabwriter` with minwidth 0, tabwidth 0, padding 3, padchar ' ', flags 0 — the writer
 * every talosctl table uses. Each row is a list of cells; every cell but the last is
 * tab-terminated, so it is padded, and columns are aligned over runs of consecutive rows that
 * share the column (Go's "column blocks"), which is why a short row breaks the alignment below it.
 */
export function tabwrite(rows: readonly (readonly string[])[], padding = 3): string {
  const widths: number[][] = rows.map(() => []);
  const walk = (from: number, to: number, column: number): void => {
    let i = from;
    while (i < to) {
      if (column >= cellCount(rows[i]) - 1) {
        i++;
        continue;
      }
      let j = i;
      let width = 0;
      while (j < to && column < cellCount(rows[j]) - 1) {
        width = Math.max(width, (rows[j]?.[column] ?? '').length + padding);
        j++;
      }
      for (let k = i; k < j; k++) widths[k]![column] = width;
      walk(i, j, column + 1);
      i = j;
    }
  };
  walk(0, rows.length, 0);
  return rows
    .map((row, r) => row.map((cell, c) => (c < row.length - 1 ? cell.padEnd(widths[r]?.[c] ?? 0) : cell)).join(''))
    .map((line) => `${line}\n`)
    .join('');
}

function cellCount(row: readonly string[] | undefined): number {
  return row?.length ?? 0;
}

/** Go `%q` for the plain strings we quote (addresses, paths, names). */
export function goQuote(s: string): string {
  return JSON.stringify(s);
}

/** Go `%q` of a `[]string`: `["a" "b"]`. */
export function goQuoteList(items: readonly string[]): string {
  return `[${items.map(goQuote).join(' ')}]`;
}

/** hashicorp/go-multierror's default formatting, trailing blank line included. */
export function multiError(errors: readonly string[]): string {
  const head = errors.length === 1 ? '1 error occurred:' : `${errors.length} errors occurred:`;
  return `${head}\n${errors.map((e) => `\t* ${e}`).join('\n')}\n\n`;
}

const DURATION_UNITS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

/** Go `time.ParseDuration`, in milliseconds; undefined when the text is not a duration. */
export function parseGoDuration(text: string): number | undefined {
  if (text === '0') return 0;
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2] ?? ''] ?? 0);
    consumed = re.lastIndex;
  }
  return consumed === text.length && consumed > 0 ? total : undefined;
}

/** Go `time.Duration.Round(time.Second).String()`, e.g. `3m21s`, `1h0m5s`, `0s`. */
export function formatGoDuration(ms: number): string {
  let seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds === 0) return '0s';
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  if (hours > 0) return `${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${minutes}m${seconds}s`;
  return `${seconds}s`;
}

/** dustin/go-humanize `Bytes` (SI units), as etcd status prints DB SIZE. */
export function humanizeBytes(bytes: number): string {
  const sizes = ['B', 'kB', 'MB', 'GB', 'TB', 'PB', 'EB'];
  if (bytes < 10) return `${bytes} B`;
  const e = Math.floor(Math.log(bytes) / Math.log(1000));
  const suffix = sizes[e] ?? 'B';
  const val = Math.floor((bytes / 1000 ** e) * 10 + 0.5) / 10;
  return val < 10 ? `${val.toFixed(1)} ${suffix}` : `${val.toFixed(0)} ${suffix}`;
}

/**
 * Go's `%v` of a `time.Time` from `time.Now()`: wall clock in UTC plus the monotonic reading
 * that talosctl prints in the `STARTED` column of `upgrade --wait=false`.
 */
export function goTimeNow(now: Date, processStartedAt: number): string {
  const pad = (n: number, w = 2): string => String(n).padStart(w, '0');
  const nanos = `${pad(now.getUTCMilliseconds(), 3)}${pad(Math.floor(Math.random() * 1e6), 6)}`;
  const wall =
    `${now.getUTCFullYear()}-${pad(now.getUTCMonth() + 1)}-${pad(now.getUTCDate())} ` +
    `${pad(now.getUTCHours())}:${pad(now.getUTCMinutes())}:${pad(now.getUTCSeconds())}.${nanos} +0000 UTC`;
  const mono = ((now.getTime() - processStartedAt) / 1000).toFixed(9);
  return `${wall} m=+${mono}`;
}
