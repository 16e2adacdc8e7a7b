import { readFileSync } from 'node:fs';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each test file took in a measured run: `npm run test:durations` writes it. */
const DURATIONS_FILE = new URL('../file-seconds.json', import.meta.url);

function measuredSeconds(): Map<string, number> {
  try {
    return new Map(Object.entries(JSON.parse(readFileSync(DURATIONS_FILE, 'utf8')) as Record<string, number>));
  } catch {
    return new Map();
  }
}

/**
 * Starts the longest test files first, so the run does not end with one worker still on a
 * three-minute file while the others wait. Vitest does this itself from its cache of the last run,
 * but a fresh clone (CI) has no cache and falls back to file size, which puts the fault-injection
 * file, the longest, near the end. This order comes from the committed measurements instead; a
 * file not measured yet runs first, as Vitest runs an unknown file first.
 */
export class LongestFirst extends BaseSequencer {
  readonly #seconds = measuredSeconds();

  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const byProject = await super.sort(files);
    const seconds = (spec: TestSpecification): number =>
      this.#seconds.get(spec.moduleId.slice(spec.project.config.root.length + 1)) ?? Number.POSITIVE_INFINITY;
    // Stable: within a project, measured files longest first; projects keep Vitest's order.
    return byProject
      .map((spec, index) => ({ spec, index }))
      .sort((a, b) => {
        if (a.spec.project.name !== b.spec.project.name) return a.index - b.index;
        return seconds(b.spec) - seconds(a.spec) || a.index - b.index;
      })
      .map(({ spec }) => spec);
  }
}
