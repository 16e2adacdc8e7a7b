import { z } from 'zod';

/** One row of the Talos ⇄ Kubernetes support table (src/talos/compatibility.ts holds the built-in rows). */
export interface TalosMinorSupport {
  /** Talos minor, e.g. `1.11`. */
  talos: string;
  /** Lowest supported Kubernetes minor, e.g. `1.29`. */
  kubernetesMin: string;
  /** Highest supported Kubernetes minor, e.g. `1.34`. */
  kubernetesMax: string;
  /** Lowest running Talos version that may upgrade to this minor. */
  upgradeFromMin: string;
}

/**
 * The inventory's `talosSupport`: rows of the Talos ⇄ Kubernetes support table an operator adds
 * (a Talos minor released after the bot's image) or corrects, each read off Sidero's support
 * matrix of that minor. Values are quoted strings: YAML reads an unquoted `1.10` as the number 1.1.
 */
function quoted(what: string, pattern: RegExp, example: string) {
  const message = `must be ${what} in quotes, such as "${example}" (unquoted, YAML reads 1.10 as the number 1.1)`;
  return z.string({ error: message }).regex(pattern, message);
}

const Minor = (what: string, example: string) => quoted(what, /^[1-9][0-9]*\.(0|[1-9][0-9]*)$/, example);

const minorNumbers = (minor: string): [number, number] => minor.split('.').map(Number) as [number, number];
const compareMinors = (a: string, b: string): number => minorNumbers(a)[0] - minorNumbers(b)[0] || minorNumbers(a)[1] - minorNumbers(b)[1];

export const TalosSupportRow = z
  .strictObject({
    talos: Minor('a Talos minor', '1.15').describe('The Talos minor this row is about, e.g. "1.15".'),
    kubernetesMin: Minor('a Kubernetes minor', '1.33').describe('The lowest Kubernetes minor it supports, from its support matrix.'),
    kubernetesMax: Minor('a Kubernetes minor', '1.38').describe('The highest Kubernetes minor it supports, from its support matrix.'),
    upgradeFromMin: quoted('a Talos version', /^[1-9][0-9]*\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$/, '1.13.0').describe(
      'The lowest running Talos version that may upgrade to this minor, e.g. "1.13.0".',
    ),
  })
  .refine((row) => compareMinors(row.kubernetesMin, row.kubernetesMax) <= 0, {
    message: 'kubernetesMin is above kubernetesMax: the lowest supported Kubernetes minor comes first',
    path: ['kubernetesMin'],
  })
  .refine((row) => compareMinors(row.upgradeFromMin.split('.').slice(0, 2).join('.'), row.talos) < 0, {
    message: 'upgradeFromMin must be a version of an earlier Talos minor than the row’s own',
    path: ['upgradeFromMin'],
  }) satisfies z.ZodType<TalosMinorSupport>;

export const TalosSupport = z
  .array(TalosSupportRow)
  .superRefine((rows, ctx) => {
    const seen = new Set<string>();
    rows.forEach((row, index) => {
      if (seen.has(row.talos))
        ctx.addIssue({ code: 'custom', path: [index, 'talos'], message: `Talos ${row.talos} is listed twice: keep one row per minor` });
      seen.add(row.talos);
    });
  })
  .describe(
    "Rows of the Talos ⇄ Kubernetes support table, over the bot's built-in one: a row for a Talos minor the bot does not know adds it (no new image needed), a row for one it knows replaces that row. Read each from the minor's support matrix (https://docs.siderolabs.com/talos/v1.15/getting-started/support-matrix for 1.15).",
  );
