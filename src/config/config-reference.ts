import { z } from 'zod';

/** Who reads a variable that the bot hands on without parsing it. */
export type PassedTo = 'every child process' | 'tofu only' | 'Node.js itself';

/** A variable the bot does not parse but that matters to a deployment. */
export interface PassedVariable {
  /** Exact names, or prefixes followed by `*`. */
  names: readonly string[];
  passedTo: PassedTo;
  meaning: string;
}

/**
 * The variables `loadConfig` hands on to child processes (its `childEnv` and `tofuEnv`), and the one
 * of Node's own that the deployment guide uses. test/unit/config-reference.test.ts holds this list
 * against what `loadConfig` really passes on.
 */
export const PASSED_VARIABLES: readonly PassedVariable[] = [
  { names: ['PATH'], passedTo: 'every child process', meaning: 'where `talosctl`, `tofu` and `git` look for programs' },
  { names: ['HOME'], passedTo: 'every child process', meaning: '`tofu` and `talosctl` keep per-user files under it (`/tmp` in the image)' },
  { names: ['LANG', 'TZ'], passedTo: 'every child process', meaning: 'the locale and time zone of their output' },
  { names: ['SSL_CERT_FILE', 'SSL_CERT_DIR'], passedTo: 'every child process', meaning: 'CA certificates for their TLS connections' },
  {
    names: ['TF_*', 'TOFU_*', 'AWS_*', 'B2_*', 'ARM_*', 'GOOGLE_*', 'PM_*', 'PROXMOX_VE_*'],
    passedTo: 'tofu only',
    meaning:
      'state backend and provider credentials (`TOFU_BIN`, which the bot reads, is not passed). Those whose names say they are secrets (TOKEN, SECRET, PASSWORD, KEY, CREDENTIAL, PRIVATE, CERT, AUTH, and every `TF_TOKEN_*`, `TF_HTTP_*`, `AWS_*`, `ARM_*`…) are blanked in every log line, message and error; a plain `TF_VAR_*` (`TF_VAR_environment=production`) is shown as it is. The bot refuses to start when such a secret equals a cluster name, a version or another inventory value',
  },
  {
    names: ['NODE_EXTRA_CA_CERTS'],
    passedTo: 'Node.js itself',
    meaning:
      'a PEM file of extra CAs to trust, read once at start, e.g. the private CA of a `rediss://` Redis or of a talosctl release mirror (`TALOSCTL_RELEASE_URL`)',
  },
];

/**
 * The configuration reference, as Markdown: one row per variable of `schema` (its description, and
 * its default as the schema declares it), then the variables passed on. Throws when a variable has
 * no description, so an undocumented variable cannot reach the page.
 */
export function renderConfigReference(schema: z.ZodObject, passed: readonly PassedVariable[]): string {
  const rows = Object.entries(schema.shape).map(([name, field]) => {
    const description = field.description?.trim();
    if (!description)
      throw new Error(`${name} has no description: add .describe('its meaning, unit and what unset means') in src/config/env.ts`);
    return `| \`${name}\` | ${defaultOf(field)} | ${cell(description)} |`;
  });
  const passedRows = passed.map((v) => `| ${v.names.map((name) => `\`${name}\``).join(', ')} | ${v.passedTo} | ${cell(v.meaning)} |`);
  return [
    '# Configuration reference',
    '',
    '<!-- Generated from src/config/env.ts by `npm run docs:config`; edit the descriptions there, not this file. -->',
    '',
    'Everything comes from the environment. The bot reads it once, at start, and a bad value stops it',
    'with every bad variable named and how to fix it. A blank value counts as unset. The inventory that',
    '`CLUSTERS_FILE` names is described in [configuring.md](configuring.md); where the manifests set',
    'each variable, in [deploy.md](deploy.md#where-the-manifests-set-each-variable).',
    '',
    '## Variables the bot reads',
    '',
    '| variable | default | meaning |',
    '|---|---|---|',
    ...rows,
    '',
    '## Variables passed on',
    '',
    'The bot does not read these itself. Child processes get only the variables listed here, never the',
    "bot's own secrets.",
    '',
    '| variable | passed to | meaning |',
    '|---|---|---|',
    ...passedRows,
    '',
  ].join('\n');
}

/** The default column: `required`, the declared default, or `—` for an optional variable without one. */
function defaultOf(field: z.core.$ZodType): string {
  if (field instanceof z.ZodDefault) return `\`${String(field.def.defaultValue)}\``;
  if (field instanceof z.ZodOptional) return '—';
  if (field instanceof z.ZodPipe) return defaultOf(field.in);
  return 'required';
}

/** A table cell: one line, no column breaks. */
function cell(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
}
