/** The prometheus-operator objects a simulated cluster starts with (see monitoring.ts). */
import type { MonitoringState } from './types.ts';

/** What a cluster run as the runbook says starts with: its node and Talos alerts, and the monitors that scrape them. */
export function seedMonitoring(): MonitoringState {
  return {
    prometheusRules: [{ namespace: 'monitoring', name: 'talos-nodes', alerts: ['TalosNodeNotReady', 'EtcdNoLeader'] }],
    serviceMonitors: [{ namespace: 'monitoring', name: 'node-exporter' }],
  };
}
