import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isIPv4 } from 'node:net';
import { join, posix } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfig } from '../../src/config/env.ts';
import { parseInventory } from '../../src/config/inventory.ts';

// Static checks of the deployment artefacts: every manifest is read as YAML and
// checked against the runtime contract and against the other manifests.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFESTS = join(ROOT, 'manifests');
const NAMESPACE = 'talos-chatops';

type Labels = Record<string, string>;

interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Labels };
  spec?: unknown;
  data?: Record<string, unknown>;
  stringData?: Record<string, unknown>;
}

interface Probe {
  httpGet?: { path?: string; port?: number | string };
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

interface Container {
  name: string;
  image?: string;
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string; optional?: boolean } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
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
  terminationGracePeriodSeconds?: number;
  hostNetwork?: boolean;
  hostPID?: boolean;
}

interface WorkloadSpec {
  replicas?: number;
  selector: { matchLabels: Labels };
  template: { metadata: { labels: Labels }; spec: PodSpec };
  volumeClaimTemplates?: { metadata: { name: string } }[];
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

interface Kustomization {
  namespace?: string;
  resources?: string[];
  configMapGenerator?: { name: string; files?: string[]; literals?: string[] }[];
  images?: { name: string; newName?: string; newTag?: string; digest?: string }[];
}

interface Manifest {
  file: string;
  object: K8sObject;
}

function yamlFiles(): string[] {
  return readdirSync(MANIFESTS)
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

const kustomization = readOne<Kustomization>('kustomization.yaml');
const resourceFiles = kustomization.resources ?? [];
const applied: Manifest[] = resourceFiles.flatMap((file) => readDocuments(file).map((object) => ({ file, object: object as K8sObject })));
const secretTemplates = readDocuments('secret.example.yaml') as K8sObject[];
const allObjects: Manifest[] = [...applied, ...secretTemplates.map((object) => ({ file: 'secret.example.yaml', object }))];

function objectsOfKind(kind: string): K8sObject[] {
  return applied.filter((m) => m.object.kind === kind).map((m) => m.object);
}

function named(kind: string, name: string): K8sObject {
  const found = objectsOfKind(kind).find((o) => o.metadata?.name === name);
  if (found === undefined) throw new Error(`no ${kind} named ${name} in the kustomization's resources`);
  return found;
}

const workloads = [...objectsOfKind('Deployment'), ...objectsOfKind('StatefulSet')].map((o) => ({
  kind: o.kind!,
  name: o.metadata!.name!,
  spec: o.spec as WorkloadSpec,
}));
const bot = named('Deployment', 'talos-chatops').spec as WorkloadSpec;
const botPod = bot.template.spec;
const botContainer = botPod.containers.find((c) => c.name === 'bot')!;
const redis = named('StatefulSet', 'redis').spec as WorkloadSpec;
const redisContainer = redis.template.spec.containers[0]!;

const generators = kustomization.configMapGenerator ?? [];
const settings = Object.fromEntries(
  (generators.find((g) => g.name === 'talos-chatops-config')?.literals ?? []).map((literal) => {
    const at = literal.indexOf('=');
    return [literal.slice(0, at), literal.slice(at + 1)];
  }),
);
const botEnv = Object.fromEntries((botContainer.env ?? []).map((e) => [e.name, e.value ?? '']));
const inventoryText = readFileSync(join(MANIFESTS, 'clusters.example.yaml'), 'utf8');
const inventory = parseInventory(inventoryText, 'manifests/clusters.example.yaml');

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

describe('manifests/ as YAML', () => {
  it('parses every file without errors or warnings and finds a document in each', () => {
    const documentsPerFile = Object.fromEntries(yamlFiles().map((file) => [file, readDocuments(file).length > 0]));
    expect(Object.keys(documentsPerFile).length).toBeGreaterThan(0);
    expect(Object.entries(documentsPerFile).filter(([, found]) => !found)).toEqual([]);
  });

  it('accounts for every file: a resource, a generator source, an example or the Slack app manifest', () => {
    const generatorSources = generators.flatMap((g) => (g.files ?? []).map((f) => f.split('=').at(-1)!));
    const known = new Set(['kustomization.yaml', 'slack-app.yaml', ...resourceFiles, ...generatorSources]);
    const strays = yamlFiles().filter((f) => !known.has(f) && !f.endsWith('.example.yaml'));
    expect(strays).toEqual([]);
  });

  it('gives every Kubernetes object an apiVersion, a kind and a name, in this namespace or none', () => {
    const problems = allObjects.flatMap(({ file, object }) => [
      ...(/^([a-z0-9.-]+\/)?v\d+/.test(object.apiVersion ?? '') ? [] : [`${file}: apiVersion`]),
      ...(/^[A-Z][A-Za-z]+$/.test(object.kind ?? '') ? [] : [`${file}: kind`]),
      ...(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(object.metadata?.name ?? '') ? [] : [`${file}: metadata.name`]),
      ...([undefined, NAMESPACE].includes(object.metadata?.namespace) ? [] : [`${file}: namespace ${object.metadata?.namespace}`]),
    ]);
    expect(allObjects.length).toBeGreaterThan(0);
    expect(problems).toEqual([]);
  });

  it('uses only fields that exist on each kind (a misspelled or misplaced field is lost on the way through the API types)', () => {
    const normalise = (value: unknown): unknown => JSON.parse(JSON.stringify(value)) as unknown;
    const key = ({ file, object }: Manifest): string => `${file}: ${object.kind}/${object.metadata?.name}`;
    // Every kind here is served at v1 of its group, so its model is V1<Kind>.
    expect(allObjects.filter(({ object }) => !/(^|\/)v1$/.test(object.apiVersion ?? '')).map(key)).toEqual([]);
    const roundTripped = allObjects.map((m) => {
      const type = `V1${m.object.kind}`;
      return [key(m), normalise(ObjectSerializer.serialize(ObjectSerializer.deserialize(m.object, type, ''), type, ''))];
    });
    expect(Object.fromEntries(roundTripped)).toEqual(Object.fromEntries(allObjects.map((m) => [key(m), normalise(m.object)])));
  });
});

describe('kustomization.yaml', () => {
  it('deploys into the talos-chatops namespace, which it also creates', () => {
    expect(kustomization.namespace).toBe(NAMESPACE);
    expect(objectsOfKind('Namespace').map((n) => n.metadata?.name)).toEqual([NAMESPACE]);
  });

  it('lists only existing files, each once, and never the Secret template', () => {
    expect(resourceFiles.filter((file) => !existsSync(join(MANIFESTS, file)) || !statSync(join(MANIFESTS, file)).isFile())).toEqual([]);
    expect(new Set(resourceFiles).size).toBe(resourceFiles.length);
    expect(resourceFiles).not.toContain('secret.example.yaml');
    expect(objectsOfKind('Secret')).toEqual([]);
  });

  it('generates the inventory ConfigMap from an existing file', () => {
    const inventoryGenerator = generators.find((g) => g.name === 'talos-chatops-inventory');
    expect(inventoryGenerator?.files).toHaveLength(1);
    const source = inventoryGenerator!.files![0]!.split('=').at(-1)!;
    expect(statSync(join(MANIFESTS, source)).isFile()).toBe(true);
  });

  it('rewrites the bot image to a pinned registry reference', () => {
    // The Deployment names a placeholder that images: must rewrite.
    const rewrite = (kustomization.images ?? []).find((i) => i.name === botContainer.image);
    expect(rewrite).toBeDefined();
    expect(rewrite!.newName).toMatch(/^[a-z0-9.-]+(:\d+)?\/[a-z0-9/._-]+$/);
    expect(rewrite!.digest ?? rewrite!.newTag).toBeDefined();
    expect(rewrite!.newTag).not.toBe('latest');
  });
});

describe('the example inventory', () => {
  it('is valid for the bot', () => {
    expect(inventory.clusters.map((c) => c.name).sort()).toEqual(['production', 'staging']);
  });

  it('keeps each cluster\'s Terraform and snapshot directories on writable persistent volumes of the bot', () => {
    const paths = inventory.clusters.flatMap((c) => [c.terraformDir, c.snapshotDir]);
    const problems = paths.flatMap((path) => {
      const mount = mountFor(botContainer, path);
      if (mount === undefined) return [`${path} is on no volume`];
      if (mount.readOnly === true) return [`${path} is read-only`];
      return volumeFor(botPod, mount.name)?.persistentVolumeClaim === undefined ? [`${path} is not on a persistent volume`] : [];
    });
    expect(paths).toHaveLength(2 * inventory.clusters.length);
    expect(problems).toEqual([]);
  });
});

describe('the bot Deployment', () => {
  it('runs two replicas against one Redis and rolls over without dropping below them', () => {
    expect(bot.replicas).toBe(2);
    const strategy = (named('Deployment', 'talos-chatops').spec as { strategy?: { rollingUpdate?: { maxUnavailable?: number } } }).strategy;
    expect(strategy?.rollingUpdate?.maxUnavailable).toBe(0);
    expect(matches(bot.selector.matchLabels, bot.template.metadata.labels)).toBe(true);
  });

  it('is ready on /readyz and alive on /healthz, on its named http port 3000', () => {
    expect(botContainer.ports).toContainEqual(expect.objectContaining({ name: 'http', containerPort: 3000 }));
    expect(botContainer.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(botContainer.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(botEnv.HTTP_PORT).toBe('3000');
  });

  it('gives a stopping replica longer than the longest step to finish it', () => {
    const stepSeconds = Number(settings.STEP_TIMEOUT_SECONDS ?? '1800');
    expect(stepSeconds).toBeGreaterThanOrEqual(1800);
    expect(botPod.terminationGracePeriodSeconds).toBeGreaterThan(stepSeconds);
    // The bot's own bound comes first, so it still exits with 0 after forcing its workers closed.
    const graceSeconds = Number(settings.SHUTDOWN_GRACE_SECONDS ?? '60');
    expect(graceSeconds).toBeGreaterThan(stepSeconds);
    expect(graceSeconds).toBeLessThan(botPod.terminationGracePeriodSeconds!);
  });

  it('starts with the configuration the manifests give it', () => {
    const slack = secretTemplates.find((s) => s.metadata?.name === 'talos-chatops')!;
    const env = { ...settings, ...(slack.stringData as Record<string, string>), ...botEnv };
    const config = loadConfig(env);
    expect(config.slack.appToken).toBeDefined();
    expect(config.clustersFile).toBe('/etc/talos-chatops/clusters.yaml');
    expect(config.timeouts.stepMs / 1000).toBeLessThan(botPod.terminationGracePeriodSeconds!);
  });

  it('finds the inventory where the ConfigMap is mounted', () => {
    const mount = mountFor(botContainer, botEnv.CLUSTERS_FILE!);
    expect(mount?.readOnly).toBe(true);
    expect(volumeFor(botPod, mount!.name)?.configMap?.name).toBe('talos-chatops-inventory');
    const generated = generators.find((g) => g.name === 'talos-chatops-inventory')!.files![0]!;
    expect(generated.split('=')[0]).toBe(posix.relative(mount!.mountPath, botEnv.CLUSTERS_FILE!));
  });

  it('keeps credentials in memory and every other write on a volume, since the root filesystem is read-only', () => {
    const credentials = mountFor(botContainer, botEnv.CREDENTIALS_DIR!);
    expect(credentials?.mountPath).toBe(botEnv.CREDENTIALS_DIR);
    expect(volumeFor(botPod, credentials!.name)?.emptyDir?.medium).toBe('Memory');
    const tmp = mountFor(botContainer, '/tmp/some-file');
    expect(tmp?.mountPath).toBe('/tmp');
    expect(volumeFor(botPod, tmp!.name)?.emptyDir).toBeDefined();
  });

  it('takes its settings from the generated ConfigMap and the operator\'s Secrets', () => {
    const configMaps = (botContainer.envFrom ?? []).flatMap((e) => (e.configMapRef ? [e.configMapRef.name] : []));
    const secrets = (botContainer.envFrom ?? []).flatMap((e) => (e.secretRef ? [e.secretRef] : []));
    expect(configMaps).toEqual(['talos-chatops-config']);
    const templates = secretTemplates.map((s) => s.metadata?.name);
    expect(secrets.length).toBeGreaterThan(0);
    expect(secrets.map((ref) => ref.name).filter((name) => !templates.includes(name))).toEqual([]);
    expect(secrets.find((s) => s.name === 'talos-chatops')?.optional ?? false).toBe(false);
  });

  it('never talks to the cluster it runs in', () => {
    expect(botPod.automountServiceAccountToken).toBe(false);
    expect(objectsOfKind('Role')).toEqual([]);
    expect(objectsOfKind('ClusterRole')).toEqual([]);
    expect(objectsOfKind('RoleBinding')).toEqual([]);
    expect(objectsOfKind('ClusterRoleBinding')).toEqual([]);
  });

  it('is reachable through a Service on the http port', () => {
    const service = named('Service', 'talos-chatops').spec as { selector: Labels; ports: { port: number; targetPort: string }[] };
    expect(matches(service.selector, bot.template.metadata.labels)).toBe(true);
    expect(service.ports).toContainEqual(expect.objectContaining({ port: 3000, targetPort: 'http' }));
  });
});

describe('every workload', () => {
  it('is found', () => {
    expect(workloads.map((w) => `${w.kind}/${w.name}`).sort()).toEqual(['Deployment/talos-chatops', 'StatefulSet/redis']);
  });

  it('meets the restricted Pod Security Standard and then some', () => {
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

  it('sets CPU and memory requests and limits on every container', () => {
    const resources = workloads.flatMap(({ name, spec }) =>
      spec.template.spec.containers.map((c) => [
        `${name}/${c.name}`,
        { requests: Object.keys(c.resources?.requests ?? {}).sort(), limits: Object.keys(c.resources?.limits ?? {}).sort() },
      ]),
    );
    const complete = { requests: ['cpu', 'memory'], limits: ['cpu', 'memory'] };
    expect(Object.fromEntries(resources)).toEqual(Object.fromEntries(resources.map(([where]) => [where, complete])));
  });

  it('mounts only volumes it declares, and declares only volumes it mounts', () => {
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

  it('refers only to ConfigMaps, Secrets and claims that the manifests provide', () => {
    const configMaps = generators.map((g) => g.name);
    const claims = objectsOfKind('PersistentVolumeClaim').map((c) => c.metadata?.name);
    const secrets = secretTemplates.map((s) => s.metadata?.name);
    const volumes = workloads.flatMap(({ spec }) => spec.template.spec.volumes ?? []);
    const missing = volumes.flatMap((v) => [
      ...(v.configMap && !configMaps.includes(v.configMap.name) ? [`ConfigMap ${v.configMap.name}`] : []),
      ...(v.secret && !secrets.includes(v.secret.secretName) ? [`Secret ${v.secret.secretName}`] : []),
      ...(v.persistentVolumeClaim && !claims.includes(v.persistentVolumeClaim.claimName) ? [`claim ${v.persistentVolumeClaim.claimName}`] : []),
    ]);
    expect(volumes.length).toBeGreaterThan(0);
    expect(missing).toEqual([]);
  });
});

describe('Redis', () => {
  it('keeps an append-only file on its own persistent volume', () => {
    const args = (redisContainer.args ?? []).join(' ');
    expect(args).toMatch(/--appendonly\s+yes\b/);
    const data = (redisContainer.volumeMounts ?? []).find((m) => m.mountPath === '/data');
    expect(redis.volumeClaimTemplates?.map((t) => t.metadata.name)).toContain(data?.name);
  });

  it('never evicts keys, which BullMQ needs', () => {
    expect((redisContainer.args ?? []).join(' ')).toMatch(/--maxmemory-policy\s+noeviction\b/);
  });

  it('is what REDIS_URL points at', () => {
    const url = new URL(settings.REDIS_URL!);
    const service = named('Service', url.hostname.split('.')[0]!).spec as { selector: Labels; ports: { port: number }[] };
    expect(matches(service.selector, redis.template.metadata.labels)).toBe(true);
    expect(service.ports.map((p) => p.port)).toContain(Number(url.port || '6379'));
    // A fully qualified name must name this namespace: redis.talos-chatops.svc…
    expect(url.hostname.split('.')[1] ?? NAMESPACE).toBe(NAMESPACE);
  });
});

describe('PodDisruptionBudgets', () => {
  const budgets = objectsOfKind('PodDisruptionBudget').map((o) => ({
    name: o.metadata!.name!,
    spec: o.spec as { minAvailable?: number; maxUnavailable?: number; selector: { matchLabels: Labels } },
  }));

  it('exist for the bot and for Redis', () => {
    expect(budgets.map((b) => b.name).sort()).toEqual(['redis', 'talos-chatops']);
  });

  it('each select the pods of one workload in the manifests, and never block a drain at full strength', () => {
    const verdicts = budgets.map((budget) => {
      const selected = workloads.filter((w) => matches(budget.spec.selector.matchLabels, w.spec.template.metadata.labels));
      const replicas = selected[0]?.spec.replicas ?? 1;
      const allowed = budget.spec.maxUnavailable ?? replicas - (budget.spec.minAvailable ?? replicas);
      return [budget.name, { workloads: selected.length, allowsADisruption: Number.isInteger(allowed) && allowed >= 1 }];
    });
    expect(Object.fromEntries(verdicts)).toEqual(Object.fromEntries(budgets.map((b) => [b.name, { workloads: 1, allowsADisruption: true }])));
  });
});

describe('NetworkPolicies', () => {
  const policies = objectsOfKind('NetworkPolicy').map((o) => ({ name: o.metadata!.name!, spec: o.spec as NetworkPolicySpec }));
  const covering = (labels: Labels) => policies.filter((p) => matches(p.spec.podSelector.matchLabels, labels));
  const botPolicies = covering(bot.template.metadata.labels);
  const botEgress = botPolicies.flatMap((p) => p.spec.egress ?? []);
  const botIngress = botPolicies.flatMap((p) => p.spec.ingress ?? []);

  it('isolate the bot pods in both directions', () => {
    const types = new Set(botPolicies.flatMap((p) => p.spec.policyTypes ?? []));
    expect(types).toEqual(new Set(['Ingress', 'Egress']));
  });

  it('let in only the bot\'s HTTP port', () => {
    expect(botIngress.length).toBeGreaterThan(0);
    for (const rule of botIngress) expect(portsOf(rule)).toEqual(['TCP/3000']);
  });

  it('name the ports of every egress rule of the bot', () => {
    for (const rule of botEgress) expect(portsOf(rule).length).toBeGreaterThan(0);
  });

  it('let the bot reach Redis and cluster DNS', () => {
    const toRedis = botEgress.filter((r) => (r.to ?? []).some((peer) => peer.podSelector && matches(peer.podSelector.matchLabels, redis.template.metadata.labels)));
    expect(toRedis.flatMap(portsOf)).toContain('TCP/6379');
    const toDns = botEgress.filter((r) => (r.to ?? []).some((peer) => peer.podSelector?.matchLabels?.['k8s-app'] === 'kube-dns'));
    expect(toDns.flatMap(portsOf)).toEqual(expect.arrayContaining(['UDP/53', 'TCP/53']));
  });

  it('let the bot reach HTTPS on public addresses only', () => {
    const https = botEgress.filter((r) => portsOf(r).includes('TCP/443'));
    expect(https).toHaveLength(1);
    expect(portsOf(https[0]!)).toEqual(['TCP/443']);
    const blocks = (https[0]!.to ?? []).map((peer) => peer.ipBlock);
    expect(blocks).toHaveLength(1);
    expect(blocks[0]?.cidr).toBe('0.0.0.0/0');
    expect(blocks[0]?.except).toEqual(expect.arrayContaining(['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16']));
  });

  it('let the bot reach talos apid and the Kubernetes API of every node in the example inventory', () => {
    for (const port of ['TCP/50000', 'TCP/6443']) {
      const cidrs = botEgress.filter((r) => portsOf(r).includes(port)).flatMap((r) => (r.to ?? []).flatMap((peer) => (peer.ipBlock ? [peer.ipBlock.cidr] : [])));
      for (const cluster of inventory.clusters) {
        for (const address of [...cluster.controlPlanes, ...cluster.workers]) {
          expect(isIPv4(address)).toBe(true);
          expect(cidrs.some((cidr) => within(address, cidr)), `${port} to ${cluster.name} ${address}`).toBe(true);
        }
      }
    }
  });

  it('let only the bot into Redis, and Redis out to nowhere', () => {
    const redisPolicies = covering(redis.template.metadata.labels);
    const ingress = redisPolicies.flatMap((p) => p.spec.ingress ?? []);
    expect(ingress.length).toBeGreaterThan(0);
    for (const rule of ingress) {
      expect(portsOf(rule)).toEqual(['TCP/6379']);
      expect(rule.from?.length).toBeGreaterThan(0);
      for (const peer of rule.from ?? []) {
        expect(peer.ipBlock).toBeUndefined();
        expect(peer.namespaceSelector).toBeUndefined();
        expect(peer.podSelector?.matchLabels).toEqual(bot.selector.matchLabels);
      }
    }
    expect(new Set(redisPolicies.flatMap((p) => p.spec.policyTypes ?? []))).toEqual(new Set(['Ingress', 'Egress']));
    expect(redisPolicies.flatMap((p) => p.spec.egress ?? [])).toEqual([]);
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
    expect([...(app.oauth_config?.scopes?.bot ?? [])].sort()).toEqual(['channels:history', 'chat:write', 'commands', 'files:write', 'groups:history', 'usergroups:read']);
    expect(app.oauth_config?.scopes?.user).toBeUndefined();
  });

  it('declares /talos with a description and a usage hint', () => {
    expect(app.features?.slash_commands).toHaveLength(1);
    const talos = app.features!.slash_commands![0]!;
    expect(talos.command).toBe('/talos');
    expect(talos.description?.length).toBeGreaterThan(0);
    expect(talos.usage_hint).toMatch(/\bhealth\b/);
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
    const hex = [...text.matchAll(/(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])/g)].map((m) => m[0]).filter((h) => !PUBLIC_HEX.has(h.toLowerCase()));
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
  });

  it('finds none in the manifests, the Dockerfile, .dockerignore or the deploy guide', () => {
    const manifests = readdirSync(MANIFESTS, { recursive: true, withFileTypes: true }).filter((e) => e.isFile());
    const files = [...manifests.map((e) => join(e.parentPath, e.name).slice(ROOT.length)), 'Dockerfile', '.dockerignore', join('docs', 'deploy.md')];
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
  const reference = guide.slice(guide.indexOf('## Configuration reference'));
  const documented = new Set([...reference.matchAll(/^\|\s*`([A-Z][A-Z0-9_]*)`/gm)].map((m) => m[1]!));
  const envSource = readFileSync(join(ROOT, 'src', 'config', 'env.ts'), 'utf8');
  const CONTRACT = [
    'SLACK_BOT_TOKEN', 'SLACK_APP_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_API_URL', 'REDIS_URL', 'CLUSTERS_FILE',
    'TALOSCTL_BIN', 'TOFU_BIN', 'HTTP_PORT', 'LOG_LEVEL', 'LOG_PRETTY', 'IMAGE_FACTORY_URL', 'CREDENTIALS_DIR',
    'APPROVAL_TTL_MINUTES', 'STEP_TIMEOUT_SECONDS', 'PROBE_TIMEOUT_SECONDS', 'NODE_READY_TIMEOUT_SECONDS', 'POLL_INTERVAL_MS',
  ];

  it('has a configuration reference covering the runtime contract, each variable one the bot reads', () => {
    expect(guide).toContain('## Configuration reference');
    expect(CONTRACT.filter((name) => !documented.has(name))).toEqual([]);
    expect(CONTRACT.filter((name) => !new RegExp(`\\b${name}\\b`).test(envSource))).toEqual([]);
  });

  it('documents every variable the manifests set', () => {
    const slack = secretTemplates.find((s) => s.metadata?.name === 'talos-chatops')!;
    const set = [...Object.keys(settings), ...Object.keys(botEnv), ...Object.keys(slack.stringData ?? {})];
    expect(set.length).toBeGreaterThan(10);
    expect(set.filter((name) => !documented.has(name))).toEqual([]);
  });

  it('links the files it tells the operator to use', () => {
    const files = ['manifests/slack-app.yaml', 'manifests/secret.example.yaml', 'manifests/clusters.example.yaml', 'manifests/kustomization.yaml'];
    expect(files.filter((file) => !guide.includes(file) || !existsSync(join(ROOT, file)))).toEqual([]);
  });
});
