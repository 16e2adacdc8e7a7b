/**
 * The modals of guided commands: a playbook's command typed without its version (a version form) or
 * its node (a node picker). A modal only gathers the words of the typed command; its submission is
 * parsed and run as that command. What each form says comes from the playbook's declaration, handed
 * over as a `GuidedForm` by the handler: nothing here knows a playbook by name.
 */
import type { ClusterConfig } from '../config/inventory.ts';
import { allNodes } from '../config/inventory.ts';
import { nodeLabel } from '../config/node-names.ts';
import type { LastLook } from '../rules/node-resolution.ts';
import { roughDuration } from '../time/rough-duration.ts';
import { supportFor, talosSupportMatrixUrl, TALOS_SUPPORT_MATRIX, type SupportTable } from '../talos/compatibility.ts';
import type { Block } from '../port/chat-port.ts';

export const UPGRADE_MODAL = 'talos-guided-upgrade';
export const NODE_MODAL = 'talos-guided-node';

/** A guided form, from its playbook's command declaration. */
export interface GuidedForm {
  /** The command's name, kept in the view's metadata: the submission is read back by it. */
  kind: string;
  /** The modal's title, e.g. `Upgrade Talos`. */
  title: string;
  /** The submit button, e.g. `Plan the upgrade`. */
  submit: string;
  /** The typed command it stands for, shown so the operator learns it (no `<…>`: Slack reads that as a link). */
  typed: string;
}

/** A version form: which releases it offers, and the runbook's review the starter ticks, one checkbox each. */
export interface VersionForm extends GuidedForm {
  releases: 'talos' | 'kubernetes';
  /** The playbook's review items (its texts'), each its own checkbox value. */
  reviewItems: readonly string[];
  /** The review item the bot's records answer when the only target offered was upgraded on staging. */
  rehearsedItem?: string;
}

/** Block and action ids of the modals' inputs: the submission is read by these. */
export const INPUT = { cluster: 'cluster', version: 'version', review: 'review', node: 'node', typedNode: 'typed-node' } as const;

/**
 * What the channel's cluster runs, as its last gate read it, and what that allows: the form then offers
 * only the releases the rules allow from it, the recommended one first, and names the others with why.
 */
export interface RunningNow {
  cluster: string;
  /** The distinct Talos versions the last gate read on the nodes. */
  versions: string[];
  /** How many nodes the last look at the cluster saw, when known. */
  nodes?: number;
  /** Releases the rules refuse from the running version, with the preflight's reason. */
  refused: { version: string; reason: string }[];
  /** The target the form leads with: the newest the rules allow from the one version that runs; none from mixed versions. */
  recommended?: string;
  /** The recommended target's completed staging upgrade, from the bot's records; none when staging has not run it. */
  rehearsal?: { stagingOp?: string; stagingLink?: string };
}

/** "v1.11.6 on all 3 nodes", or the mixed versions: what runs, in the form's words. */
export function runningWords(from: RunningNow): string {
  if (from.versions.length === 1) {
    const on = from.nodes === undefined ? 'on every node' : from.nodes === 1 ? 'on its 1 node' : `on all ${from.nodes} nodes`;
    return `*${from.cluster}* runs Talos ${from.versions[0]} ${on} (its last health gate).`;
  }
  return `*${from.cluster}* runs mixed Talos versions: ${from.versions.join(', ')} (its last health gate). Finish the upgrade to one version first; the preflight checks the path.`;
}

function runningBlocks(from: RunningNow, recommended: string | undefined): Block[] {
  const blocks: Block[] = [{ type: 'section', block_id: 'versions-running', text: { type: 'mrkdwn', text: runningWords(from) } }];
  if (recommended !== undefined) {
    const staging =
      from.rehearsal?.stagingOp === undefined
        ? 'not yet upgraded on staging: the production plan asks for an Override without it'
        : `upgraded on staging in ${from.rehearsal.stagingLink === undefined ? `\`${from.rehearsal.stagingOp}\`` : `<${from.rehearsal.stagingLink}|${from.rehearsal.stagingOp}>`}, as the bot's records show`;
    blocks.push({
      type: 'context',
      block_id: 'versions-recommended',
      elements: [{ type: 'mrkdwn', text: `*Recommended: ${recommended}*, ${staging}.` }],
    });
  }
  // Block Kit has no disabled option: the releases the rules refuse are listed, greyed, never selectable.
  if (from.refused.length > 0)
    blocks.push({
      type: 'context',
      block_id: 'versions-refused',
      elements: [
        { type: 'mrkdwn', text: `Not offered:\n${from.refused.map((r) => `~${r.version}~ ${r.reason}`).join('\n')}`.slice(0, 3000) },
      ],
    });
  return blocks;
}

