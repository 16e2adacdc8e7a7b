import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Static checks of manifests/monitoring/: an optional kustomization of its own whose
// ServiceMonitor finds the bot's Service and whose dashboard ships as the sidecar's ConfigMap.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFESTS = join(ROOT, 'manifests');
const MONITORING = join(MANIFESTS, 'monitoring');

interface Kustomization {
  namespace?: string;
  resources?: string[];
  configMapGenerator?: { name: string; files?: string[]; options?: { labels?: Record<string, string>; disableNameSuffixHash?: boolean } }[];
}
interface ServiceMonitor {
  apiVersion: string;
  kind: string;
  spec: { selector: { matchLabels: Record<string, string> }; endpoints: { port?: string; path?: string; interval?: string; scrapeTimeout?: string }[] };
}
interface Service {
  metadata: { labels: Record<string, string> };
  spec: { ports: { name: string; port: number }[] };
}
interface DashboardPanel {
  id: number;
  type: string;
  title: string;
  datasource?: { uid?: string };
  gridPos: { x: number; y: number; w: number; h: number };
  targets?: { datasource?: { uid?: string } }[];
}

const read = <T>(path: string): T => parse(readFileSync(path, 'utf8')) as T;
const kustomization = read<Kustomization>(join(MONITORING, 'kustomization.yaml'));
const base = read<Kustomization>(join(MANIFESTS, 'base', 'kustomization.yaml'));
const serviceMonitor = read<ServiceMonitor>(join(MONITORING, 'servicemonitor.yaml'));
const service = read<Service>(join(MANIFESTS, 'base', 'service.yaml'));
const dashboardGenerator = kustomization.configMapGenerator?.find((g) => g.name === 'talos-chatops-dashboard');
const dashboardFile = (dashboardGenerator?.files ?? [])[0]?.split('=').at(-1) ?? '';

/** Seconds of a Prometheus duration such as `30s` or `1m`. */
const seconds = (duration: string | undefined): number => {
  const match = /^(\d+)(s|m)$/.exec(duration ?? '');
  return match ? Number(match[1]) * (match[2] === 'm' ? 60 : 1) : Number.NaN;
};

describe('manifests/monitoring/kustomization.yaml', () => {
  it('is its own kustomization in the bot\'s namespace, which the base does not require', () => {
    expect(kustomization.namespace).toBe(base.namespace);
    expect((base.resources ?? []).filter((r) => r.startsWith('monitoring'))).toEqual([]);
  });

  it('lists files that exist and accounts for every file of the folder', () => {
    const listed = [...(kustomization.resources ?? []), dashboardFile];
    const present = readdirSync(MONITORING, { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => join(entry.parentPath, entry.name).slice(MONITORING.length + 1))
      .filter((file) => file !== 'kustomization.yaml');

    expect(listed.filter((file) => !existsSync(join(MONITORING, file)))).toEqual([]);
    expect(present.sort()).toEqual([...listed].sort());
  });

  it('ships the dashboard as a ConfigMap with the label Grafana\'s sidecar looks for, under a stable name', () => {
    expect(dashboardGenerator?.options?.labels).toEqual({ grafana_dashboard: '1' });
    expect(dashboardGenerator?.options?.disableNameSuffixHash).toBe(true);
    expect(dashboardFile).toBe('dashboards/talos-chatops.json');
  });
});

describe('the ServiceMonitor', () => {
  it('selects the bot\'s Service and scrapes /metrics on its port', () => {
    const [endpoint] = serviceMonitor.spec.endpoints;
    const selected = Object.entries(serviceMonitor.spec.selector.matchLabels).filter(([key, value]) => service.metadata.labels[key] !== value);

    expect([serviceMonitor.apiVersion, serviceMonitor.kind]).toEqual(['monitoring.coreos.com/v1', 'ServiceMonitor']);
    expect(selected).toEqual([]);
    expect(service.spec.ports.map((p) => p.name)).toContain(endpoint?.port);
    expect(endpoint?.path).toBe('/metrics');
  });

  it('gives a scrape more time than the bot gives its Redis reads, and less than the interval', () => {
    const [endpoint] = serviceMonitor.spec.endpoints;

    // createMetrics bounds each scrape-time read to 2 s, the readiness probes to 2.5 s.
    expect(seconds(endpoint?.scrapeTimeout)).toBeGreaterThan(2.5);
    expect(seconds(endpoint?.scrapeTimeout)).toBeLessThan(seconds(endpoint?.interval));
  });
});

describe('the Grafana dashboard', () => {
  const dashboard = JSON.parse(readFileSync(join(MONITORING, dashboardFile), 'utf8')) as { uid: string; panels: DashboardPanel[]; templating: { list: { name: string }[] } };
  const dataPanels = dashboard.panels.filter((p) => p.type !== 'row');

  it('has a stable uid, unique panel ids and panels inside the 24-column grid', () => {
    const ids = dashboard.panels.map((p) => p.id);

    expect(dashboard.uid).toBe('talos-chatops');
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.panels.filter((p) => p.gridPos.x + p.gridPos.w > 24).map((p) => p.title)).toEqual([]);
  });

  it('asks the data source the viewer picks, in every panel and query', () => {
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'cluster']);
    const fixed = dataPanels.filter((p) => p.datasource?.uid !== '${datasource}' || (p.targets ?? []).some((t) => t.datasource?.uid !== '${datasource}'));
    expect(fixed.map((p) => p.title)).toEqual([]);
  });
});
