import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';

// The alert rules through Prometheus' own promtool: `check rules` parses every
// expression and annotation template, `test rules` runs test/monitoring/rules.promtool.yaml
// against them. scripts/ensure-tools.sh installs promtool (Debian's `prometheus` package) before npm test;
// without it these tests fail, they never skip.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = join(ROOT, 'manifests', 'monitoring', 'prometheus-rule.yaml');
const CASES = join(ROOT, 'test', 'monitoring', 'rules.promtool.yaml');

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}
interface RuleFile {
  groups: { name: string; rules: Rule[] }[];
}
interface PrometheusRule {
  apiVersion: string;
  kind: string;
  spec: RuleFile;
}
interface AlertCase {
  eval_time: string;
  alertname: string;
  exp_alerts: { exp_labels?: Record<string, string> }[];
}
interface CaseFile {
  rule_files: string[];
  tests: { name: string; alert_rule_test?: AlertCase[] }[];
}

interface Run {
  code: number;
  output: string;
}

function promtool(args: string[], cwd: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    execFile('promtool', args, { cwd, timeout: 60_000 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        reject(new Error('promtool is not on the PATH: install it with `apt-get install prometheus` (scripts/ensure-tools.sh test does)'));
        return;
      }
      resolve({ code: error ? Number(error.code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

const resource = parse(await readFile(RULES, 'utf8')) as PrometheusRule;
const cases = parse(await readFile(CASES, 'utf8')) as CaseFile;
const alerts = resource.spec.groups.flatMap((g) => g.rules).filter((r): r is Rule & { alert: string } => r.alert !== undefined);
const alertCases = cases.tests.flatMap((t) => t.alert_rule_test ?? []);

/**
 * The rule file `test rules` runs on: the resource's groups without their annotations.
 * promtool compares annotations as rendered text, so the cases would have to repeat every
 * description word for word; `check rules` still parses each template of the real file.
 */
function withoutAnnotations(file: RuleFile): RuleFile {
  return { groups: file.groups.map((g) => ({ ...g, rules: g.rules.map((rule) => ({ ...rule, annotations: undefined })) })) };
}

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'talos-chatops-rules-'));
  await writeFile(join(dir, 'full-rules.yaml'), stringify(resource.spec));
  await writeFile(join(dir, 'rules.yaml'), stringify(withoutAnnotations(resource.spec)));
  await writeFile(join(dir, 'cases.yaml'), await readFile(CASES, 'utf8'));
});

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('manifests/monitoring/prometheus-rule.yaml', () => {
  it('is a PrometheusRule whose expressions and templates promtool accepts', async () => {
    expect([resource.apiVersion, resource.kind]).toEqual(['monitoring.coreos.com/v1', 'PrometheusRule']);

    const run = await promtool(['check', 'rules', 'full-rules.yaml'], dir);

    expect(run).toEqual({ code: 0, output: expect.stringContaining(`SUCCESS: ${alerts.length} rules found`) as string });
  });

  it('gives every alert a severity, a summary and a description', () => {
    const problems = alerts.flatMap((a) => [
      ...(['warning', 'critical'].includes(a.labels?.severity ?? '') ? [] : [`${a.alert}: severity`]),
      ...((a.annotations?.summary ?? '').length > 10 ? [] : [`${a.alert}: summary`]),
      // A description tells what happened and what to do: more than a sentence.
      ...((a.annotations?.description ?? '').length > 200 ? [] : [`${a.alert}: description`]),
    ]);
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    expect(problems).toEqual([]);
  });

  it("links every alert to its own page under docs/alerts/, and every page names its alert's three parts", async () => {
    const pattern = /^https:\/\/github\.com\/[\w.-]+\/talos-chatops\/blob\/main\/(docs\/alerts\/(\w+)\.md)$/;
    const problems: string[] = [];
    for (const a of alerts) {
      const match = pattern.exec(a.annotations?.runbook_url ?? '');
      if (match === null || match[2] !== a.alert) {
        problems.push(`${a.alert}: runbook_url ${a.annotations?.runbook_url ?? '(none)'}`);
        continue;
      }
      const page = join(ROOT, match[1]!);
      if (!existsSync(page)) {
        problems.push(`${a.alert}: no page ${match[1]}`);
        continue;
      }
      const text = await readFile(page, 'utf8');
      for (const heading of [`# ${a.alert}`, '## What it means', '## How to check', '## Safe actions'])
        if (!text.includes(heading)) problems.push(`${a.alert}: ${match[1]} lacks "${heading}"`);
    }
    expect(alerts.length).toBeGreaterThanOrEqual(10);
    expect(problems).toEqual([]);
  });

  it('passes its promtool cases', async () => {
    const run = await promtool(['test', 'rules', 'cases.yaml'], dir);

    expect(run.output).toContain('SUCCESS');
    expect(run.code).toBe(0);
  });

  it('has cases for every alert, firing and not firing', () => {
    const uncovered = alerts.flatMap((a) => {
      const mine = alertCases.filter((c) => c.alertname === a.alert);
      return [
        ...(mine.some((c) => c.exp_alerts.length > 0) ? [] : [`${a.alert}: no firing case`]),
        ...(mine.some((c) => c.exp_alerts.length === 0) ? [] : [`${a.alert}: no case where it stays silent`]),
      ];
    });
    expect(cases.rule_files).toEqual(['rules.yaml']);
    expect(uncovered).toEqual([]);
  });

  it('uses in its annotations only labels its firing alerts carry', () => {
    const missing = alerts.flatMap((a) => {
      const used = [
        ...Object.values(a.annotations ?? {})
          .join('\n')
          .matchAll(/\$labels\.([a-zA-Z_]\w*)/g),
      ].map((m) => m[1]!);
      const fired = alertCases.filter((c) => c.alertname === a.alert).flatMap((c) => c.exp_alerts.map((e) => e.exp_labels ?? {}));
      return [...new Set(used)]
        .filter((label) => fired.some((labels) => !(label in labels)))
        .map((label) => `${a.alert}: $labels.${label}`);
    });
    expect(missing).toEqual([]);
  });

  it('fails a case whose expectation is wrong, so a passing run means the alerts behave', async () => {
    // The first firing case, expected silent instead.
    const broken = structuredClone(cases);
    const firing = broken.tests.flatMap((t) => t.alert_rule_test ?? []).find((c) => c.exp_alerts.length > 0)!;
    firing.exp_alerts = [];
    await writeFile(join(dir, 'broken-cases.yaml'), stringify(broken));

    const run = await promtool(['test', 'rules', 'broken-cases.yaml'], dir);

    expect(run.code).not.toBe(0);
    expect(run.output).toContain(firing.alertname);
  });
});
