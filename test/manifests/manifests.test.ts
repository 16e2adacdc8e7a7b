import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/env.ts';
import { parseInventory } from '../../src/config/inventory.ts';
import { HELP_TEXT } from '../../handlers/parse-command.ts';
import { findRenderer, render, renderFluxSite, renderFluxText, substitute, variablesIn, type FluxKustomizationSpec } from './kustomize.ts';

// Static checks of the deployment artefacts. Every overlay is rendered with
// kustomize, as Flux renders it, and each render is checked against the runtime
// contract, against itself (selectors, references) and against the Secret templates
// the operator fills in.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFESTS = join(ROOT, 'manifests');
const NAMESPACE = 'talos-chatops';

type Labels = Record<string, string>;

interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Labels; annotations?: Record<string, string> };
  spec?: unknown;
  data?: Record<string, string>;
  stringData?: Record<string, string>;
}

interface Probe {
  httpGet?: { path?: string; port?: number | string };
  exec?: { command?: string[] };
  tcpSocket?: { port?: number | string };
}

interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  readOnlyRootFilesystem?: boolean;
  allowPrivilegeEscalation?: boolean;
  privileged?: boolean;
  capabilities?: { drop?: string[]; add?: string[] };
  seccompProfile?: { type?: string };
}

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string; apiVersion?: string };
  };
}

interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string; optional?: boolean } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  resources?: { requests?: Record<string, unknown>; limits?: Record<string, unknown> };
  securityContext?: SecurityContext;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}

interface Volume {
  name: string;
  configMap?: { name: string };
  secret?: { secretName: string };
  emptyDir?: { medium?: string; sizeLimit?: string };
  persistentVolumeClaim?: { claimName: string };
}

interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  volumes?: Volume[];
  securityContext?: SecurityContext;
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  hostPID?: boolean;
}

interface WorkloadSpec {
  replicas?: number;
  strategy?: { type?: string; rollingUpdate?: { maxUnavailable?: number; maxSurge?: number } };
  selector: { matchLabels: Labels };
  template: { metadata: { labels: Labels }; spec: PodSpec };
  volumeClaimTemplates?: { metadata: { name: string; annotations?: Record<string, string> }; spec: { accessModes?: string[]; storageClassName?: string } }[];
}

interface PolicyPeer {
  podSelector?: { matchLabels?: Labels };
  namespaceSelector?: { matchLabels?: Labels };
  ipBlock?: { cidr: string; except?: string[] };
}

interface PolicyRule {
  to?: PolicyPeer[];
  from?: PolicyPeer[];
  ports?: { protocol?: string; port?: number | string }[];
}

interface NetworkPolicySpec {
  podSelector: { matchLabels?: Labels };
  policyTypes?: string[];
  ingress?: PolicyRule[];
  egress?: PolicyRule[];
}

/** Every YAML file under manifests/, as a path relative to it. */
function yamlFiles(): string[] {
  return readdirSync(MANIFESTS, { recursive: true, encoding: 'utf8' })
    .filter((f) => /\.ya?ml$/.test(f))
    .sort();
}

/** Every non-empty document of a file; any YAML error or warning (a duplicate key too) throws. */
function readDocuments(file: string): unknown[] {
  const documents = Array.from(parseAllDocuments(readFileSync(join(MANIFESTS, file), 'utf8')));
  const problems = documents.flatMap((doc) => [...doc.errors, ...doc.warnings]).map((p) => `${file}: ${p.message}`);
  if (problems.length > 0) throw new Error(problems.join('\n'));
  return documents.map((doc) => doc.toJS() as unknown).filter((d) => d !== null && d !== undefined);
}

function readOne<T>(file: string): T {
  const documents = readDocuments(file);
  if (documents.length !== 1) throw new Error(`${file}: expected one YAML document, found ${documents.length}`);
  return documents[0] as T;
}

const secretTemplates = readDocuments('secret.example.yaml') as K8sObject[];
const templateKeys = (name: string): Record<string, string> => secretTemplates.find((s) => s.metadata?.name === name)?.stringData ?? {};
const INVENTORY_EXAMPLE = join(MANIFESTS, 'base', 'clusters.example.yaml');
const inventory = parseInventory(readFileSync(INVENTORY_EXAMPLE, 'utf8'), 'manifests/base/clusters.example.yaml');
const fluxObjects = readDocuments('flux/talos-chatops.yaml') as (K8sObject & { spec: FluxKustomizationSpec & Record<string, unknown> })[];
/** The Flux Kustomization that deploys the bot from the published manifests. */
const fluxApp = fluxObjects.find((o) => o.kind === 'Kustomization' && o.metadata?.name === 'talos-chatops')!;

function matches(selector: Labels | undefined, labels: Labels): boolean {
  return Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);
}

function ipv4ToInt(ip: string): number {
  return ip.split('.').reduce((acc, octet) => acc * 256 + Number(octet), 0);
}

function cidrRange(cidr: string): [number, number] {
  const [ip, bits] = cidr.split('/') as [string, string];
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(ipv4ToInt(ip) / size) * size;
  return [start, start + size - 1];
}

/** Whether `inner` (an address or a CIDR) lies inside `outer`. */
function within(inner: string, outer: string): boolean {
  const [a, b] = cidrRange(inner.includes('/') ? inner : `${inner}/32`);
  const [c, d] = cidrRange(outer);
  return a >= c && b <= d;
}

/** The mount holding `path`, the deepest one when mounts nest. */
function mountFor(container: Container, path: string): { name: string; mountPath: string; readOnly?: boolean } | undefined {
  return (container.volumeMounts ?? [])
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath.replace(/\/$/, '')}/`))
    .sort((x, y) => y.mountPath.length - x.mountPath.length)[0];
}

function volumeFor(pod: PodSpec, name: string): Volume | undefined {
  return (pod.volumes ?? []).find((v) => v.name === name);
}

function portsOf(rule: PolicyRule): string[] {
  return (rule.ports ?? []).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`);
}

/** A rendered overlay, with the objects the checks below look at. */
function analyse(objects: K8sObject[]) {
  const ofKind = (kind: string): K8sObject[] => objects.filter((o) => o.kind === kind);
  const named = (kind: string, name: string): K8sObject => {
    const object = ofKind(kind).find((o) => o.metadata?.name === name);
    if (object === undefined) throw new Error(`no ${kind} named ${name} in the render`);
    return object;
  };
  const workloads = [...ofKind('Deployment'), ...ofKind('StatefulSet')].map((o) => ({ kind: o.kind!, name: o.metadata!.name!, spec: o.spec as WorkloadSpec }));
  const bot = named('Deployment', 'talos-chatops').spec as WorkloadSpec;
  const botPod = bot.template.spec;
  const botContainer = botPod.containers.find((c) => c.name === 'bot')!;
  const redisObject = ofKind('StatefulSet').find((o) => o.metadata?.name === 'redis');
  const redis = redisObject?.spec as WorkloadSpec | undefined;
  const configMap = (name: string): Record<string, string> | undefined => ofKind('ConfigMap').find((c) => c.metadata?.name === name)?.data;
  const botConfigMaps = (botContainer.envFrom ?? []).flatMap((e) => (e.configMapRef ? [e.configMapRef.name] : []));
  const settings: Record<string, string> = Object.assign({}, ...botConfigMaps.map((name) => configMap(name) ?? {}));
  const botEnv = Object.fromEntries((botContainer.env ?? []).map((e) => [e.name, e]));
  /** The environment the bot starts with once the operator filled in the Secret templates: env wins over envFrom. */
  const environment = (): Record<string, string> => {
    const fromSecrets = (botContainer.envFrom ?? []).flatMap((e) => (e.secretRef ? [templateKeys(e.secretRef.name)] : []));
    const direct = (botContainer.env ?? []).map((e) => [
      e.name,
      e.value ??
        (e.valueFrom?.secretKeyRef
          ? templateKeys(e.valueFrom.secretKeyRef.name)[e.valueFrom.secretKeyRef.key]
          : e.valueFrom?.fieldRef
            ? DOWNWARD[e.valueFrom.fieldRef.fieldPath]
            : undefined),
    ]);
    return Object.assign({}, settings, ...fromSecrets, Object.fromEntries(direct.filter(([, v]) => v !== undefined))) as Record<string, string>;
  };
  const policies = ofKind('NetworkPolicy').map((o) => ({ name: o.metadata!.name!, spec: o.spec as NetworkPolicySpec }));
  return { objects, ofKind, named, workloads, bot, botPod, botContainer, redis, configMap, settings, botEnv, environment, policies };
}

