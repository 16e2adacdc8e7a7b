/**
 * prometheus-operator's objects the readiness gate reads (prometheus-operator/prometheus-operator
 * v0.93.0): group `monitoring.coreos.com` (pkg/apis/monitoring/register.go), version `v1`
 * (pkg/apis/monitoring/v1/register.go); `prometheusrules` with `spec.groups[].rules[].alert`
 * (prometheusrule_types.go) and `servicemonitors` (servicemonitor_types.go). The API serves them
 * only once the operator's CRDs are installed.
 */
import { meta } from './kube-objects.ts';
import type { SimCluster } from './types.ts';

type Json = Record<string, unknown>;

export function renderPrometheusRules(cluster: SimCluster): Json[] {
  return (cluster.kube.monitoring?.prometheusRules ?? []).map((rule) => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'PrometheusRule',
    metadata: meta(cluster, 'PrometheusRule', rule.name, rule.namespace, cluster.createdAt, { generation: 1 }),
    spec: { groups: [{ name: rule.name, rules: rule.alerts.map((alert) => ({ alert, expr: 'vector(1)', for: '5m' })) }] },
  }));
}

export function renderServiceMonitors(cluster: SimCluster): Json[] {
  return (cluster.kube.monitoring?.serviceMonitors ?? []).map((monitor) => ({
    apiVersion: 'monitoring.coreos.com/v1',
    kind: 'ServiceMonitor',
    metadata: meta(cluster, 'ServiceMonitor', monitor.name, monitor.namespace, cluster.createdAt, { generation: 1 }),
    spec: { selector: { matchLabels: { 'app.kubernetes.io/name': monitor.name } }, endpoints: [{ port: 'metrics' }] },
  }));
}
