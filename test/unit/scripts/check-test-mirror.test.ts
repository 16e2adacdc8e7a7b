import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checkTestMirror, mirrorsOf, readList, renderList, unmirrored } from '../../../scripts/check-test-mirror.ts';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'check-test-mirror-test-'));
});
afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Writes a fixture tree of empty files at these repository paths. */
function tree(...paths: string[]): void {
  for (const path of paths) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), '');
  }
}

describe('mirrorsOf', () => {
  it.each([
    ['src/talos/observe.ts', ['test/unit/talos/observe.test.ts', 'test/integration/talos/observe.test.ts']],
    ['jobs/engine/walk.ts', ['test/unit/jobs/engine/walk.test.ts', 'test/integration/jobs/engine/walk.test.ts']],
    ['handlers/app.ts', ['test/unit/handlers/app.test.ts', 'test/integration/handlers/app.test.ts']],
  ])('%s', (file, expected) => {
    expect(mirrorsOf(file)).toEqual(expected);
  });
});

describe('checkTestMirror', () => {
  beforeEach(() => {
    tree(
      'src/talos/observe.ts',
      'test/unit/talos/observe.test.ts',
      'jobs/engine/walk.ts',
      'test/integration/jobs/engine/walk.test.ts',
      'handlers/app.ts',
      'src/types.d.ts',
      'scripts/tool.ts',
    );
  });

  it('passes when every file without a mirrored test is listed, ignoring declarations and files outside src/, jobs/, handlers/', () => {
    expect(unmirrored(root)).toEqual(['handlers/app.ts']);
    expect(checkTestMirror(root, ['handlers/app.ts'])).toEqual([]);
  });

  it('fails on a file with no mirrored test that is not listed, naming where its test goes', () => {
    // A test elsewhere does not count: only the mirrored path does.
    tree('test/integration/log/app.test.ts');
    expect(checkTestMirror(root, [])).toEqual([
      'handlers/app.ts has no test at test/unit/handlers/app.test.ts or test/integration/handlers/app.test.ts: add one there',
    ]);
  });

  it('fails on a listed file that now has its test, so the list only shrinks', () => {
    tree('test/unit/handlers/app.test.ts');
    expect(checkTestMirror(root, ['handlers/app.ts'])).toEqual([
      'handlers/app.ts now has its mirrored test: remove it from test/unmirrored.txt',
    ]);
  });

  it('fails on a listed file that no longer exists, and on one listed twice', () => {
    expect(checkTestMirror(root, ['handlers/app.ts', 'handlers/gone.ts', 'handlers/app.ts'])).toEqual([
      'handlers/gone.ts is listed in test/unmirrored.txt but no longer exists: remove it from the list',
      'handlers/app.ts is listed twice in test/unmirrored.txt',
    ]);
  });

  it('reads back the list it writes, comments and blank lines aside', () => {
    expect(readList(`${renderList(['handlers/app.ts', 'src/x.ts'])}\n\n`)).toEqual(['handlers/app.ts', 'src/x.ts']);
  });
});
