import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Tests sit at the path of the code they test, so a reader finds them and a file with none shows.
 * The test trees mirror src/ from inside it and jobs/ and handlers/ from the top: `src/talos/observe.ts`
 * is tested at `test/unit/talos/observe.test.ts` (or `test/integration/...`), `jobs/engine/walk.ts`
 * at `test/unit/jobs/engine/walk.test.ts` or `test/integration/jobs/engine/walk.test.ts`.
 */
export const PRODUCTION_ROOTS = ['src', 'jobs', 'handlers'] as const;
export const TEST_ROOTS = ['test/unit', 'test/integration'] as const;
/** The production files known to have no mirrored test, one a line: the list only shrinks. */
export const LIST = 'test/unmirrored.txt';

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? walk(path) : [path];
  });
}

/** Every production TypeScript file under `root`, as a repository path with `/`. */
export function productionFiles(root: string): string[] {
  return PRODUCTION_ROOTS.flatMap((top) => walk(join(root, top)))
    .map((path) => relative(root, path).split(sep).join('/'))
    .filter((path) => path.endsWith('.ts') && !path.endsWith('.d.ts') && !path.endsWith('.test.ts'))
    .sort();
}

/** The test paths that mirror a production file: `src/` is dropped (the test tree's root is src/'s), `jobs/` and `handlers/` kept. */
export function mirrorsOf(file: string): string[] {
  const inTree = file.startsWith('src/') ? file.slice('src/'.length) : file;
  const stem = inTree.replace(/\.ts$/, '');
  return TEST_ROOTS.map((top) => `${top}/${stem}.test.ts`);
}

/** The production files under `root` with no test at a mirrored path. */
export function unmirrored(root: string): string[] {
  return productionFiles(root).filter((file) => !mirrorsOf(file).some((test) => existsSync(join(root, test))));
}

/** The list file's entries: one path a line; blank lines and `#` comments are ignored. */
export function readList(text: string): string[] {
  return text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
}

export function renderList(files: readonly string[]): string {
  return `# Production files with no test at their mirrored path (test/unit/<path>.test.ts or test/integration/<path>.test.ts;\n# src/ files mirror without the src/ prefix). This list only shrinks: scripts/check-test-mirror.ts fails on a\n# file missing a test that is not listed, and on a listed file that now has its test or no longer exists.\n# Regenerate with \`node scripts/check-test-mirror.ts --write\`.\n${files.map((f) => `${f}\n`).join('')}`;
}

/** Everything wrong between the tree under `root` and the list's `listed` files, one line each; empty when they agree. */
export function checkTestMirror(root: string, listed: readonly string[]): string[] {
  const missing = new Set(unmirrored(root));
  const existing = new Set(productionFiles(root));
  const onList = new Set(listed);
  const problems: string[] = [];
  for (const file of missing) {
    if (!onList.has(file)) problems.push(`${file} has no test at ${mirrorsOf(file).join(' or ')}: add one there`);
  }
  for (const file of onList) {
    if (!existing.has(file)) problems.push(`${file} is listed in ${LIST} but no longer exists: remove it from the list`);
    else if (!missing.has(file)) problems.push(`${file} now has its mirrored test: remove it from ${LIST}`);
  }
  const seen = new Set<string>();
  for (const file of listed) {
    if (seen.has(file)) problems.push(`${file} is listed twice in ${LIST}`);
    seen.add(file);
  }
  return problems;
}

if (import.meta.main) {
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const listPath = join(root, LIST);
  if (process.argv.includes('--write')) writeFileSync(listPath, renderList(unmirrored(root)));
  const listed = existsSync(listPath) ? readList(readFileSync(listPath, 'utf8')) : [];
  const problems = checkTestMirror(root, listed);
  for (const problem of problems) console.error(problem);
  if (problems.length > 0) {
    console.error(`${problems.length} test-mirror problem(s); regenerate the list only by adding tests or removing files`);
    process.exitCode = 1;
  }
}