/** What the version input offers: still being fetched, Image Factory's releases, or none (type it). */
export type VersionChoices =
  | { state: 'loading' }
  /** `support`: the support table with the inventory's rows, for each release's Kubernetes range; default the built-in one. */
  | { state: 'ready'; versions: string[]; support?: SupportTable; from?: RunningNow }
  | { state: 'unavailable'; reason: string };

/** How many releases the version select offers: the newest patch of each supported minor. */
const MAX_VERSIONS = 8;

export function talosReleaseNotesUrl(version: string): string {
  return `https://github.com/siderolabs/talos/releases/tag/${version}`;
}

export { talosSupportMatrixUrl };

export function kubernetesChangelogUrl(minor: string): string {
  return `https://github.com/kubernetes/kubernetes/blob/master/CHANGELOG/CHANGELOG-${minor}.md`;
}

/**
 * The releases worth offering from Image Factory's list: released versions only, the newest
 * patch of each minor the support matrix knows (the runbook upgrades to the latest patch),
 * newest first. Whether one is a valid step from the running version is the preflight's to say.
 */
export function offeredTalosVersions(factoryVersions: string[], support: SupportTable = TALOS_SUPPORT_MATRIX): string[] {
  const newest = new Map<string, [number, string]>();
  for (const raw of factoryVersions) {
    const match = /^v?(\d+)\.(\d+)\.(\d+)$/.exec(raw);
    if (match === null) continue;
    const minor = `${match[1]}.${match[2]}`;
    if (!support.some((row) => row.talos === minor)) continue;
    const patch = Number(match[3]);
    if ((newest.get(minor)?.[0] ?? -1) < patch) newest.set(minor, [patch, `v${minor}.${patch}`]);
  }
  return [...newest.entries()]
    .sort(([a], [b]) => Number(b.split('.')[1]) - Number(a.split('.')[1]))
    .map(([, [, version]]) => version)
    .slice(0, MAX_VERSIONS);
}

function plain(text: string): { type: 'plain_text'; text: string } {
  return { type: 'plain_text', text };
}

function option(text: string, value: string): Block {
  return { text: plain(text.slice(0, 75)), value };
}

function clusterInput(clusters: ClusterConfig[], chosen: string | undefined): Block {
  const options = clusters.map((c) => option(`${c.name} (${c.environment})`, c.name));
  const initial = options.find((o) => o.value === chosen);
  return {
    type: 'input',
    block_id: INPUT.cluster,
    label: plain('Cluster'),
    element: {
      type: 'static_select',
      action_id: INPUT.cluster,
      placeholder: plain('Choose a cluster'),
      options,
      ...(initial === undefined ? {} : { initial_option: initial }),
    },
  };
}

