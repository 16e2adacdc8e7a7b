/**
 * Pads cells so that rows line up in a monospaced thread reply, like `kubectl get` output.
 * Cells are separated by two spaces; trailing padding is trimmed.
 */
export function alignColumns(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    row
      .map((cell, i) => cell.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd(),
  );
}

/** `1 node`, `3 nodes`. */
export function plural(count: number, singular: string, pluralForm = `${singular}s`): string {
  return `${count} ${count === 1 ? singular : pluralForm}`;
}

/**
 * Folds a multi-line tool error into one line for a summary: hashicorp's
 * `1 error occurred:\n\t* 10.5.0.2: …` becomes `10.5.0.2: …`.
 */
export function oneLine(text: string): string {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^[0-9]+ errors? occurred:$/.test(l))
    .map((l) => l.replace(/^\* /, ''))
    .join('; ');
}

/** Keeps the first `max` lines and says how many were left out. */
export function limitLines(lines: string[], max: number): string[] {
  if (lines.length <= max) return lines;
  return [...lines.slice(0, max), `… and ${lines.length - max} more`];
}

/** Joins problems into one summary sentence. */
export function joinProblems(problems: string[]): string {
  return problems.join('; ');
}
