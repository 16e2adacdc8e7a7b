/** One error or warning as tofu prints it on stderr. */
export interface TofuDiagnostic {
  severity: 'Error' | 'Warning';
  summary: string;
  /** The first lines of the explanation under the summary. */
  detail: string[];
}

const HEAD = /^(Error|Warning): (.*)$/;
const MAX_DETAIL = 4;

/**
 * Reads tofu's diagnostics, boxed (`╷ │ Error: … ╵`, the default) or plain (`-no-color`), so a
 * failure is reported by its summary instead of the last lines of a box.
 */
export function tofuDiagnostics(stderr: string): TofuDiagnostic[] {
  const found: TofuDiagnostic[] = [];
  let current: TofuDiagnostic | undefined;
  for (const raw of stderr.split('\n')) {
    if (raw.startsWith('╵')) {
      current = undefined;
      continue;
    }
    const line = raw.replace(/^[│|] ?/, '').trimEnd();
    const head = HEAD.exec(line);
    if (head) {
      current = { severity: head[1] as TofuDiagnostic['severity'], summary: head[2]!.trim(), detail: [] };
      found.push(current);
    } else if (current && line.trim() !== '' && current.detail.length < MAX_DETAIL) {
      current.detail.push(line.trim());
    }
  }
  return found;
}

/** The errors of a failed tofu command as lines for a thread reply; its last stderr lines when it printed none. */
export function tofuErrorLines(stderr: string, stdout = ''): string[] {
  const errors = tofuDiagnostics(stderr).filter((d) => d.severity === 'Error');
  if (errors.length > 0) return errors.flatMap((d) => [`Error: ${d.summary}`, ...d.detail.map((l) => `  ${l}`)]);
  return (stderr.trim() || stdout.trim())
    .split('\n')
    .map((l) => l.trimEnd())
    .filter((l) => l.trim() !== '')
    .slice(-5);
}