function versionBlocks(form: VersionForm, choices: VersionChoices): Block[] {
  if (form.releases === 'kubernetes') {
    const minors = [...new Set(TALOS_SUPPORT_MATRIX.map((r) => r.kubernetesMax))].slice(-3).reverse();
    return [
      {
        type: 'input',
        block_id: INPUT.version,
        label: plain('Target Kubernetes version'),
        hint: plain('One minor at a time; the preflight checks it against the running Talos.'),
        element: { type: 'plain_text_input', action_id: INPUT.version, placeholder: plain('e.g. v1.35.2'), max_length: 12 },
      },
      {
        type: 'context',
        elements: [
          {
            type: 'mrkdwn',
            text: `Changelogs: ${minors.map((m) => `<${kubernetesChangelogUrl(m)}|Kubernetes ${m}>`).join(' · ')} · Talos <${talosSupportMatrixUrl(`v${TALOS_SUPPORT_MATRIX.at(-1)!.talos}.0`)}|support matrix>`,
          },
        ],
      },
    ];
  }
  if (choices.state === 'loading') {
    return [{ type: 'section', block_id: 'versions-loading', text: { type: 'mrkdwn', text: '_Asking Image Factory for the releases…_' } }];
  }
  if (choices.state === 'unavailable' || choices.versions.length === 0) {
    const why = choices.state === 'unavailable' ? choices.reason : 'Image Factory lists no supported release';
    return [
      {
        type: 'input',
        block_id: INPUT.version,
        label: plain('Target Talos version'),
        hint: plain(`${why}; type the version (the preflight checks it against Image Factory).`.slice(0, 2000)),
        element: { type: 'plain_text_input', action_id: INPUT.version, placeholder: plain('e.g. v1.13.9'), max_length: 12 },
      },
    ];
  }
  const from = choices.from;
  const recommended = from?.recommended;
  if (from !== undefined && choices.versions.length === 0)
    return [
      ...runningBlocks(from, undefined),
      {
        type: 'input',
        block_id: INPUT.version,
        label: plain('Target Talos version'),
        hint: plain('The rules allow none of the listed releases from what runs; type a version only if the list is out of date.'),
        element: { type: 'plain_text_input', action_id: INPUT.version, placeholder: plain('e.g. v1.13.9'), max_length: 12 },
      },
    ];
  const links = choices.versions.map((v) => {
    const row = supportFor(v, choices.support);
    const k8s = row === undefined ? '' : ` (Kubernetes ${row.kubernetesMin}–${row.kubernetesMax})`;
    return `*${v}*${k8s}: <${talosReleaseNotesUrl(v)}|release notes> · <${talosSupportMatrixUrl(v)}|support matrix>`;
  });
  const options = choices.versions.map((v) => option(v === recommended ? `${v} (recommended)` : v, v));
  return [
    ...(from === undefined ? [] : runningBlocks(from, recommended)),
    {
      type: 'input',
      block_id: INPUT.version,
      label: plain('Target Talos version'),
      hint: plain(
        from === undefined
          ? 'The newest patch of each minor. Upgrade one minor at a time; the preflight checks the path.'
          : 'Only the releases the rules allow from what runs. The preflight checks the path again.',
      ),
      element: {
        type: 'static_select',
        action_id: INPUT.version,
        placeholder: plain('Choose a release'),
        options,
        ...(recommended === undefined ? {} : { initial_option: options[0] }),
      },
    },
    { type: 'context', block_id: 'version-links', elements: [{ type: 'mrkdwn', text: links.join('\n') }] },
  ];
}

export interface UpgradeModalInput {
  form: VersionForm;
  /** The clusters the user may act on (operator), in inventory order. */
  clusters: ClusterConfig[];
  /** The channel's cluster, preselected when the user may act on it. */
  channelCluster?: string;
  versions: VersionChoices;
}

/**
 * The review items the bot's records answer, ticked for the starter: "the exact target was tested in
 * staging" when the only target offered was upgraded on staging (the rehearsal line names the operation).
 */
function answeredByRecords(form: VersionForm, choices: VersionChoices): string[] {
  if (form.rehearsedItem === undefined || choices.state !== 'ready' || choices.from === undefined) return [];
  const only = choices.versions.length === 1 ? choices.versions[0] : undefined;
  return only !== undefined && only === choices.from.recommended && choices.from.rehearsal?.stagingOp !== undefined
    ? [form.rehearsedItem]
    : [];
}

/** The version form of a command typed without its version (`/talos upgrade talos`). */
export function upgradeModal(input: UpgradeModalInput): Block {
  const { form } = input;
  const reviewOptions = form.reviewItems.map((item) => option(item, item));
  const answered = answeredByRecords(form, input.versions);
  return {
    type: 'modal',
    callback_id: UPGRADE_MODAL,
    private_metadata: JSON.stringify({ kind: form.kind }),
    title: plain(form.title),
    submit: plain(form.submit),
    close: plain('Cancel'),
    blocks: [
      {
        type: 'section',
        text: {
          type: 'mrkdwn',
          text: `Same as \`${form.typed}\`: the plan appears in the cluster's channel, and nothing changes before its Start.`,
        },
      },
      clusterInput(input.clusters, input.channelCluster),
      ...versionBlocks(form, input.versions),
      {
        type: 'input',
        block_id: INPUT.review,
        label: plain('Runbook review (tick every item)'),
        element: {
          type: 'checkboxes',
          action_id: INPUT.review,
          options: reviewOptions,
          ...(answered.length === 0 ? {} : { initial_options: reviewOptions.filter((o) => answered.includes(String(o['value']))) }),
        },
      },
    ],
  };
}

