import type { ClusterSummary } from '../ops/cluster-summary.ts';
import type { OperationState } from '../ops/operation.ts';
import { clusterSummaryLine } from '../chat/status-message.ts';
import { actions, context, escapeMrkdwn, formatTime, header, mentionUser, section, truncate } from '../chat/blocks.ts';
import { HOME_ACTION } from '../chat/buttons.ts';
import type { Block } from '../port/chat-port.ts';
import type { HomeView } from '../port/home-publisher.ts';
import type { DeclaredState } from '../health/rules/declared-versions.ts';

export type { HomePublisher, HomeView } from '../port/home-publisher.ts';

/** Block Kit allows a Home tab 100 blocks. */
export const HOME_MAX_BLOCKS = 100;
/** A section field holds 2000 characters. */
const FIELD_LIMIT = 2000;

/** Versions a cluster's nodes run, and where the bot read them. */
export interface VersionReading {
  versions: string[];
  /** ISO time of the reading. */
  at: string;
  /** `health gate`, or the operation that changed them, e.g. `op-3f2a Talos upgrade`. */
  source: string;
}

/** The operation that holds a cluster's lock. */
export interface HomeLock {
  opId: string;
  /** What the operation is, in its kind's words, e.g. `Talos upgrade`. */
  what: string;
  state: OperationState;
  /** The target version or node, e.g. `v1.12.11`. */
  target?: string;
  /** Who started it, or who requested it when it has not started. */
  by: string;
  /** ISO time it started (or was requested). */
  since: string;
  /** Permalink of the operation's thread. */
  link?: string;
}

export interface HomeApproval {
  opId: string;
  /** What the approval allows, e.g. `control plane talos-prd-cp-1 (10.0.30.11)`. */
  what: string;
  requestedAt: string;
  expiresAt: string;
  /** Permalink of the request in the operation's thread. */
  link?: string;
}

export interface HomeGate {
  passed: boolean;
  /** ISO time the gate started. */
  at: string;
  stopReasons: string[];
  /** What runs against what Terraform declares, when the gate compared them. */
  declared?: DeclaredState;
}

/** What the Home shows of one cluster; everything comes from what the bot recorded, nothing is asked of the cluster. */
export interface HomeCluster {
  name: string;
  environment: 'staging' | 'production';
  channel: string;
  talos?: VersionReading;
  kubernetes?: VersionReading;
  /** Absent when no operation holds the cluster. */
  lock?: HomeLock;
  approvals: HomeApproval[];
  lastGate?: HomeGate;
  /** The viewer operates this cluster: its section carries the buttons of the operators' commands. */
  actable?: boolean;
}

/**
 * A cluster whose detail the viewer may not see (they neither operate nor approve it, nor are in
 * its channel): what `/talos status` shows outside the cluster's channel, nothing more.
 */
export interface WithheldCluster {
  withheld: true;
  summary: ClusterSummary;
  /** Permalink of the holder's thread. */
  link?: string;
}

/** One cluster on a viewer's Home: in detail, or withheld. */
export type HomeEntry = HomeCluster | WithheldCluster;

function nameOf(entry: HomeEntry): string {
  return 'withheld' in entry ? entry.summary.cluster : entry.name;
}

function linked(text: string, link: string | undefined): string {
  return link === undefined ? text : `<${link}|${text}>`;
}

function versionsField(label: string, seen: VersionReading | undefined): [string, string] {
  if (seen === undefined || seen.versions.length === 0) return [label, '_not read yet: run `/talos health`_'];
  return [
    label,
    `${escapeMrkdwn(seen.versions.join(', '))}${seen.versions.length > 1 ? ' (mixed)' : ''}\n_${escapeMrkdwn(seen.source)}, ${formatTime(seen.at)}_`,
  ];
}

function lockField(lock: HomeLock | undefined): [string, string] {
  if (lock === undefined) return ['Lock', 'free'];
  const what = `${escapeMrkdwn(lock.what)}${lock.target === undefined ? '' : ` ${escapeMrkdwn(lock.target)}`}`;
  return [
    'Lock',
    `:lock: ${linked(`\`${lock.opId}\``, lock.link)} ${what}, ${lock.state}\nby ${mentionUser(lock.by)} since ${formatTime(lock.since)}`,
  ];
}

function gateField(gate: HomeGate | undefined): [string, string] {
  if (gate === undefined) return ['Last health gate', '_none recorded_'];
  if (gate.passed) return ['Last health gate', `✅ passed ${formatTime(gate.at)}`];
  const reasons = gate.stopReasons.length === 0 ? '' : `\n${gate.stopReasons.map((r) => `• ${escapeMrkdwn(r)}`).join('\n')}`;
  return ['Last health gate', `❌ failed ${formatTime(gate.at)}${reasons}`];
}

/** Drift from what Terraform declares, with the change that clears it; nothing when the last gate did not compare. */
function declaredField(gate: HomeGate | undefined): [string, string][] {
  const declared = gate?.declared;
  if (declared === undefined) return [];
  const label = 'Declared in Terraform';
  if (declared.state === 'match') return [[label, '✅ every node runs the declared versions']];
  if (declared.state === 'drift')
    return [
      [
        label,
        `⚠️ *drift*: ${escapeMrkdwn(declared.lines.join('; '))}
