import { describe, expect, it } from 'vitest';
import { monitoringGate } from '../../../../src/rules/readiness/monitoring.ts';

const ok = <T>(value: T) => ({ ok: true as const, value });
const RULES = [
  { metadata: { name: 'talos', namespace: 'monitoring' }, spec: { groups: [{ rules: [{ alert: 'EtcdNoLeader' }, { record: 'x' }] }] } },
];
const MONITORS = [{ metadata: { name: 'node-exporter', namespace: 'monitoring' } }];

describe('monitoringGate', () => {
  it('sees the alerts and service monitors, and still asks a person for what it cannot see', () => {
    const gate = monitoringGate(ok(RULES), ok(MONITORS));
    expect(gate.status).toBe('manual');
    expect(gate.summary).toMatch(/^the bot sees 1 alert rule and 1 ServiceMonitor/);
    expect(gate.summary).toContain('Alertmanager routes them to someone');
    expect(gate.evidence).toEqual(['PrometheusRule monitoring/talos: EtcdNoLeader', 'ServiceMonitors: monitoring/node-exporter']);
  });

  it("fails without prometheus-operator's CRDs", () => {
    const gate = monitoringGate(ok(undefined), ok(undefined));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('the API serves no prometheusrules.monitoring.coreos.com');
  });

  it('fails a rule without alerts and no service monitor, naming both', () => {
    const gate = monitoringGate(ok([{ metadata: { name: 'empty' }, spec: { groups: [] } }]), ok([]));
    expect(gate.status).toBe('failed');
    expect(gate.summary).toContain('no PrometheusRule holds an alert');
    expect(gate.summary).toContain('no ServiceMonitor');
    expect(gate.evidence).toContain('PrometheusRule default/empty: <no alerts>');
  });

  it('fails what it could not read', () => {
    expect(monitoringGate({ ok: false, error: 'forbidden' }, ok(MONITORS))).toMatchObject({
      status: 'failed',
      summary: 'could not read the Prometheus rules: forbidden',
    });
  });
});
