import { z } from 'zod';
import type { CustomObject } from '../../kube/kube-api.ts';
import type { Observed, ReadinessGate } from '../gate-result.ts';

/**
 * prometheus-operator's objects (prometheus-operator/prometheus-operator v0.93.0,
 * pkg/apis/monitoring/v1): a PrometheusRule's alerts are `spec.groups[].rules[].alert`
 * (prometheusrule_types.go); a ServiceMonitor tells Prometheus what to scrape.
 */
const Named = z.object({ metadata: z.object({ name: z.string(), namespace: z.string().optional() }) });
const Rule = Named.extend({
  spec: z
    .object({ groups: z.array(z.object({ rules: z.array(z.object({ alert: z.string().optional() })).optional() })).optional() })
    .optional(),
});

function label(object: z.infer<typeof Named>): string {
  return `${object.metadata.namespace ?? 'default'}/${object.metadata.name}`;
}

/**
 * Monitoring is present when the API serves prometheus-operator's CRDs with at least one alert
 * rule and one ServiceMonitor. The bot cannot see whether Prometheus loads them, whether the alerts
 * are Talos-compatible and linked from the alert runbook index, or whether Alertmanager routes them
 * to someone: with everything present, a person still signs that off.
 */
export function monitoringGate(rules: Observed<CustomObject[] | undefined>, monitors: Observed<CustomObject[] | undefined>): ReadinessGate {
  const id = 'monitoring';
  const title = 'Talos-compatible monitoring and alerts';
  if (!rules.ok)
    return { id, title, status: 'failed', summary: `could not read the Prometheus rules: ${rules.error}`, evidence: [rules.error] };
  if (!monitors.ok)
    return { id, title, status: 'failed', summary: `could not read the service monitors: ${monitors.error}`, evidence: [monitors.error] };
  if (rules.value === undefined || monitors.value === undefined)
    return {
      id,
      title,
      status: 'failed',
      summary:
        'the API serves no prometheusrules.monitoring.coreos.com or servicemonitors.monitoring.coreos.com: install prometheus-operator (or kube-prometheus-stack) with the cluster’s alert rules',
      evidence: [],
    };
  const evidence: string[] = [];
  let alerts = 0;
  for (const object of rules.value) {
    const rule = Rule.safeParse(object);
    if (!rule.success) continue;
    const names = (rule.data.spec?.groups ?? []).flatMap((g) => (g.rules ?? []).flatMap((r) => (r.alert === undefined ? [] : [r.alert])));
    alerts += names.length;
    evidence.push(`PrometheusRule ${label(rule.data)}: ${names.length > 0 ? names.join(', ') : '<no alerts>'}`);
  }
  const monitorLabels = monitors.value.flatMap((o) => {
    const m = Named.safeParse(o);
    return m.success ? [label(m.data)] : [];
  });
  evidence.push(`ServiceMonitors: ${monitorLabels.length > 0 ? monitorLabels.join(', ') : '<none>'}`);
  const problems: string[] = [];
  if (alerts === 0)
    problems.push('no PrometheusRule holds an alert: add the cluster’s alert rules as a PrometheusRule (monitoring.coreos.com/v1)');
  if (monitorLabels.length === 0)
    problems.push('no ServiceMonitor: nothing tells Prometheus to scrape the cluster; add one per metrics endpoint');
  if (problems.length > 0) return { id, title, status: 'failed', summary: problems.join('; '), evidence };
  return {
    id,
    title,
    status: 'manual',
    summary: `the bot sees ${alerts} alert rule${alerts === 1 ? '' : 's'} and ${monitorLabels.length} ServiceMonitor${monitorLabels.length === 1 ? '' : 's'} (evidence below): confirm by hand what it cannot see, that Prometheus loads them, that the alerts are Talos-compatible and linked from the alert runbook index, and that Alertmanager routes them to someone`,
    evidence,
  };
}
