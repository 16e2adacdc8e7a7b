import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { parseDocument } from 'yaml';
import { z } from 'zod';
import { ConfigError, describeIssues } from './config-error.ts';
import { clusterConflicts, duplicateKeyProblems, knownKeysAt, unknownKeyFix, type SchemaNode } from './inventory-problems.ts';
import { declaredWindows, windowProblem } from './maintenance-window.ts';
import { ClusterSchedules } from './schedules.ts';
import { TalosSupport, type TalosMinorSupport } from './talos-support.ts';

/**
 * User ids are `U…`, or `W…` in an Enterprise Grid organisation; user-group ids are `S…`. A person
 * or group may also be named by handle (`@alice`, `@sre-approvers`): the bot resolves it to its id
 * through Slack at start (src/slack/slack-names.ts).
 */
const SlackIdList = z.array(
  z
    .string()
    .regex(
      /^(?:[UWS][A-Z0-9]{2,}|@[a-z0-9][a-z0-9._-]{0,79})$/,
      'must be a Slack user id (U…, or W… on Enterprise Grid), a user-group id (S…), or a handle such as @alice or @sre-approvers',
    ),
);

const Address = z.string().refine((s) => isIP(s) !== 0, { message: 'must be an IPv4 or IPv6 address' });

/** A path the bot uses as a working directory or passes to talosctl: absolute, so it never reads as a flag. */
function absolutePath(example: string) {
  // eslint-disable-next-line no-control-regex
  return z.string().regex(/^\/[^\u0000-\u001f\u007f]*$/, `must be an absolute path such as ${example}, without control characters`);
}

const MaintenanceWindow = z.strictObject({
  /** Cron expression of the window's start, e.g. `0 22 * * 2` (Tuesdays 22:00). */
  start: z
    .string()
    .min(1)
    .describe("Cron expression of the window's start, e.g. `0 22 * * 2` (Tuesdays 22:00): production steps run only from then."),
  /** Length of the window in minutes. */
  durationMinutes: z
    .number()
    .int()
    .positive()
    .describe('Length of the window in minutes: a step due after its end waits for the next window.'),
  /** IANA time zone of `start`, e.g. `Europe/Berlin`. */
  timeZone: z.string().min(1).describe('IANA time zone of `start`, e.g. `Europe/Berlin`.'),
});

/** A Terraform output name as the configuration declares it. */
const OutputName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/, 'must be a Terraform output name such as talosconfig');

/**
 * The names of the Terraform outputs the bot reads, when this cluster's configuration calls them
 * otherwise; each defaults to the name in `DEFAULT_OUTPUT_NAMES` (src/cluster/terraform-outputs.ts).
 */
const TerraformOutputNames = z
  .strictObject({
    talosconfig: OutputName.optional().describe('The output holding the talosconfig every talosctl call uses (default `talosconfig`).'),
    kubeconfig: OutputName.optional().describe('The output holding the kubeconfig for the Kubernetes API (default `talos_kubeconfig`).'),
    schematicId: OutputName.optional().describe(
      'The output holding the Image Factory schematic of the installer image upgrades use (default `talos_image_factory_schematic_id`).',
    ),
    longhornInstaller: OutputName.optional().describe(
      "The output holding the Longhorn node class's installer image (default `talos_longhorn_installer_image`): those nodes upgrade to it.",
    ),
    /** The declared Talos version's output; `declaredVersions.talos` names it too (set one of the two). */
    talosVersion: OutputName.optional().describe(
      "Deprecated: the declared Talos version's output; set `declaredVersions.talos` instead (one of the two).",
    ),
  })
  .describe(
    "The names of the Terraform outputs the bot reads, where your configuration names them otherwise; each defaults to the runbook's name.",
  );

/**
 * The Terraform outputs that carry the declared versions, when the configuration names them otherwise
 * than the runbook's `talos_version` and `talos_kubernetes_version`. Without it, a plan's declared
 * versions are read from its variables of those names (or its outputs of those names), and the state's
 * from the outputs of those names.
 */