To clear it, ${escapeMrkdwn(declared.fixes.join('; and '))}`,
      ],
    ];
  return [[label, `⚠️ not compared: ${escapeMrkdwn(declared.lines.join('; '))}`]];
}

function fieldsBlock(pairs: [string, string][]): Block {
  return { type: 'section', fields: pairs.map(([k, v]) => ({ type: 'mrkdwn', text: truncate(`*${k}*\n${v}`, FIELD_LIMIT) })) };
}

function withheldBlocks({ summary, link }: WithheldCluster): Block[] {
  const links = new Map(summary.holder === undefined || link === undefined ? [] : [[summary.holder, link]]);
  return [
    { type: 'divider' },
    section(clusterSummaryLine(summary, links)),
    context(
      `Its versions, lock, approvals and health gates are shown to its operators, approvers and the members of <#${summary.channel}>.`,
    ),
  ];
}

/**
 * An operator's buttons for one cluster: each stands for a `/talos` command on it, checked again
 * when clicked. Their value is the cluster's name.
 */
function actionsBlock(cluster: HomeCluster): Block {
  const value = cluster.name;
  return actions(`home-actions-${cluster.name}`, [
    { text: 'Run the health gate', actionId: HOME_ACTION.gate, value },
    { text: 'Upgrade Talos…', actionId: HOME_ACTION.upgradeTalos, value },
    { text: 'Upgrade Kubernetes…', actionId: HOME_ACTION.upgradeK8s, value },
    {
      text: 'Snapshot',
      actionId: HOME_ACTION.snapshot,
      value,
      confirm: {
        title: `Snapshot ${cluster.name}?`,
        text: `Takes an etcd snapshot of *${cluster.name}* now, as \`/talos snapshot ${cluster.name}\` does; its progress is posted in <#${cluster.channel}>.`,
        confirm: 'Take snapshot',
        deny: 'Cancel',
      },
    },
  ]);
}

function clusterBlocks(cluster: HomeEntry): Block[] {
  if ('withheld' in cluster) return withheldBlocks(cluster);
  const blocks: Block[] = [
    { type: 'divider' },
    section(`*${cluster.name}* · ${cluster.environment} · <#${cluster.channel}>`),
    fieldsBlock([
      versionsField('Talos', cluster.talos),
      versionsField('Kubernetes', cluster.kubernetes),
      lockField(cluster.lock),
      gateField(cluster.lastGate),
      ...declaredField(cluster.lastGate),
    ]),
  ];
  if (cluster.approvals.length > 0) {
    const lines = cluster.approvals.map(
      (a) =>
        `• ${linked(escapeMrkdwn(a.what), a.link)} (\`${a.opId}\`), asked ${formatTime(a.requestedAt)}, expires ${formatTime(a.expiresAt)}`,
    );
    blocks.push(section(`*Approvals waiting*\n${lines.join('\n')}`));
  }
  if (cluster.actable === true) blocks.push(actionsBlock(cluster));
  return blocks;
}

/**
 * The Home tab: each cluster with its environment, the versions its nodes run, who holds its
 * lock, approvals waiting and the last health gate; a cluster the viewer may not see in detail
 * only as `/talos status` shows it outside its channel. Clusters that would take it past
 * Slack's 100 blocks are named at the end instead.
 */
export function homeView(clusters: readonly HomeEntry[], now: Date): HomeView {
  const blocks: Block[] = [
    header('Talos clusters'),
    context(`As of ${formatTime(now)}. Versions and verdicts are those the bot last recorded.`),
  ];
  const left: string[] = [];
  for (const [i, cluster] of clusters.entries()) {
    const more = clusterBlocks(cluster);
    // One block stays free for the note of what is left out, unless this is the last cluster.
    const room = HOME_MAX_BLOCKS - blocks.length - (i === clusters.length - 1 ? 0 : 1);
    if (left.length > 0 || more.length > room) {
      left.push(nameOf(cluster));
      continue;
    }
    blocks.push(...more);
  }
  if (left.length > 0)
    blocks.push(
      context(`${left.length} more cluster(s) not shown here: ${left.join(', ')}. \`/talos status\` in their channels lists them.`),
    );
  if (clusters.length === 0) blocks.push(section('No clusters in the inventory.'));
  return { type: 'home', callback_id: 'talos-home', blocks };
}
