import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createMetrics } from '../../src/metrics/metrics.ts';

// Every metric an alert rule or a dashboard panel asks for is one the bot exports (or one
// of the few other exporters' names below), so a renamed metric cannot leave an alert
// that never fires or a panel that stays empty.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MONITORING = join(ROOT, 'manifests', 'monitoring');

/** Names from other exporters that the rules and the dashboard may use, and why. */
const OTHER_EXPORTERS: Record<string, string> = {
  up: 'Prometheus itself: whether the last scrape of a target succeeded (TalosChatopsDown, replicas scraped)',
};

/** Every name the bot's registry exports; a histogram exports its series as _bucket, _sum and _count. */
async function exportedNames(): Promise<Set<string>> {
  const metrics = await createMetrics().registry.getMetricsAsJSON();
  return new Set(
    metrics.flatMap((m) =>
      String(m.type) === 'histogram' ? ['_bucket', '_sum', '_count'].map((suffix) => `${m.name}${suffix}`) : [m.name],
    ),
  );
}

/**
 * Grafana's own variables are no PromQL: a range variable becomes a duration, so the
 * expression parses; variables inside label matchers are strings and stay as they are.
 */
function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$__(rate_interval|interval|range)\b/g, '5m');
}

/** The metric names of one PromQL expression, by its syntax tree; a syntax error throws. */
function metricNames(expr: string): string[] {
  const tree = parser.parse(expr);
  const names: string[] = [];
  const errors: number[] = [];
  tree.iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === 'VectorSelector') {
        const first = node.node.firstChild;
        if (first?.name === 'Identifier') names.push(expr.slice(first.from, first.to));
      }
    },
  });
  if (errors.length > 0) throw new Error(`not PromQL at ${errors.join(', ')}: ${expr}`);
  return names;
}

interface Panel {
  title?: string;
  type: string;
  targets?: { expr?: string }[];
  panels?: Panel[];
}
interface Dashboard {
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query?: string } }[] };
}

const rule = parse(readFileSync(join(MONITORING, 'prometheus-rule.yaml'), 'utf8')) as {
  spec: { groups: { rules: { alert?: string; expr: string }[] }[] };
};
const dashboard = JSON.parse(readFileSync(join(MONITORING, 'dashboards', 'talos-chatops.json'), 'utf8')) as Dashboard;

const ruleExpressions = rule.spec.groups.flatMap((g) => g.rules).map((r) => ({ where: `rule ${r.alert}`, expr: r.expr }));
const panels = dashboard.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const panelExpressions = panels.flatMap((p) =>
  (p.targets ?? []).map((t) => ({ where: `panel ${p.title}`, expr: withoutGrafanaVariables(t.expr ?? '') })),
);
// A query variable's `label_values(metric, label)` is Grafana's, not PromQL: its metric is checked on its own.
const variableMetrics = dashboard.templating.list.flatMap((v) => {
  const query = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
  const match = /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,/.exec(query);
  return v.type === 'query' ? [{ where: `variable ${v.name}`, expr: match?.[1] ?? query }] : [];
});

describe('metricNames', () => {
  it('finds the metrics of selectors, ranges and offsets, not functions, labels or aggregations', () => {
    const expr =
      'time() - min by (cluster) (a_total{result="failed"} unless a_total offset 15m) or histogram_quantile(0.9, sum by (le) (rate(b_bucket[5m]))) > on (job) group_left up';

    expect(metricNames(expr)).toEqual(['a_total', 'a_total', 'b_bucket', 'up']);
  });

  it('refuses an expression that is not PromQL', () => {
    expect(() => metricNames('sum by (cluster (x)')).toThrow('not PromQL');
  });
});

describe('the metrics the rules and the dashboard use', () => {
  it('finds expressions in every alert, every data panel and the cluster variable', () => {
    expect(ruleExpressions.length).toBeGreaterThanOrEqual(8);
    expect(panelExpressions.length).toBeGreaterThanOrEqual(15);
    expect(panels.filter((p) => p.type !== 'row' && (p.targets ?? []).length === 0).map((p) => p.title)).toEqual([]);
    expect(variableMetrics.map((v) => v.expr)).toEqual(['talos_chatops_waiting_approvals']);
  });

  it('are all exported by the bot, or by the exporters named in the allowlist', async () => {
    const known = new Set([...(await exportedNames()), ...Object.keys(OTHER_EXPORTERS)]);

    const unknown = [...ruleExpressions, ...panelExpressions, ...variableMetrics].flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !known.has(name))
        .map((name) => `${where}: ${name}`),
    );

    expect(unknown).toEqual([]);
  });

  it('name the cluster talos_cluster, in the bot and in every expression, never the common `cluster` label', () => {
    const metrics = createMetrics().registry.getMetricsAsArray() as unknown as { name: string; labelNames: string[] }[];
    const clusterLabelled = metrics.filter((m) => m.labelNames.includes('cluster'));
    const expressions = [...ruleExpressions, ...panelExpressions].filter(({ expr }) => /[{(,\s]cluster\s*(=|!=|=~|!~|[,)])/.test(expr));

    expect(metrics.filter((m) => m.labelNames.includes('talos_cluster')).length).toBeGreaterThanOrEqual(10);
    expect(clusterLabelled.map((m) => m.name)).toEqual([]);
    expect(expressions.map((e) => e.where)).toEqual([]);
    expect(ruleExpressions.filter(({ expr }) => expr.includes('talos_cluster')).length).toBeGreaterThanOrEqual(5);
  });

  it('use every name of the allowlist, so it lists no name nothing needs', () => {
    const used = new Set([...ruleExpressions, ...panelExpressions].flatMap(({ expr }) => metricNames(expr)));

    expect(Object.keys(OTHER_EXPORTERS).filter((name) => !used.has(name))).toEqual([]);
  });

  it('show every topic the dashboard is for: operations, steps, gates per cluster, queues, approvals, locks', () => {
    const used = new Set(panelExpressions.flatMap(({ expr }) => metricNames(expr)));

    const topics = [
      'talos_chatops_operations_total',
      'talos_chatops_step_duration_seconds_bucket',
      'talos_chatops_health_gates_total',
      'talos_chatops_queue_jobs',
      'talos_chatops_waiting_approvals',
      'talos_chatops_approval_requested_timestamp_seconds',
      'talos_chatops_cluster_locked_since_timestamp_seconds',
      'talos_chatops_ready',
    ];
    expect(topics.filter((name) => !used.has(name))).toEqual([]);
  });
});