const DeclaredVersions = z
  .strictObject({
    talos: OutputName.optional().describe(
      'The output declaring the Talos version, compared with what the nodes run (default `talos_version`).',
    ),
    kubernetes: OutputName.optional().describe(
      'The output declaring the Kubernetes version, compared with what the nodes run (default `talos_kubernetes_version`).',
    ),
  })
  .describe(
    'The Terraform outputs that carry the declared Talos and Kubernetes versions, e.g. `{talos: talos_version, kubernetes: talos_kubernetes_version}`. Set them when your configuration names them otherwise; a plan is then read by these outputs instead of its `talos_version` and `talos_kubernetes_version` variables.',
  );

/** A git ref as `git fetch` takes it: a branch, a tag or a full commit; never an option, a range or a revision expression. */
const GitRef = z
  .string()
  .regex(
    /^(?!-)(?!.*\.\.)(?!.*\/\/)(?!.*@\{)(?!.*\.lock$)(?!.*[/.]$)[A-Za-z0-9._/-]+$/,
    'must be a branch, a tag or a full commit id such as main, v1.4.0 or refs/heads/main',
  );

/** Where the bot fetches a cluster's Terraform from: https, or a local repository (a path or file://). */
const RepoUrl = z.string().refine((u) => /^https:\/\/[^\s/@]+\/\S+$/.test(u) || /^(?:file:\/\/)?\/[^\s]*$/.test(u), {
  message:
    'must be an https:// URL without credentials in it (the inventory is not secret), or a local repository (an absolute path or file://)',
});

/** The Terraform directory inside the repository: relative, and never above its top. */
const RepoPath = z
  .string()
  // eslint-disable-next-line no-control-regex
  .regex(/^(?!\/)(?!-)[^\u0000-\u001f\u007f]+$/, 'must be a path relative to the top of the repository, such as terraform/production')
  .refine((p) => !p.split('/').includes('..'), { message: 'must not climb out of the repository with ..' });

const TerraformRepo = z
  .strictObject({
    url: RepoUrl.describe('The repository the bot fetches (https without credentials, or a local path).'),
    ref: GitRef.describe('The branch, tag or commit fetched before each plan; the Apply uses the commit fetched.'),
    path: RepoPath.default('.').describe("The cluster's Terraform directory inside the repository, where tofu runs (default: its top)."),
  })
  .describe(
    'Fetch the Terraform from git before each plan instead of using a checkout on a volume: the bot keeps its own copy under terraformDir, and the plan and its apply use the commit fetched for the plan.',
  );

const ClusterSchema = z
  .strictObject({
    environment: z
      .enum(['staging', 'production'])
      .describe(
        'staging or production. Production gets four eyes by default, maintenance windows, and a Terraform apply only of a commit staging applied first; `rehearse etcd-restore` runs only on staging.',
      ),
    channel: z
      .string()
      .regex(
        /^(?:[CG][A-Z0-9]{2,}|#[a-z0-9][a-z0-9_-]{0,79})$/,
        'must be a Slack channel id such as C0MAINTPRD, or a channel name such as #maint-production',
      )
      .describe(
        'The maintenance channel, by id (C0MAINTPRD) or name (#maint-production, resolved to its id at start). Mutating commands for the cluster are taken only there, and its audit threads live there; the bot must be invited.',
      ),
    terraformDir: absolutePath('/srv/infra/terraform/production').describe(
      "Where `tofu output` (credentials, the image schematic, declared versions) and `/talos plan` run: a checkout of the cluster's Terraform, or the bot's own copy with terraformRepo.",
    ),
    /**
     * Optional assertions: the bot finds the nodes itself (talosconfig endpoints, etcd members, the
     * Kubernetes Nodes, Terraform's state). When given, a list is checked against what it finds, and the
     * control planes are the addresses talosctl reaches the cluster through first.
     */
    controlPlanes: z
      .array(Address)
      .min(1, 'list at least one control-plane address, or leave controlPlanes out')
      .optional()
      .describe(
        'Optional assertion: every control-plane address (never the VIP). The bot finds the nodes itself; when given, a disagreement with what it finds fails the health gate, and these are the addresses talosctl reaches first.',
      ),
    /** Optional assertion, as controlPlanes: when given, every worker the bot finds must be in it. */
    workers: z
      .array(Address)
      .optional()
      .describe('Optional assertion, as controlPlanes: when given, a worker the bot finds that is not listed fails the health gate.'),
    installerPlatform: z
      .string()
      .regex(/^[a-z0-9][a-z0-9-]*$/, 'must be an Image Factory platform such as nocloud or metal')
      .refine((p) => p !== 'installer', { message: 'name the platform (nocloud, metal…), never the generic installer' })
      .describe(
        'The Image Factory platform of the installer image upgrades use (`nocloud` on Proxmox), kept in factory.talos.dev/<platform>-installer/<schematic>:<version>; never the generic installer.',
      ),
    hostLabel: z
      .string()
      .min(1)
      .describe(
        'The Kubernetes node label naming the physical (Proxmox) host, e.g. example.org/proxmox-host. Plans and approvals name each node\'s host from it, and the readiness gates judge workload and Longhorn replica placement per host; a node without the label fails the gate "Every node labelled with its Proxmox host".',
      ),
    snapshotDir: absolutePath('/var/backups/talos-etcd').describe(
      'Where etcd snapshots are written, off the cluster (a volume outside it). The bot creates it (mode 0700) at start when it is missing; `/talos doctor` checks it is writable and has room.',
    ),
    operators: SlackIdList.min(1, 'name at least one operator').describe(
      "Who may start operations and click a plan's Start: user ids (U…/W…), user-group ids (S…) or @handles, resolved at start.",
    ),
    approvers: SlackIdList.min(1, 'name at least one approver').describe(
      'Who may approve control-plane steps and applies, and who is paged for them: user ids, user-group ids or @handles, resolved at start.',
    ),
    defaultForChannel: z
      .boolean()
      .default(false)
      .describe('The cluster a command without a cluster name means in a channel that several clusters share.'),
    /** Kubernetes API endpoint as declared (a VIP in production); informs the readiness gates. */
    kubernetesEndpoint: z
      .string()
      .optional()
      .describe('The Kubernetes API endpoint as declared (a VIP in production); the readiness gates check it against the control planes.'),
    /** Addresses of nodes built from the Longhorn installer (`talos_longhorn_installer_image`). */
    longhornNodes: z
      .array(Address)
      .default([])
      .describe('Addresses of nodes built from the Longhorn installer (`talos_longhorn_installer_image`): their upgrades use that image.'),
    /**
     * Workers of the default installer class (`talos_image_factory_schematic_id`), declared for a
     * worker whose running schematic is neither output's and that the bot has no record of.
     */
    defaultClassNodes: z
      .array(Address)
      .default([])
      .describe(
        'Workers of the default installer class, for a worker whose running schematic matches neither output and that the bot has no record of: they upgrade to the default image.',
      ),
    /**
     * The Longhorn volume check of an upgrade (volumes healthy before and after each node). It runs
     * wherever the cluster has Longhorn, which the bot tells from its CRDs; `false` turns it off.
     */
    longhorn: z
      .boolean()
      .optional()
      .describe(
        "`false` turns off the Longhorn volume check of upgrades (volumes healthy before and after each node); it runs wherever Longhorn's CRDs are found.",
      ),
    /** How long a Flux Kustomization may have a revision attempted but not applied, with no failed attempt, before the gate counts it as stalled (a stop whatever was there before), in minutes (default 10). A failed attempt is failing at once, whatever this window. */
    fluxStallMinutes: z
      .number()
      .positive()
      .default(10)
      .describe(
        'Minutes a Flux Kustomization may have a revision attempted but not applied before the health gate counts it as stalled and stops (default 10); a failed attempt fails at once.',
      ),
    /** The Flux path objects must be reconciled from, e.g. `./clusters/production`. */
    fluxPath: z
      .string()
      .optional()
      .describe("The Flux path the cluster's objects must be reconciled from, e.g. `./clusters/production`; the readiness gates check it."),
    /**
     * Four eyes: the approver of a control-plane step may not be the operator who requested or
     * started it. Default: `true` in production, `false` in staging.
     */
    requireDistinctApprover: z
      .boolean()
      .optional()
      .describe(
        'Four eyes: the approver of a step may not be the operator who requested or started it. Default true in production, false in staging.',
      ),
    approvalScope: z
      .enum(['node', 'operation'])
      .optional()
      .describe(
        'What one approval covers: `node` (default) asks before every control plane; `operation` lets one approval cover every control plane of the operation, and asks again after any failure or Retry.',
      ),
    maintenanceWindows: z
      .union([z.literal('always'), z.array(MaintenanceWindow)], {
        error: 'must be a list of windows ({start, durationMinutes, timeZone}) or the word always',
      })
      .default([])
      .describe(
        'When production changes are taken: a list of windows, or `always` (any time, which `/talos doctor` flags). A production cluster that declares neither is refused every mutating operation.',
      ),
    /** Allow production operations outside the declared windows. */
    allowOutsideWindows: z
      .boolean()
      .default(false)
      .describe('Lets production operations run outside the declared windows; `/talos doctor` says so.'),
    terraformOutputs: TerraformOutputNames.optional(),
    declaredVersions: DeclaredVersions.optional(),
    /** The health gate and etcd snapshots on a cron schedule (see schedules.ts). */
    schedules: ClusterSchedules.optional().describe(
      'The health gate and etcd snapshots on a cron schedule, posted to the channel (a day thread), with snapshot retention.',
    ),
    /** The name of each node, by address (`10.0.30.12: talos-prd-cp-2`), so commands take the name as well as the address. */
    nodeNames: z
      .record(Address, z.string().regex(/^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/, 'node names are lower-case letters, digits and dashes'))
      .optional()
      .describe(
        'The name of each node by address (`10.0.30.12: talos-prd-cp-2`), used where neither Kubernetes nor etcd names the node (one that is down or not yet joined), so commands take that name and messages show it. The names Kubernetes and etcd report come first.',
      ),
    /**
     * `{url, ref, path}`: the bot fetches `ref` of `url` before each plan into its own copy under
     * `terraformDir` and runs tofu in `path` of it; the reviewed commit is the fetched one.
     */
    terraformRepo: TerraformRepo.optional(),
    /**
     * The estate's Terraform does not tie each node's `talos_machine_configuration_apply` to its VM
     * (`replace_triggered_by`): a node replacement names the configuration apply with `-replace` beside
     * the VM, so the new VM gets its machine configuration. Default: the tie is required.
     */
    replaceConfigApply: z
      .boolean()
      .optional()
      .describe(
        "`true` when the Terraform does not tie each node's machine-configuration apply to its VM (`replace_triggered_by`): `/talos replace` then names that apply with `-replace` beside the VM. Default: the tie is required, and a replace plan without it is refused.",
      ),
  })
  .check((ctx) => {
    const all = [...(ctx.value.controlPlanes ?? []), ...(ctx.value.workers ?? [])];
    // Only both lists together say which addresses are no node of the cluster.
    const listed = ctx.value.controlPlanes !== undefined && ctx.value.workers !== undefined;
    const seen = new Set<string>();
    for (const address of all) {
      if (seen.has(address)) {
        ctx.issues.push({ code: 'custom', input: address, path: ['controlPlanes'], message: `address ${address} is listed twice` });
      }
      seen.add(address);
    }
    const legacy = ctx.value.terraformOutputs?.talosVersion;
    if (legacy !== undefined && ctx.value.declaredVersions?.talos !== undefined)
      ctx.issues.push({
        code: 'custom',
        input: legacy,
        path: ['terraformOutputs', 'talosVersion'],
        message: `both terraformOutputs.talosVersion and declaredVersions.talos name the declared Talos version's output: keep declaredVersions.talos (${ctx.value.declaredVersions.talos}) and remove terraformOutputs.talosVersion`,
      });
    declaredWindows(ctx.value.maintenanceWindows).forEach((window, i) => {
      const problem = windowProblem(window);
      if (problem !== undefined) ctx.issues.push({ code: 'custom', input: window, path: ['maintenanceWindows', i], message: problem });
    });
    const named = new Map<string, string>();
    // Without node lists the bot learns the nodes at run time: an address here is checked then, not now.
    for (const [address, name] of Object.entries(ctx.value.nodeNames ?? {})) {
      if (listed && !seen.has(address))
        ctx.issues.push({
          code: 'custom',
          input: address,
          path: ['nodeNames', address],
          message: `${address} is not a node of this cluster`,
        });
      const other = named.get(name);
      if (other !== undefined)
        ctx.issues.push({ code: 'custom', input: name, path: ['nodeNames', address], message: `${name} also names ${other}` });
      named.set(name, address);
    }
    for (const address of ctx.value.longhornNodes) {
      if (listed && !seen.has(address)) {
        ctx.issues.push({ code: 'custom', input: address, path: ['longhornNodes'], message: `${address} is not a node of this cluster` });
      }
    }
    for (const address of ctx.value.defaultClassNodes) {
      if (listed && !seen.has(address)) {
        ctx.issues.push({
          code: 'custom',
          input: address,
          path: ['defaultClassNodes'],
          message: `${address} is not a node of this cluster`,
        });
      } else if (ctx.value.longhornNodes.includes(address)) {
        ctx.issues.push({
          code: 'custom',
          input: address,
          path: ['defaultClassNodes'],
          message: `${address} is also in longhornNodes: a node is of one installer class`,
        });
      }
    }
  })
  // A default that depends on another field: production gets four eyes unless it says otherwise.
  // The node lists read as empty until a session replaces them with the observed nodes; what the file
  // asserted stays in `declared`, to be checked against the observation.
  .transform(({ controlPlanes, workers, ...c }) => ({
    ...c,
    controlPlanes: controlPlanes ?? [],
    workers: workers ?? [],
    declared: {
      ...(controlPlanes === undefined ? {} : { controlPlanes }),
      ...(workers === undefined ? {} : { workers }),
      ...(c.nodeNames === undefined ? {} : { nodeNames: c.nodeNames }),
    } as DeclaredNodes,
    requireDistinctApprover: c.requireDistinctApprover ?? c.environment === 'production',
  }));

/** What the inventory file itself says of the nodes: assertions, each absent when the file leaves it out. */
export interface DeclaredNodes {
  controlPlanes?: string[] | undefined;
  workers?: string[] | undefined;
  nodeNames?: Record<string, string> | undefined;
}

const ClusterName = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'cluster names are lower-case letters, digits and dashes');

export const InventorySchema = z.strictObject({
  clusters: z
    .record(ClusterName, ClusterSchema)
    .refine((c) => Object.keys(c).length > 0, { message: 'declare at least one cluster' })
    .describe('The clusters the bot manages, by the name commands use (`/talos health production`).'),
  talosSupport: TalosSupport.optional(),
});

export type ClusterConfig = Omit<z.infer<typeof ClusterSchema>, 'declared'> & {
  name: string;
  /**
   * What the inventory file said of the nodes, kept when a session replaces the lists with the observed
   * nodes. Absent on a cluster built in code: its lists are then what was declared (see `declaredNodes`).
   */
  declared?: DeclaredNodes;
  /** Old spellings the file uses for this cluster (e.g. `schedules.snapshot.timezone`), warned about at start. */
  deprecatedKeys?: string[];
};

export interface Inventory {
  clusters: ClusterConfig[];
  /** The operator's rows of the support table (`talosSupport`), merged over the built-in one by `supportTable` (src/talos/compatibility.ts). */
  talosSupport?: TalosMinorSupport[];
}

/** The inventory's JSON Schema (what a file may say, before defaults), for editors and for the unknown-key suggestions. */
export function inventoryJsonSchema(): Record<string, unknown> {
  return z.toJSONSchema(InventorySchema, { io: 'input', target: 'draft-2020-12' });
}

/** docs/inventory.schema.json as `npm run docs:schema` writes it. */
export function renderInventorySchema(): string {
  const schema = {
    ...inventoryJsonSchema(),
    title: 'talos-chatops cluster inventory (CLUSTERS_FILE)',
    description: 'Generated from src/config/inventory.ts by `npm run docs:schema`; docs/configuring.md explains each field.',
  };
  return `${JSON.stringify(schema, null, 2)}\n`;
}

let schemaForHints: SchemaNode | undefined;

/**
 * A value that fits none of a union's forms, as the form it was written in reads it: the one form
 * whose failures lie inside the value (a window's misspelt key) rather than at it (not the word
 * `always`). When no single form is that close, the union's own message says what is accepted.
 */
function unionBranch(issue: z.core.$ZodIssue): z.core.$ZodIssue[] {
  if (issue.code !== 'invalid_union') return [issue];
  const inside = issue.errors.filter((form) => form.some((i) => i.path.length > 0 || i.code === 'unrecognized_keys'));
  if (inside.length !== 1) return [issue];
  return inside[0]!.map((i) => ({ ...i, path: [...issue.path, ...i.path] }));
}

/** Schema issues, one line each; an unknown key also says which known key it most likely misspells. */
function schemaProblems(issues: readonly z.core.$ZodIssue[]): string[] {
  return issues.flatMap(unionBranch).flatMap((issue) => {
    const hints = { '': 'the file must be a mapping with a top-level `clusters:` key' };
    if (issue.code !== 'unrecognized_keys') return describeIssues([issue], hints);
    schemaForHints ??= inventoryJsonSchema() as SchemaNode;
    const known = knownKeysAt(schemaForHints, issue.path);
    // One line per unknown key, each with its own fix, so a long list of them stays readable.
    return issue.keys.map((key) => `${describeIssues([{ ...issue, keys: [key] }], hints)[0]!} (${unknownKeyFix(key, known)})`);
  });
}

/** The old spellings a cluster uses, as paths under it, for the start-up warnings. */
function deprecatedKeys(rawCluster: unknown): string[] {
  const schedules = typeof rawCluster === 'object' && rawCluster !== null ? (rawCluster as Record<string, unknown>).schedules : undefined;
  if (typeof schedules !== 'object' || schedules === null) return [];
  return (['healthGate', 'snapshot'] as const).flatMap((name) => {
    const schedule = (schedules as Record<string, unknown>)[name];
    return typeof schedule === 'object' && schedule !== null && Object.hasOwn(schedule, 'timezone') ? [`schedules.${name}.timezone`] : [];
  });
}

/**
 * Parses and validates inventory YAML text; `source` names the file in errors. Every problem is
 * named at once: keys given twice, unknown keys, bad values and the conflicts between clusters.
 */
export function parseInventory(text: string, source: string): Inventory {
  const where = `The cluster inventory ${source}`;
  // uniqueKeys rejects a cluster declared twice instead of silently keeping the last one.
  const doc = parseDocument(text, { uniqueKeys: true, prettyErrors: true });
  const fatal = doc.errors.find((e) => e.code !== 'DUPLICATE_KEY');
  if (fatal !== undefined) throw new ConfigError(where, [`not valid YAML: ${fatal.message.split('\n')[0]}`]);
  let raw: unknown;
  try {
    raw = doc.toJS({ maxAliasCount: 100 });
  } catch (error) {
    throw new ConfigError(where, [`not valid YAML: ${(error as Error).message.split('\n')[0]}`]);
  }
  const duplicates = duplicateKeyProblems(doc, text);
  if ((raw === null || raw === undefined) && duplicates.length === 0) {
    throw new ConfigError(where, ['the file is empty: declare the clusters under a top-level `clusters:` key (see the README)']);
  }
  // A record drops a `__proto__` key without a word: a cluster of that name would silently vanish.
  const rawClusters = typeof raw === 'object' && raw !== null ? (raw as Record<string, unknown>).clusters : undefined;
  const hidden = typeof rawClusters === 'object' && rawClusters !== null && Object.hasOwn(rawClusters, '__proto__');
  const parsed = InventorySchema.safeParse(raw);
  const problems = [
    ...duplicates,
    ...(hidden ? ['clusters.__proto__: cluster names are lower-case letters, digits and dashes'] : []),
    ...(parsed.success ? [] : schemaProblems(parsed.error.issues)),
    ...clusterConflicts(raw),
  ];
  if (!parsed.success || problems.length > 0) throw new ConfigError(where, problems);
  const clusters = Object.entries(parsed.data.clusters).map(([name, c]) => {
    const old = deprecatedKeys((rawClusters as Record<string, unknown>)[name]);
    return old.length > 0 ? { ...c, name, deprecatedKeys: old } : { ...c, name };
  });
  return parsed.data.talosSupport === undefined ? { clusters } : { clusters, talosSupport: parsed.data.talosSupport };
}

export function loadInventory(path: string): Inventory {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError('CLUSTERS_FILE', [`cannot read ${path}: ${(error as NodeJS.ErrnoException).code ?? 'error'}`]);
  }
  return parseInventory(text, path);
}