/** The picker's node input: the inventory's nodes, else those the last look saw (with a typed address beside), else a typed address. */
function nodeInputs(cluster: ClusterConfig, look: LastLook | undefined, now: Date): Block[] {
  const listed = allNodes(cluster);
  const select = (options: Block[], optional: boolean): Block => ({
    type: 'input',
    block_id: INPUT.node,
    label: plain(`Node of ${cluster.name}`),
    ...(optional ? { optional: true } : {}),
    element: { type: 'static_select', action_id: INPUT.node, placeholder: plain('Choose a node'), options },
  });
  if (listed.length > 0)
    return [
      select(
        listed.map((address) => option(nodeLabel(cluster, address), address)),
        false,
      ),
    ];
  // Alone, the typed address is the node input itself; beside the list, an input of its own.
  const typed = (optional: boolean): Block => ({
    type: 'input',
    block_id: optional ? INPUT.typedNode : INPUT.node,
    label: plain(optional ? 'Or type its address' : `Node of ${cluster.name}`),
    ...(optional ? { optional: true } : {}),
    element: {
      type: 'plain_text_input',
      action_id: optional ? INPUT.typedNode : INPUT.node,
      placeholder: plain("The node's IP address, as /talos health lists it"),
    },
  });
  const seen = look === undefined ? [] : [...look.controlPlanes, ...look.workers];
  // Without node lists and before any look at the cluster, no node is known: the address is typed, and the preflight checks it.
  if (seen.length === 0) return [typed(false)];
  // A named node is chosen by its name, so the preflight checks the address still carries it.
  const options = seen.map((address) => {
    const name = look!.nodeNames[address];
    return option(name === undefined ? address : `${name} (${address})`, name ?? address);
  });
  return [
    {
      type: 'context',
      elements: [
        {
          type: 'mrkdwn',
          text: `The nodes as the last look at the cluster saw them, ${roughDuration(now.getTime() - Date.parse(look!.observedAt))} ago; the preflight looks again.`,
        },
      ],
    },
    select(options, true),
    typed(true),
  ];
}

/**
 * The node picker of a command typed without its node (`/talos rollback`): the nodes of the channel's cluster by
 * name and address, from the inventory or, when it lists none, from the last look at the cluster.
 */
export function nodePickerModal(form: GuidedForm, cluster: ClusterConfig, look?: LastLook, now: Date = new Date()): Block {
  return {
    type: 'modal',
    callback_id: NODE_MODAL,
    private_metadata: JSON.stringify({ kind: form.kind, cluster: cluster.name }),
    title: plain(form.title),
    submit: plain(form.submit),
    close: plain('Cancel'),
    blocks: [
      {
        type: 'section',
        text: { type: 'mrkdwn', text: `Same as \`${form.typed}\` on *${cluster.name}*: the plan appears in its channel.` },
      },
      ...nodeInputs(cluster, look, now),
    ],
  };
}

/** What a submitted guided modal asks for, read from its state; undefined fields were left empty. */
export interface GuidedSubmission {
  /** The command's name the form was opened for, as its metadata says (checked against the registry by the handler). */
  kind: string | undefined;
  cluster?: string;
  version?: string;
  node?: string;
  /** The review items ticked. */
  reviewed: string[];
}

type StateValues = Record<
  string,
  Record<string, { value?: string | null; selected_option?: { value: string } | null; selected_options?: { value: string }[] }>
>;

/** Reads a submitted view; nothing in it is trusted (the command built from it is parsed and authorized as typed). */
export function readSubmission(view: { private_metadata?: string; state?: { values?: unknown } }): GuidedSubmission {
  let meta: { kind?: unknown; cluster?: unknown } = {};
  try {
    meta = JSON.parse(view.private_metadata ?? '{}') as typeof meta;
  } catch {
    meta = {};
  }
  const values = (view.state?.values ?? {}) as StateValues;
  const field = (id: string): string | undefined => {
    const entry = values[id]?.[id];
    const value = entry?.selected_option?.value ?? entry?.value ?? undefined;
    return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
  };
  const kind = typeof meta.kind === 'string' ? meta.kind : undefined;
  const cluster = field(INPUT.cluster) ?? (typeof meta.cluster === 'string' ? meta.cluster : undefined);
  const reviewed = (values[INPUT.review]?.[INPUT.review]?.selected_options ?? []).map((o) => o.value);
  // A chosen node comes first; the typed address is the way to a node the list does not show.
  return { kind, cluster, version: field(INPUT.version), node: field(INPUT.node) ?? field(INPUT.typedNode), reviewed };
}

/** The review items left unticked. */
export function unticked(items: readonly string[], reviewed: string[]): string[] {
  return items.filter((item) => !reviewed.includes(item));
}
