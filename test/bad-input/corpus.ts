/** Readers for the hostile-input corpus under `test/corpus/` (formats in its README). */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const CORPUS_DIR = fileURLToPath(new URL('../corpus/', import.meta.url));

export interface CorpusFile {
  /** File name without its directory. */
  name: string;
  path: string;
  text: string;
}

/** One JSON string per line; blank lines and `#` comments are skipped. */
export function readStringLines(relative: string): string[] {
  const lines = readFileSync(join(CORPUS_DIR, relative), 'utf8').split('\n');
  return lines.flatMap((line, i) => {
    if (line.trim() === '' || line.startsWith('#')) return [];
    const value: unknown = JSON.parse(line);
    if (typeof value !== 'string') throw new Error(`${relative}:${i + 1} is not a JSON string`);
    return [value];
  });
}

/** The files of a corpus directory ending in `ext`, sorted by name. */
export function corpusFiles(relativeDir: string, ext: string): CorpusFile[] {
  const dir = join(CORPUS_DIR, relativeDir);
  return readdirSync(dir)
    .filter((name) => name.endsWith(ext))
    .sort()
    .map((name) => ({ name, path: join(dir, name), text: readFileSync(join(dir, name), 'utf8') }));
}

/** The value of a `# expect: …` comment line of a corpus file. */
export function expectation(file: CorpusFile): string {
  const found = /^# expect: (.+)$/m.exec(file.text)?.[1]?.trim();
  if (found === undefined) throw new Error(`${file.name} has no "# expect: …" line`);
  return found;
}