export type ClusterResolution = { ok: true; cluster: ClusterConfig } | { ok: false; reason: string };

/**
 * The cluster a command means: the named one, else the one whose channel it came from.
 * A name that does not exist, or a channel that belongs to no cluster (or to several
 * without a default), is refused with what to type instead.
 */
export function resolveCluster(inventory: Inventory, channel: string, name: string | undefined): ClusterResolution {
  const names = inventory.clusters.map((c) => c.name).join(', ');
  if (name !== undefined) {
    const cluster = inventory.clusters.find((c) => c.name === name);
    if (!cluster) return { ok: false, reason: `There is no cluster named \`${name}\`. Known clusters: ${names}.` };
    return { ok: true, cluster };
  }
  const here = inventory.clusters.filter((c) => c.channel === channel);
  if (here.length === 0) {
    return {
      ok: false,
      reason: `This channel belongs to no cluster. Run the command in a cluster's maintenance channel, or name the cluster (${names}).`,
    };
  }
  if (here.length === 1) return { ok: true, cluster: here[0]! };
  const preferred = here.find((c) => c.defaultForChannel);
  if (preferred) return { ok: true, cluster: preferred };
  return {
    ok: false,
    reason: `This channel serves several clusters (${here.map((c) => c.name).join(', ')}); name the one you mean, e.g. \`/talos health ${here[0]!.name}\`.`,
  };
}

/** What the inventory asserts of the cluster's nodes (see `ClusterConfig.declared`). */
export function declaredNodes(cluster: ClusterConfig): DeclaredNodes {
  return cluster.declared ?? { controlPlanes: cluster.controlPlanes, workers: cluster.workers, nodeNames: cluster.nodeNames };
}

export function allNodes(cluster: ClusterConfig): string[] {
  return [...cluster.controlPlanes, ...cluster.workers];
}