type Render = ReturnType<typeof analyse>;

/**
 * What the kubelet puts into a downward-API variable, for a pod on a management cluster's worker:
 * `spec.nodeName` the pod's Node, `status.hostIP` that Node's first address, `status.podIP` the pod's
 * (kubernetes/kubernetes `pkg/kubelet/kubelet_pods.go`, `podFieldSelectorRuntimeValue`, commit 001a80e9).
 */
const DOWNWARD: Record<string, string> = { 'spec.nodeName': 'talos-mgmt-w-1', 'status.hostIP': '10.0.50.21', 'status.podIP': '10.244.1.7' };

/** Each way to deploy, and the Slack mode and Redis it must come out with. */
const OVERLAYS = [
  // The default: one replica, no ReadWriteMany storage needed.
  { name: 'socket-mode', mode: 'socket', inClusterRedis: true, replicas: 1 },
  { name: 'http-mode', mode: 'http', inClusterRedis: true, replicas: 1 },
  { name: 'external-redis', mode: 'socket', inClusterRedis: false, replicas: 1 },
  { name: 'two-replicas', mode: 'socket', inClusterRedis: true, replicas: 2 },
  // The Flux example: the fleet's site, then socket-mode from the published artifact with the
  // Flux component and the example's variables substituted.
  { name: 'flux site', mode: 'socket', inClusterRedis: true, replicas: 1 },
] as const;
type Overlay = (typeof OVERLAYS)[number];

const renders = new Map<string, Render>();
function rendered(overlay: Overlay): Render {
  let result = renders.get(overlay.name);
  if (result === undefined) {
    const objects = overlay.name === 'flux site' ? renderFluxSite(MANIFESTS, INVENTORY_EXAMPLE, fluxApp.spec) : render(join(MANIFESTS, 'overlays', overlay.name));
    result = analyse(objects as K8sObject[]);
    renders.set(overlay.name, result);
  }
  return result;
}

