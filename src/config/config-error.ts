import type { z } from 'zod';

/** A start-up error that names every bad setting and how to fix it. */
export class ConfigError extends Error {
  readonly code = 'config-invalid';
  readonly problems: string[];

  constructor(source: string, problems: string[]) {
    super(`${source} is invalid:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** Turns zod issues into one readable line each, path first. */
export function describeIssues(issues: readonly z.core.$ZodIssue[], hints: Record<string, string> = {}): string[] {
  return issues.map((issue) => {
    const path = issue.path.map(String).join('.');
    const hint = hints[path] ?? hints[String(issue.path[0] ?? '')];
    const where = path === '' ? '' : `${path}: `;
    return `${where}${issue.message}${hint ? ` (${hint})` : ''}`;
  });
}
