// Writes test/file-seconds.json, the seconds each test file took, from a Vitest JSON report:
// `npm run test:durations` runs the suite with that report and then this. The run's order
// (test/support/longest-first.ts) starts the longest files first from it.
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';

interface Report {
  testResults: { name: string; startTime: number; endTime: number }[];
}

const root = fileURLToPath(new URL('..', import.meta.url));
const reportPath = process.argv[2];
if (reportPath === undefined) {
  console.error('usage: node scripts/write-test-durations.ts <vitest-json-report>');
  process.exit(2);
}
const report = JSON.parse(readFileSync(reportPath, 'utf8')) as Report;
const seconds = Object.fromEntries(
  report.testResults
    .map((r) => [relative(root, r.name), Math.round((r.endTime - r.startTime) / 100) / 10] as const)
    .sort(([a], [b]) => a.localeCompare(b)),
);
const target = fileURLToPath(new URL('../test/file-seconds.json', import.meta.url));
writeFileSync(target, `${JSON.stringify(seconds, null, 2)}\n`);
console.log(`wrote ${Object.keys(seconds).length} files' seconds to ${target}`);