/** Environment variables the bot reads: every name in the schema of src/config/env.ts, and tofu's prefixes. */
const envSource = readFileSync(join(ROOT, 'src', 'config', 'env.ts'), 'utf8');
const SCHEMA_NAMES = new Set([...envSource.matchAll(/^\s{4}([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]!));
const TOFU_PREFIX = /^(TF_|TOFU_|AWS_|B2_|ARM_|GOOGLE_|PM_|PROXMOX_VE_)/;

describe('the renderer', () => {
  it('is kustomize v5, as Flux builds with (CI installs it; without it these tests fail, never skip)', () => {
    expect(findRenderer().version).toMatch(/^v([5-9]|\d{2,})\./);
  });
});

describe('manifests/ as YAML', () => {
  it('parses every file without errors or warnings and finds a document in each', () => {
    const documentsPerFile = Object.fromEntries(yamlFiles().map((file) => [file, readDocuments(file).length > 0]));
    expect(Object.keys(documentsPerFile).length).toBeGreaterThan(10);
    expect(Object.entries(documentsPerFile).filter(([, found]) => !found)).toEqual([]);
  });

  it('accounts for every file: used by a kustomization, or the Slack app, the Secret templates or the Flux objects', () => {
    interface Kustomization { resources?: string[]; components?: string[]; configMapGenerator?: { files?: string[] }[] }
    const kustomizations = yamlFiles().filter((f) => posix.basename(f) === 'kustomization.yaml');
    const used = new Set(kustomizations.flatMap((file) => {
      const k = readOne<Kustomization>(file);
      const dir = posix.dirname(file);
      const entries = [...(k.resources ?? []), ...(k.configMapGenerator ?? []).flatMap((g) => (g.files ?? []).map((f) => f.split('=').at(-1)!))];
      return entries.map((entry) => posix.normalize(posix.join(dir, entry)));
    }));
    const known = new Set(['slack-app.yaml', 'secret.example.yaml', 'flux/talos-chatops.yaml']);
    const files = readdirSync(MANIFESTS, { recursive: true, encoding: 'utf8' }).filter((f) => !statSync(join(MANIFESTS, f)).isDirectory());
    const strays = files.filter((f) => !known.has(f) && !used.has(f) && posix.basename(f) !== 'kustomization.yaml' && !f.startsWith('flux/site/'));
    expect(files.length).toBeGreaterThan(15);
    expect(strays).toEqual([]);
  });

  it('has an overlay directory for every overlay checked here, and checks every overlay directory', () => {
    const directories = readdirSync(join(MANIFESTS, 'overlays')).sort();
    expect(directories).toEqual(OVERLAYS.filter((o) => o.name !== 'flux site').map((o) => o.name).sort());
  });
});

describe.each(OVERLAYS)('the $name render', (overlay) => {
  it('puts every namespaced object into the talos-chatops namespace, which it creates', () => {
    const r = rendered(overlay);
    expect(r.ofKind('Namespace').map((n) => n.metadata?.name)).toEqual([NAMESPACE]);
    const elsewhere = r.objects.filter((o) => o.kind !== 'Namespace' && o.metadata?.namespace !== NAMESPACE).map((o) => `${o.kind}/${o.metadata?.name}`);
    expect(elsewhere).toEqual([]);
  });

  it('labels every object as part of talos-chatops, and never holds a Secret (the operator creates them)', () => {
    const r = rendered(overlay);
    expect(r.objects.filter((o) => o.metadata?.labels?.['app.kubernetes.io/part-of'] !== 'talos-chatops').map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([]);
    expect(r.ofKind('Secret')).toEqual([]);
  });

  it('uses only fields that exist on each kind (a misspelled or misplaced field is lost on the way through the API types)', () => {
    const r = rendered(overlay);
    const normalise = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;
    const key = (o: K8sObject): string => `${o.kind}/${o.metadata?.name}`;
    expect(r.objects.filter((o) => !/(^|\/)v1$/.test(o.apiVersion ?? '')).map(key)).toEqual([]);
    const roundTripped = r.objects.map((o) => [key(o), normalise(ObjectSerializer.serialize(ObjectSerializer.deserialize(o, `V1${o.kind}`, ''), `V1${o.kind}`, ''))]);
    expect(Object.fromEntries(roundTripped)).toEqual(Object.fromEntries(r.objects.map((o) => [key(o), normalise(o)])));
  });

  it('selects its own pods: every workload\'s selector its template, every Service, budget and policy a workload', () => {
    const r = rendered(overlay);
    const templates = r.workloads.map((w) => w.spec.template.metadata.labels);
    const selecting = (selector: Labels | undefined): number => templates.filter((labels) => matches(selector, labels)).length;
    const problems = [
      ...r.workloads.filter((w) => !matches(w.spec.selector.matchLabels, w.spec.template.metadata.labels)).map((w) => `${w.name}: selector`),
      ...r.workloads.filter((w) => r.workloads.filter((other) => matches(w.spec.selector.matchLabels, other.spec.template.metadata.labels)).length !== 1).map((w) => `${w.name}: selector overlaps`),
      ...r.ofKind('Service').filter((s) => selecting((s.spec as { selector?: Labels }).selector) !== 1).map((s) => `Service/${s.metadata?.name}`),
      ...r.ofKind('PodDisruptionBudget').filter((b) => selecting((b.spec as { selector: { matchLabels: Labels } }).selector.matchLabels) !== 1).map((b) => `PDB/${b.metadata?.name}`),
      ...r.policies.filter((p) => Object.keys(p.spec.podSelector.matchLabels ?? {}).length > 0 && selecting(p.spec.podSelector.matchLabels) !== 1).map((p) => `NetworkPolicy/${p.name}`),
    ];
    expect(r.workloads.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('finds the workloads it should: the bot, and Redis only where it runs in the cluster', () => {
    const r = rendered(overlay);
    const expected = ['Deployment/talos-chatops', ...(overlay.inClusterRedis ? ['StatefulSet/redis'] : [])];
    expect(r.workloads.map((w) => `${w.kind}/${w.name}`).sort()).toEqual(expected);
  });

  it('runs the bot with ready on /readyz, alive on /healthz and started on /healthz, on its named http port 3000', () => {
    const { botContainer, botEnv } = rendered(overlay);
    expect(botContainer.ports).toContainEqual(expect.objectContaining({ name: 'http', containerPort: 3000 }));
    expect(botContainer.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(botContainer.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(botContainer.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(botEnv.HTTP_PORT?.value).toBe('3000');
  });

  it('starts the bot in the Slack mode of the overlay, with the configuration the manifests and the filled-in Secrets give it', () => {
    const r = rendered(overlay);
    const config = loadConfig(r.environment());
    expect(config.slack.appToken === undefined ? 'http' : 'socket').toBe(overlay.mode);
    expect(config.clustersFile).toBe('/etc/talos-chatops/clusters.yaml');
    expect(config.redisUrl).toMatch(/^rediss?:\/\/[^@/]*:[^@/]+@/);
    expect(config.timeouts.stepMs / 1000).toBeLessThan(r.botPod.terminationGracePeriodSeconds!);
  });

  it('tells the bot where it runs, from the downward API: its Node, its host IP and its pod IP', () => {
    const r = rendered(overlay);
    expect(r.botEnv.BOT_NODE_NAME?.valueFrom?.fieldRef?.fieldPath).toBe('spec.nodeName');
    expect(r.botEnv.BOT_HOST_IP?.valueFrom?.fieldRef?.fieldPath).toBe('status.hostIP');
    expect(r.botEnv.BOT_POD_IP?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');
    expect(loadConfig(r.environment()).placement).toEqual({ nodeName: 'talos-mgmt-w-1', hostIp: '10.0.50.21', podIp: '10.244.1.7' });
  });

  it('sets only environment variables the bot reads', () => {
    const r = rendered(overlay);
    const names = Object.keys(r.environment());
    expect(names.length).toBeGreaterThan(10);
    expect(names.filter((name) => !SCHEMA_NAMES.has(name) && !TOFU_PREFIX.test(name))).toEqual([]);
  });

  it('keeps credentials out of the ConfigMaps and the pod spec: REDIS_URL and tokens come from Secrets', () => {
    const r = rendered(overlay);
    const inConfigMaps = r.ofKind('ConfigMap').flatMap((c) => Object.keys(c.data ?? {}).filter((k) => /TOKEN|SECRET|PASSWORD|REDIS_URL/.test(k)));
    expect(inConfigMaps).toEqual([]);
    expect(r.botEnv.REDIS_URL?.valueFrom?.secretKeyRef).toEqual({ name: 'talos-chatops-redis', key: 'REDIS_URL' });
    const literal = r.workloads.flatMap((w) => w.spec.template.spec.containers.flatMap((c) => (c.env ?? []).filter((e) => /TOKEN|SECRET|PASSWORD|URL$/.test(e.name) && e.value !== undefined && e.value !== '')));
    expect(literal.filter((e) => e.name !== 'IMAGE_FACTORY_URL')).toEqual([]);
  });

  it('refers only to Secrets and keys the templates define, and to ConfigMaps, keys and claims the render holds', () => {
    const r = rendered(overlay);
    const configMaps = new Set(r.ofKind('ConfigMap').map((c) => c.metadata!.name!));
    const claims = new Set(r.ofKind('PersistentVolumeClaim').map((c) => c.metadata!.name!));
    const secrets = new Set(secretTemplates.map((s) => s.metadata!.name!));
    const missing = r.workloads.flatMap(({ name, spec }) => {
      const pod = spec.template.spec;
      const containers = [...pod.containers, ...(pod.initContainers ?? [])];
      return [
        ...containers.flatMap((c) => (c.envFrom ?? []).flatMap((e) => [
          ...(e.configMapRef && !configMaps.has(e.configMapRef.name) ? [`${name}: ConfigMap ${e.configMapRef.name}`] : []),
          ...(e.secretRef && !secrets.has(e.secretRef.name) ? [`${name}: Secret ${e.secretRef.name}`] : []),
        ])),
        ...containers.flatMap((c) => (c.env ?? []).flatMap((e) => {
          const ref = e.valueFrom?.secretKeyRef;
          return ref && !(ref.key in templateKeys(ref.name)) ? [`${name}: Secret ${ref.name} key ${ref.key}`] : [];
        })),
        ...(pod.volumes ?? []).flatMap((v) => [
          ...(v.configMap && !configMaps.has(v.configMap.name) ? [`${name}: ConfigMap ${v.configMap.name}`] : []),
          ...(v.secret && !secrets.has(v.secret.secretName) ? [`${name}: Secret ${v.secret.secretName}`] : []),
          ...(v.persistentVolumeClaim && !claims.has(v.persistentVolumeClaim.claimName) ? [`${name}: claim ${v.persistentVolumeClaim.claimName}`] : []),
        ]),
      ];
    });
    expect(missing).toEqual([]);
    const slack = (r.botContainer.envFrom ?? []).find((e) => e.secretRef?.name === 'talos-chatops');
    expect(slack?.secretRef?.optional ?? false).toBe(false);
    expect(r.ofKind('ServiceAccount').map((s) => s.metadata?.name)).toContain(r.botPod.serviceAccountName);
  });

  it('finds the inventory where the ConfigMap is mounted, and keeps each cluster\'s directories on writable persistent volumes', () => {
    const { botContainer, botPod, botEnv, configMap } = rendered(overlay);
    const clustersFile = botEnv.CLUSTERS_FILE!.value!;
    const mount = mountFor(botContainer, clustersFile)!;
    expect(mount.readOnly).toBe(true);
    const source = volumeFor(botPod, mount.name)?.configMap?.name ?? '';
    // The Flux site's inventory has no hash suffix: the bot rereads it, never restarted for it.
    expect(source).toMatch(overlay.name === 'flux site' ? /^talos-chatops-clusters$/ : /^talos-chatops-inventory-[a-z0-9]+$/);
    const text = configMap(source)?.[posix.relative(mount.mountPath, clustersFile)];
    expect(parseInventory(text ?? '', 'inventory').clusters.length).toBeGreaterThan(0);
    const paths = inventory.clusters.flatMap((c) => [c.terraformDir, c.snapshotDir]);
    const problems = paths.flatMap((path) => {
      const m = mountFor(botContainer, path);
      if (m === undefined) return [`${path} is on no volume`];
      if (m.readOnly === true) return [`${path} is read-only`];
      return volumeFor(botPod, m.name)?.persistentVolumeClaim === undefined ? [`${path} is not on a persistent volume`] : [];
    });
    expect(problems).toEqual([]);
  });

  it('runs the replicas of the overlay on volumes they can share: ReadWriteMany for two, ReadWriteOnce and Recreate for one', () => {
    const { bot, botPod, ofKind } = rendered(overlay);
    expect(bot.replicas).toBe(overlay.replicas);
    const claimed = new Set((botPod.volumes ?? []).flatMap((v) => (v.persistentVolumeClaim ? [v.persistentVolumeClaim.claimName] : [])));
    const modes = ofKind('PersistentVolumeClaim').filter((c) => claimed.has(c.metadata!.name!)).map((c) => (c.spec as { accessModes: string[] }).accessModes);
    expect(modes.length).toBeGreaterThan(0);
    // Two replicas share ReadWriteMany volumes, so the rollout keeps both up; one replica on
    // ReadWriteOnce volumes is recreated, since a surge pod on another node could never attach them.
    const expected = overlay.replicas > 1
      ? { modes: ['ReadWriteMany'], strategy: { type: 'RollingUpdate', maxUnavailable: 0 } }
      : { modes: ['ReadWriteOnce'], strategy: { type: 'Recreate', maxUnavailable: undefined } };
    expect(modes).toEqual(modes.map(() => expected.modes));
    expect({ type: bot.strategy?.type, maxUnavailable: bot.strategy?.rollingUpdate?.maxUnavailable }).toEqual(expected.strategy);
  });

  it('gives a stopping replica longer than the longest step to finish it', () => {
    const { settings, botPod } = rendered(overlay);
    const stepSeconds = Number(settings.STEP_TIMEOUT_SECONDS ?? '1800');
    expect(stepSeconds).toBeGreaterThanOrEqual(1800);
    expect(botPod.terminationGracePeriodSeconds).toBeGreaterThan(stepSeconds);
    const graceSeconds = Number(settings.SHUTDOWN_GRACE_SECONDS ?? '60');
    expect(graceSeconds).toBeGreaterThan(stepSeconds);
    expect(graceSeconds).toBeLessThan(botPod.terminationGracePeriodSeconds!);
  });

  it('keeps credentials in memory and every other write on a volume, since the root filesystem is read-only', () => {
    const { botContainer, botPod, botEnv } = rendered(overlay);
    const credentialsDir = botEnv.CREDENTIALS_DIR!.value!;
    const credentials = mountFor(botContainer, credentialsDir);
    expect(credentials?.mountPath).toBe(credentialsDir);
    expect(volumeFor(botPod, credentials!.name)?.emptyDir?.medium).toBe('Memory');
    const tmp = mountFor(botContainer, '/tmp/some-file');
    expect(tmp?.mountPath).toBe('/tmp');
    expect(volumeFor(botPod, tmp!.name)?.emptyDir).toBeDefined();
  });

  it('keeps reviewed plans on a claim of their own that every replica mounts, apart from the credentials', () => {
    const { botContainer, botPod, botEnv } = rendered(overlay);
    const planDir = botEnv.PLAN_DIR!.value!;
    const plans = mountFor(botContainer, `${planDir}/op-1/tfplan`);
    expect(plans?.mountPath).toBe(planDir);
    expect(plans?.name).not.toBe(mountFor(botContainer, botEnv.CREDENTIALS_DIR!.value!)?.name);
    expect(volumeFor(botPod, plans!.name)?.persistentVolumeClaim?.claimName).toBe('talos-chatops-plans');
  });

  it('exports the maintenance records onto a persistent volume, never into the container or a memory volume', () => {
    const { botContainer, botPod, botEnv } = rendered(overlay);
    const recordDir = botEnv.RECORD_EXPORT_DIR?.value;
    expect(recordDir).toMatch(/^\//);
    const records = mountFor(botContainer, `${recordDir}/op-1.json`);
    expect(volumeFor(botPod, records!.name)?.persistentVolumeClaim?.claimName).toBe('talos-chatops-snapshots');
  });

  it('never lets the bot talk to the cluster it runs in', () => {
    const r = rendered(overlay);
    expect(r.botPod.automountServiceAccountToken).toBe(false);
    expect(['Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding'].flatMap((kind) => r.ofKind(kind))).toEqual([]);
  });

  it('rewrites the bot image to a pinned registry reference', () => {
    const image = rendered(overlay).botContainer.image ?? '';
    expect(image).toMatch(/^[a-z0-9.-]+(:\d+)?\/[a-z0-9/._-]+(:[\w.-]+|@sha256:[0-9a-f]{64})$/);
    expect(image).not.toMatch(/:latest$/);
  });

  it('meets the restricted Pod Security Standard and then some, in every container', () => {
    const { workloads } = rendered(overlay);
    const effective = workloads.flatMap(({ name, spec }) => {
      const pod = spec.template.spec;
      return [...pod.containers, ...(pod.initContainers ?? [])].map((container) => {
        const sc = container.securityContext ?? {};
        return [
          `${name}/${container.name}`,
          {
            automountServiceAccountToken: pod.automountServiceAccountToken,
            hostNamespaces: (pod.hostNetwork ?? false) || (pod.hostPID ?? false),
            runAsNonRoot: sc.runAsNonRoot ?? pod.securityContext?.runAsNonRoot,
            nonRootUser: (sc.runAsUser ?? pod.securityContext?.runAsUser ?? 0) > 0,
            readOnlyRootFilesystem: sc.readOnlyRootFilesystem,
            allowPrivilegeEscalation: sc.allowPrivilegeEscalation,
            privileged: sc.privileged ?? false,
            dropsAll: sc.capabilities?.drop?.includes('ALL') ?? false,
            adds: sc.capabilities?.add ?? [],
            seccomp: sc.seccompProfile?.type ?? pod.securityContext?.seccompProfile?.type,
          },
        ] as const;
      });
    });
    const hardened = {
      automountServiceAccountToken: false,
      hostNamespaces: false,
      runAsNonRoot: true,
      nonRootUser: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      privileged: false,
      dropsAll: true,
      adds: [],
      seccomp: 'RuntimeDefault',
    };
    expect(Object.fromEntries(effective)).toEqual(Object.fromEntries(effective.map(([where]) => [where, hardened])));
  });

  it('sets CPU and memory requests and limits on every container, and pins every image', () => {
    const { workloads } = rendered(overlay);
    const containers = workloads.flatMap(({ name, spec }) => spec.template.spec.containers.map((c) => [`${name}/${c.name}`, c] as const));
    const resources = containers.map(([where, c]) => [where, { requests: Object.keys(c.resources?.requests ?? {}).sort(), limits: Object.keys(c.resources?.limits ?? {}).sort() }]);
    const complete = { requests: ['cpu', 'memory'], limits: ['cpu', 'memory'] };
    expect(Object.fromEntries(resources)).toEqual(Object.fromEntries(resources.map(([where]) => [where, complete])));
    // The bot's tag is the operator's release; everything else is pinned by digest.
    const unpinned = containers.filter(([where, c]) => where !== 'talos-chatops/bot' && !/@sha256:[0-9a-f]{64}$/.test(c.image ?? '')).map(([where]) => where);
    expect(unpinned).toEqual([]);
  });

  it('mounts only volumes it declares, and declares only volumes it mounts', () => {
    const { workloads } = rendered(overlay);
    const problems = workloads.flatMap(({ name, spec }) => {
      const pod = spec.template.spec;
      const declared = [...(pod.volumes ?? []).map((v) => v.name), ...(spec.volumeClaimTemplates ?? []).map((t) => t.metadata.name)];
      const mounted = [...pod.containers, ...(pod.initContainers ?? [])].flatMap((c) => (c.volumeMounts ?? []).map((m) => m.name));
      return [
        ...declared.filter((v, i) => declared.indexOf(v) !== i).map((v) => `${name} declares ${v} twice`),
        ...mounted.filter((m) => !declared.includes(m)).map((m) => `${name} mounts undeclared ${m}`),
        ...declared.filter((v) => !mounted.includes(v)).map((v) => `${name} never mounts ${v}`),
      ];
    });
    expect(problems).toEqual([]);
  });

  it('has a disruption budget per workload that never blocks a drain at full strength', () => {
    const r = rendered(overlay);
    const budgets = r.ofKind('PodDisruptionBudget').map((o) => ({ name: o.metadata!.name!, spec: o.spec as { minAvailable?: number; maxUnavailable?: number; selector: { matchLabels: Labels } } }));
    expect(budgets.map((b) => b.name).sort()).toEqual(overlay.inClusterRedis ? ['redis', 'talos-chatops'] : ['talos-chatops']);
    const verdicts = budgets.map((budget) => {
      const selected = r.workloads.filter((w) => matches(budget.spec.selector.matchLabels, w.spec.template.metadata.labels));
      const replicas = selected[0]?.spec.replicas ?? 1;
      const allowed = budget.spec.maxUnavailable ?? replicas - (budget.spec.minAvailable ?? replicas);
      return [budget.name, { workloads: selected.length, allowsADisruption: Number.isInteger(allowed) && allowed >= 1 }];
    });
    expect(Object.fromEntries(verdicts)).toEqual(Object.fromEntries(budgets.map((b) => [b.name, { workloads: 1, allowsADisruption: true }])));
  });

  it('is reachable through a Service on the http port, and in HTTP mode from Slack only at /slack/events', () => {
    const r = rendered(overlay);
    const service = r.named('Service', 'talos-chatops').spec as { selector: Labels; ports: { port: number; targetPort: string }[] };
    expect(matches(service.selector, r.bot.template.metadata.labels)).toBe(true);
    expect(service.ports).toContainEqual(expect.objectContaining({ port: 3000, targetPort: 'http' }));
    const paths = r.ofKind('Ingress').flatMap((i) => (i.spec as { rules: { http: { paths: { path: string; pathType: string; backend: { service: { name: string; port: { name: string } } } }[] } }[] }).rules.flatMap((rule) => rule.http.paths));
    const expected = overlay.mode === 'http' ? [{ path: '/slack/events', pathType: 'Exact', backend: { service: { name: 'talos-chatops', port: { name: 'http' } } } }] : [];
    expect(paths).toEqual(expected);
  });

  describe('NetworkPolicies', () => {
    const covering = (r: Render, labels: Labels) => r.policies.filter((p) => matches(p.spec.podSelector.matchLabels, labels));
    const botRules = (r: Render, direction: 'egress' | 'ingress') => covering(r, r.bot.template.metadata.labels).flatMap((p) => p.spec[direction] ?? []);

    it('isolate the bot pods in both directions and let in only the bot\'s HTTP port', () => {
      const r = rendered(overlay);
      expect(new Set(covering(r, r.bot.template.metadata.labels).flatMap((p) => p.spec.policyTypes ?? []))).toEqual(new Set(['Ingress', 'Egress']));
      const ingress = botRules(r, 'ingress');
      expect(ingress.length).toBeGreaterThan(0);
      for (const rule of ingress) expect(portsOf(rule)).toEqual(['TCP/3000']);
      for (const rule of botRules(r, 'egress')) expect(portsOf(rule).length).toBeGreaterThan(0);
    });

    it('let the bot reach its Redis and cluster DNS', () => {
      const r = rendered(overlay);
      const egress = botRules(r, 'egress');
      const toRedis = overlay.inClusterRedis
        ? egress.filter((rule) => (rule.to ?? []).some((peer) => peer.podSelector && matches(peer.podSelector.matchLabels, r.redis!.template.metadata.labels)))
        : egress.filter((rule) => (rule.to ?? []).some((peer) => peer.ipBlock !== undefined) && portsOf(rule).some((p) => p === 'TCP/6379' || p === 'TCP/6380'));
      expect(toRedis.flatMap(portsOf)).toContain('TCP/6379');
      const toDns = egress.filter((rule) => (rule.to ?? []).some((peer) => peer.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns'));
      expect(toDns.flatMap(portsOf)).toEqual(expect.arrayContaining(['UDP/53', 'TCP/53']));
    });

    it('let the bot reach HTTPS on public addresses only', () => {
      const https = botRules(rendered(overlay), 'egress').filter((rule) => portsOf(rule).includes('TCP/443'));
      expect(https).toHaveLength(1);
      expect(portsOf(https[0]!)).toEqual(['TCP/443']);
      const blocks = (https[0]!.to ?? []).map((peer) => peer.ipBlock);
      expect(blocks).toHaveLength(1);
      expect(blocks[0]?.cidr).toBe('0.0.0.0/0');
      expect(blocks[0]?.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']));
    });

    it('let the bot reach talos apid and the Kubernetes API of every node in the example inventory', () => {
      const egress = botRules(rendered(overlay), 'egress');
      for (const port of ['TCP/50000', 'TCP/6443']) {
        const cidrs = egress.filter((rule) => portsOf(rule).includes(port)).flatMap((rule) => (rule.to ?? []).flatMap((peer) => (peer.ipBlock ? [peer.ipBlock.cidr] : [])));
        for (const cluster of inventory.clusters) {
          for (const address of [...cluster.controlPlanes, ...cluster.workers]) {
            expect(isIPv4(address)).toBe(true);
            expect(cidrs.some((cidr) => within(address, cidr)), `${port} to ${cluster.name} ${address}`).toBe(true);
          }
        }
      }
    });

    it('let only the bot into Redis, and Redis out to nowhere', () => {
      const r = rendered(overlay);
      // Without a Redis in the namespace no policy may admit anyone to one.
      const redisLabels = r.redis?.template.metadata.labels ?? { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/component': 'queue' };
      const redisPolicies = covering(r, redisLabels).filter((p) => Object.keys(p.spec.podSelector.matchLabels ?? {}).length > 0);
      expect(redisPolicies.length > 0).toBe(overlay.inClusterRedis);
      const ingress = redisPolicies.flatMap((p) => p.spec.ingress ?? []);
      for (const rule of ingress) {
        expect(portsOf(rule)).toEqual(['TCP/6379']);
        expect(rule.from?.length).toBeGreaterThan(0);
        for (const peer of rule.from ?? []) {
          expect(peer.ipBlock).toBeUndefined();
          expect(peer.namespaceSelector).toBeUndefined();
          expect(peer.podSelector?.matchLabels).toEqual(r.bot.selector.matchLabels);
        }
      }
      expect(new Set(redisPolicies.flatMap((p) => p.spec.policyTypes ?? []))).toEqual(new Set(overlay.inClusterRedis ? ['Ingress', 'Egress'] : []));
      expect(redisPolicies.flatMap((p) => p.spec.egress ?? [])).toEqual([]);
    });
  });
});

describe.each(OVERLAYS.filter((o) => o.inClusterRedis))('the in-cluster Redis of $name', (overlay) => {
  const redisOf = (r: Render) => {
    const container = r.redis!.template.spec.containers[0]!;
    const configName = volumeFor(r.redis!.template.spec, (container.volumeMounts ?? []).find((m) => m.mountPath === '/etc/redis')!.name)!.configMap!.name;
    const conf = r.configMap(configName)?.['redis.conf'] ?? '';
    const directives = new Map(conf.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#')).map((l) => [l.split(/\s+/)[0]!, l.split(/\s+/).slice(1).join(' ')]));
    return { container, conf, directives };
  };

  it('starts from its config file and keeps an append-only file on its own persistent volume', () => {
    const r = rendered(overlay);
    const { container, directives } = redisOf(r);
    expect(container.args?.join(' ')).toMatch(/exec redis-server \/etc\/redis\/redis\.conf$/);
    expect(directives.get('appendonly')).toBe('yes');
    expect(directives.get('dir')).toBe('/data');
    const data = (container.volumeMounts ?? []).find((m) => m.mountPath === '/data');
    const template = r.redis!.volumeClaimTemplates?.find((t) => t.metadata.name === data?.name);
    expect(template?.spec.accessModes).toEqual(['ReadWriteOnce']);
  });

  it('never evicts keys, which BullMQ needs, and is bounded in memory below its container limit', () => {
    const { container, directives } = redisOf(rendered(overlay));
    expect(directives.get('maxmemory-policy')).toBe('noeviction');
    const maxmemory = /^(\d+)mb$/.exec(directives.get('maxmemory') ?? '');
    expect(maxmemory).not.toBeNull();
    const limit = /^(\d+)Mi$/.exec(JSON.stringify(container.resources?.limits?.memory ?? '').replaceAll('"', ''));
    expect(Number(maxmemory![1])).toBeLessThan(Number(limit?.[1] ?? 0));
  });

  it('requires the password from the Secret, written to a memory volume it includes, never on a command line', () => {
    const r = rendered(overlay);
    const { container, directives } = redisOf(r);
    expect(container.env).toContainEqual({ name: 'REDIS_PASSWORD', valueFrom: { secretKeyRef: { name: 'talos-chatops-redis', key: 'REDIS_PASSWORD' } } });
    expect(directives.get('include')).toBe('/run/redis/auth.conf');
    expect(directives.has('requirepass')).toBe(false);
    const run = mountFor(container, '/run/redis/auth.conf');
    expect(volumeFor(r.redis!.template.spec, run!.name)?.emptyDir?.medium).toBe('Memory');
    expect(container.args?.join(' ')).toContain('requirepass "%s"');
    expect([...(container.command ?? []), ...(container.args ?? [])].join(' ')).not.toMatch(/--requirepass|\$\(REDIS_PASSWORD\)/);
    // The probe authenticates through the environment too.
    expect(container.readinessProbe?.exec?.command?.join(' ')).toContain('REDISCLI_AUTH="$REDIS_PASSWORD"');
  });

  it('is what the REDIS_URL of the Secret template points at, with the same password', () => {
    const r = rendered(overlay);
    const url = new URL(templateKeys('talos-chatops-redis').REDIS_URL!);
    const service = r.named('Service', url.hostname.split('.')[0]!).spec as { selector: Labels; ports: { port: number }[] };
    expect(matches(service.selector, r.redis!.template.metadata.labels)).toBe(true);
    expect(service.ports.map((p) => p.port)).toContain(Number(url.port || '6379'));
    expect(url.hostname.split('.')[1] ?? NAMESPACE).toBe(NAMESPACE);
    expect(decodeURIComponent(url.password)).toBe(templateKeys('talos-chatops-redis').REDIS_PASSWORD);
  });
});

describe('the Flux example', () => {
  const sources = fluxObjects.filter((o) => o.kind === 'OCIRepository');
  const syncs = fluxObjects.filter((o) => o.kind === 'Kustomization');
  const site = syncs.find((o) => o.metadata?.name === 'talos-chatops-site')!;
  const variables = Object.keys(fluxApp.spec.postBuild?.substitute ?? {}).sort();
  const overlayPaths = OVERLAYS.filter((o) => o.name !== 'flux site').map((o) => `./overlays/${o.name}`);

  it('uses the GA Flux APIs', () => {
    expect(sources.map((s) => s.apiVersion)).toEqual(['source.toolkit.fluxcd.io/v1']);
    expect(syncs.map((s) => s.apiVersion)).toEqual(['kustomize.toolkit.fluxcd.io/v1', 'kustomize.toolkit.fluxcd.io/v1']);
  });

  it('deploys the bot from the published OCI artifact of a release, after the site that holds the namespace and the inventory', () => {
    const release = sources[0]!;
    expect((release.spec as { url?: string }).url).toMatch(/^oci:\/\//);
    expect((release.spec as { ref?: { tag?: string } }).ref?.tag).toMatch(/^\d+\.\d+\.\d+$/);
    expect(fluxApp.spec).toMatchObject({ sourceRef: { kind: 'OCIRepository', name: release.metadata!.name }, prune: true, wait: true });
    expect(fluxApp.spec.dependsOn).toEqual([{ name: 'talos-chatops-site' }]);
    expect(overlayPaths).toContain(fluxApp.spec.path);
    expect(site.spec.path).toBe('./apps/talos-chatops');
    // The release script publishes manifests/ and says which tag to set here.
    const script = readFileSync(join(ROOT, 'scripts', 'publish-manifests.sh'), 'utf8');
    expect(script).toContain('flux push artifact');
    expect(script).toContain('--path=manifests');
  });

  it('leaves exactly the example\'s postBuild.substitute variables in every overlay it can deploy: the CIDRs and the storage class', () => {
    expect(variables).toEqual(['PRODUCTION_NODE_CIDR', 'PROXMOX_API_CIDR', 'STAGING_NODE_CIDR', 'STORAGE_CLASS']);
    for (const path of overlayPaths) expect({ path, variables: variablesIn(renderFluxText(MANIFESTS, { ...fluxApp.spec, path })) }).toEqual({ path, variables });
  });

  it('puts the substituted networks into the policies and the storage class on every claim, Redis\'s included', () => {
    const values = { STAGING_NODE_CIDR: '192.168.50.0/24', PRODUCTION_NODE_CIDR: '192.168.60.0/24', PROXMOX_API_CIDR: '192.168.10.0/28', STORAGE_CLASS: 'nas-nfs' };
    const r = analyse(parseAllDocuments(substitute(renderFluxText(MANIFESTS, fluxApp.spec), values)).map((d) => d.toJS() as K8sObject));
    const cidrsFor = (port: string) =>
      r.policies.flatMap((p) => (p.spec.egress ?? []).filter((rule) => portsOf(rule).includes(port))).flatMap((rule) => (rule.to ?? []).map((peer) => peer.ipBlock?.cidr));
    expect(cidrsFor('TCP/50000')).toEqual(['192.168.50.0/24', '192.168.60.0/24']);
    expect(cidrsFor('TCP/6443')).toEqual(['192.168.50.0/24', '192.168.60.0/24']);
    expect(cidrsFor('TCP/8006')).toEqual(['192.168.10.0/28']);
    const claims = r.ofKind('PersistentVolumeClaim').map((c) => (c.spec as { storageClassName?: string }).storageClassName);
    expect(claims).toEqual(['nas-nfs', 'nas-nfs', 'nas-nfs']);
    expect(r.redis!.volumeClaimTemplates!.map((t) => (t.spec as { storageClassName?: string }).storageClassName)).toEqual(['nas-nfs']);
    // The claim template keeps the size and access of the component it restates.
    const plain = analyse(render(join(MANIFESTS, 'overlays', 'socket-mode')) as K8sObject[]);
    const { storageClassName: _, ...rest } = r.redis!.volumeClaimTemplates![0]!.spec as { storageClassName?: string };
    expect(rest).toEqual(plain.redis!.volumeClaimTemplates![0]!.spec);
  });

  it('takes the inventory from the site\'s ConfigMap and leaves the namespace to the site, which holds the base\'s copy', () => {
    const r = rendered(OVERLAYS.find((o) => o.name === 'flux site')!);
    const inventories = r.ofKind('ConfigMap').filter((c) => c.metadata!.name!.startsWith('talos-chatops-inventory') || c.metadata!.name === 'talos-chatops-clusters');
    expect(inventories.map((c) => c.metadata!.name)).toEqual(['talos-chatops-clusters']);
    expect(r.botContainer.image).toBe('registry.example.org/platform/talos-chatops:0.1.0');
    expect(r.ofKind('PersistentVolumeClaim').map((c) => (c.spec as { storageClassName?: string }).storageClassName)).toEqual(['nfs', 'nfs', 'nfs']);
    const app = parseAllDocuments(renderFluxText(MANIFESTS, fluxApp.spec)).map((d) => d.toJS() as K8sObject);
    expect(app.filter((o) => o.kind === 'Namespace')).toEqual([]);
    expect(readOne('flux/site/namespace.yaml')).toEqual(readOne('base/namespace.yaml'));
  });
});

describe('kept through a Flux prune and patched by name', () => {
  it.each(OVERLAYS)('$name: the namespace and every data claim, Redis\'s included, carry kustomize.toolkit.fluxcd.io/prune: disabled', (overlay) => {
    const r = rendered(overlay);
    const annotated = (o: { metadata?: { annotations?: Record<string, string> } }) => o.metadata?.annotations?.['kustomize.toolkit.fluxcd.io/prune'];
    const kept = [...r.ofKind('Namespace'), ...r.ofKind('PersistentVolumeClaim'), ...(r.redis?.volumeClaimTemplates ?? [])];
    expect(kept.length).toBe(overlay.inClusterRedis ? 5 : 4);
    expect(kept.map((o) => annotated(o as { metadata?: { annotations?: Record<string, string> } }))).toEqual(kept.map(() => 'disabled'));
  });

  it('patches no NetworkPolicy by list index, in the manifests, the Flux objects or the deploy guide', () => {
    interface Patch { target?: { kind?: string }; patch?: string }
    const kustomizations = yamlFiles().filter((f) => posix.basename(f) === 'kustomization.yaml').map((f) => ({ f, k: readOne<{ patches?: Patch[] }>(f) }));
    const patches = [
      ...kustomizations.flatMap(({ f, k }) => (k.patches ?? []).map((p) => ({ where: f, ...p }))),
      ...fluxObjects.flatMap((o) => ((o.spec as { patches?: Patch[] }).patches ?? []).map((p) => ({ where: 'flux/talos-chatops.yaml', ...p }))),
    ];
    expect(patches.length).toBeGreaterThan(5);
    const indexed = patches.filter((p) => (p.target?.kind ?? 'NetworkPolicy') === 'NetworkPolicy' && /^\s*-?\s*path:\s*\S*\/\d+(\/|\s|$)/m.test(p.patch ?? ''));
    expect(indexed.map((p) => p.where)).toEqual([]);
    const guide = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
    expect(guide.match(/path: \/spec\/(egress|ingress)\/\d+/g)).toBeNull();
  });
});

describe('the Slack app manifest', () => {
  interface SlackManifest {
    _metadata?: { major_version?: number };
    display_information?: { name?: string };
    features?: {
      app_home?: { home_tab_enabled?: boolean; messages_tab_enabled?: boolean };
      bot_user?: { display_name?: string };
      slash_commands?: { command: string; description?: string; usage_hint?: string; url?: string }[];
      event_subscriptions?: unknown;
    };
    oauth_config?: { scopes?: { bot?: string[]; user?: string[] } };
    settings?: {
      interactivity?: { is_enabled?: boolean };
      event_subscriptions?: { request_url?: string; bot_events?: string[]; user_events?: string[] };
      socket_mode_enabled?: boolean;
    };
  }
  const app = readOne<SlackManifest>('slack-app.yaml');

  it('is a version 1 manifest with a name and a bot user', () => {
    expect(app._metadata?.major_version).toBe(1);
    expect(app.display_information?.name?.length).toBeGreaterThan(0);
    expect(app.display_information!.name!.length).toBeLessThanOrEqual(35);
    expect(app.features?.bot_user?.display_name?.length).toBeGreaterThan(0);
  });

  it('asks for exactly the scopes the bot uses, and no user scopes', () => {
    expect([...(app.oauth_config?.scopes?.bot ?? [])].sort()).toEqual(['channels:history', 'channels:read', 'chat:write', 'commands', 'files:write', 'groups:history', 'groups:read', 'usergroups:read', 'users:read']);
    expect(app.oauth_config?.scopes?.user).toBeUndefined();
  });

  it('declares /talos with a description and a usage hint', () => {
    expect(app.features?.slash_commands).toHaveLength(1);
    const talos = app.features!.slash_commands![0]!;
    expect(talos.command).toBe('/talos');
    expect(talos.description?.length).toBeGreaterThan(0);
    expect(talos.usage_hint).toMatch(/\bhealth\b/);
  });

  it("gives /talos a usage hint naming every subcommand of /talos help, so the hint Slack shows while typing is complete", () => {
    const hint = app.features!.slash_commands![0]!.usage_hint ?? '';
    const words = [...HELP_TEXT.matchAll(/`\/talos ([a-z-]+(?: (?:talos|k8s|etcd-restore))?)/g)].map((m) => m[1]!);
    expect(words.length).toBeGreaterThan(14);
    const said = (phrase: string) => phrase.split(' ').every((word) => new RegExp(`(^|[ |])${word}([ |]|$)`).test(hint));
    expect(words.filter((w) => !said(w))).toEqual([]);
    expect(hint.length).toBeLessThanOrEqual(1000);
  });

  it('runs in Socket Mode with interactivity for the buttons and app_home_opened as its only event, without request URLs', () => {
    expect(app.settings?.socket_mode_enabled).toBe(true);
    expect(app.settings?.interactivity?.is_enabled).toBe(true);
    expect(app.settings?.event_subscriptions).toEqual({ bot_events: ['app_home_opened'] });
    expect(app.features?.event_subscriptions).toBeUndefined();
  });

  it('has a Home tab and no messages tab', () => {
    expect(app.features?.app_home).toMatchObject({ home_tab_enabled: true, messages_tab_enabled: false });
  });
});

describe('committed secrets', () => {
  /** Documented example values that look like secrets but are public (the empty Image Factory schematic). */
  const PUBLIC_HEX = new Set(['376567988ad370138ad8b2698212367b8edcb69b5fd68c80be1f2ec7d603b4ba']);

  function secretShapes(text: string): string[] {
    const found = [
      ...text.matchAll(/xox[bpaer]-[0-9]+-[A-Za-z0-9-]*/g),
      ...text.matchAll(/xapp-1-[A-Za-z0-9-]*/g),
      ...text.matchAll(/-----BEGIN[A-Z ]*-----/g),
    ].map((m) => m[0]);
    // An image digest (`@sha256:<hex>`) is public, not a secret.
    const hex = [...text.matchAll(/(?<![0-9a-fA-F]|sha256:)[0-9a-fA-F]{64}(?![0-9a-fA-F])/g)].map((m) => m[0]).filter((h) => !PUBLIC_HEX.has(h.toLowerCase()));
    return [...found, ...hex];
  }

  it('recognises token-shaped strings (so the scan below can fail)', () => {
    const samples = [
      ['xoxb', '1234567890', 'abcdef'].join('-'),
      ['xapp', '1', 'A0123', 'secret'].join('-'),
      ['-----BEGIN', 'PRIVATE KEY-----'].join(' '),
      'ab'.repeat(32),
    ];
    expect(samples.map((sample) => secretShapes(`value: ${sample}\n`))).toEqual(samples.map((sample) => [sample]));
    expect(secretShapes('SLACK_BOT_TOKEN: xoxb-REPLACE-ME\n')).toEqual([]);
    expect(secretShapes(`schematic: ${[...PUBLIC_HEX][0]}\n`)).toEqual([]);
    expect(secretShapes(`image: redis@sha256:${'ab'.repeat(32)}\n`)).toEqual([]);
  });

  it('finds none in the manifests, the Dockerfile, .dockerignore or the deploy guide', () => {
    const files = [...readdirSync(MANIFESTS, { recursive: true, encoding: 'utf8' }).filter((f) => /\.(ya?ml|conf)$/.test(f)).map((f) => join('manifests', f)), 'Dockerfile', '.dockerignore', join('docs', 'deploy.md')];
    const found = files.flatMap((file) => secretShapes(readFileSync(join(ROOT, file), 'utf8')).map((shape) => `${file}: ${shape}`));
    expect(files.length).toBeGreaterThan(4);
    expect(found).toEqual([]);
  });

  it('keeps only placeholders in the Secret templates', () => {
    expect(secretTemplates.map((s) => s.kind)).toEqual(secretTemplates.map(() => 'Secret'));
    const values = secretTemplates.flatMap((secret) => [
      ...Object.entries(secret.stringData ?? {}).map(([k, v]) => [`${secret.metadata?.name}.${k}`, String(v)] as const),
      ...Object.entries(secret.data ?? {}).map(([k, v]) => [`${secret.metadata?.name}.${k}`, Buffer.from(String(v), 'base64').toString('utf8')] as const),
    ]);
    expect(values.length).toBeGreaterThanOrEqual(secretTemplates.length);
    expect(values.filter(([, value]) => !value.includes('REPLACE-ME')).map(([key]) => key)).toEqual([]);
  });
});

describe('docs/deploy.md', () => {
  const guide = readFileSync(join(ROOT, 'docs', 'deploy.md'), 'utf8');
  const reference = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8');
  const variablesIn = (text: string) => new Set([...text.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`/gm)].map((m) => m[1]!));
  const documented = variablesIn(reference);
  const setByManifests = variablesIn(guide.slice(guide.indexOf('## Where the manifests set each variable')));
  const CONTRACT = [
    'SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_API_URL', 'REDIS_URL', 'CLUSTERS_FILE',
    'TALOSCTL_BIN', 'TOFU_BIN', 'HTTP_PORT', 'LOG_LEVEL', 'LOG_PRETTY', 'IMAGE_FACTORY_URL', 'CREDENTIALS_DIR',
    'APPROVAL_TTL_MINUTES', 'STEP_TIMEOUT_SECONDS', 'PROBE_TIMEOUT_SECONDS', 'NODE_READY_TIMEOUT_SECONDS', 'POLL_INTERVAL_MS',
  ];

  it('links a configuration reference covering the runtime contract, each variable one the bot reads', () => {
    expect(guide).toContain('](configuration.md)');
    expect(CONTRACT.filter((name) => !documented.has(name))).toEqual([]);
    expect(CONTRACT.filter((name) => !SCHEMA_NAMES.has(name))).toEqual([]);
  });

  it('says where the manifests set every variable they set, each one in the configuration reference', () => {
    const set = new Set(OVERLAYS.flatMap((o) => Object.keys(rendered(o).environment())));
    expect(set.size).toBeGreaterThan(10);
    expect([...set].filter((name) => !setByManifests.has(name) && !TOFU_PREFIX.test(name))).toEqual([]);
    expect([...set].filter((name) => !documented.has(name) && !TOFU_PREFIX.test(name))).toEqual([]);
  });

  it('links the files it tells the operator to use, and names every overlay', () => {
    const files = [
      'manifests/slack-app.yaml', 'manifests/secret.example.yaml', 'manifests/base/clusters.example.yaml', 'manifests/base/kustomization.yaml',
      'manifests/flux/talos-chatops.yaml', 'manifests/flux/site/kustomization.yaml',
      ...OVERLAYS.filter((o) => o.name !== 'flux site').map((o) => `manifests/overlays/${o.name}`),
    ];
    expect(files.filter((file) => !guide.includes(file) || !existsSync(join(ROOT, file)))).toEqual([]);
  });

  it('opens with what you need and an honest time, and the README\'s first screen says whether the estate fits', () => {
    const opening = guide.slice(0, guide.indexOf('## 1.'));
    expect(opening).toContain('**You need:**');
    expect(opening).toMatch(/\*\*How long:\*\* about half a day/);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const firstScreen = readme.split('\n').slice(0, 30).join('\n');
    expect(firstScreen).toContain('## Will it fit?');
    for (const phrase of ['talos_image_factory_schematic_id', 'keyed by hostname', 'nocloud', 'hostLabel', 'Flux', 'where it does not'])
      expect(firstScreen).toContain(phrase);
    expect(guide).toContain('git clone --branch main');
  });

  it('says how Redis stays safe: a password, noeviction with maxmemory, and TLS with rediss://', () => {
    for (const phrase of ['requirepass', 'maxmemory-policy noeviction', 'maxmemory', 'rediss://', 'NODE_EXTRA_CA_CERTS']) expect(guide).toContain(phrase);
    // The Docker recipe runs Redis with a password too, publishes no port and never turns protection off.
    const recipe = guide.slice(guide.indexOf('## 13.'), guide.indexOf('## Where the manifests set each variable'));
    const redisRun = recipe.slice(recipe.indexOf('docker run -d --name talos-redis'), recipe.indexOf('docker run -d --name talos-chatops'));
    expect(recipe).toContain(`printf 'requirepass "%s"`);
    expect(redisRun).toContain('--include');
    expect(redisRun).toMatch(/--maxmemory-policy noeviction/);
    expect(redisRun).not.toMatch(/\s-p\s|--publish|protected-mode no/);
  });
});
