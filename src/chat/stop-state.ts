import type { Operation, Step } from '../ops/operation.ts';
import type { Block } from '../port/chat-port.ts';
import { context, escapeMrkdwn, section } from './blocks.ts';
import type { Presentation } from './presentation.ts';

/** One node as a stop found it; a field the bot could not read is undefined and reads as "unknown". */
export interface NodeStanding {
  /** The node's address in the inventory. */
  node: string;
  /** Its Kubernetes node name, when the API answered. */
  name?: string;
  /** The Talos version the node reports. */
  version?: string;
  /** The Kubernetes `Ready` condition. */
  ready?: boolean;
  /** `spec.unschedulable`: drained and not yet uncordoned. */
  cordoned?: boolean;
  /** Why a read of the node failed, for the log; the message only says "unknown". */
  errors?: string[];
}

/**
 * etcd as a stop found it, read when the stopped step is about a control plane: the voting members
 * and the healthy ones (addresses), or why it could not be read.
 */
export type EtcdStanding =
  | {
      read: true;
      /** Voting members, from `etcd members`. */
      members: number;
      /** Control-plane addresses whose member answers and sees a leader. */
      healthy: string[];
      /** The control planes asked, so the ones that are not healthy can be named. */
      controlPlanes: string[];
    }
  | { read: false; why: string };

/** The cluster as a stop observed it, one entry per node of the inventory, in its order. */
export interface ClusterStanding {
  nodes: NodeStanding[];
  /** etcd, for a stop at a control plane; undefined when the stop is about no control plane. */
  etcd?: EtcdStanding;
  /** Set when nothing could be read (the bot could not reach the cluster at all). */
  unreachable?: string;
}

/** Slack's 3000 characters of a section, less room for the count of the nodes left out. */
const SECTION_BUDGET = 2950;

/** What this operation did to a node, from its steps. */
export type NodeOutcome = 'upgraded' | 'skipped' | 'failed-after-issue' | 'failed-before-issue' | 'untouched';

/** The steps of `op` about `node`, read in order: the last one that ran decides. */
export function nodeOutcome(op: Operation, node: string): NodeOutcome {
  const steps = op.steps.filter((s) => s.node === node);
  if (steps.some((s) => s.status === 'failed')) {
    return steps.some((s) => s.status === 'failed' && s.issuedAt !== undefined) ? 'failed-after-issue' : 'failed-before-issue';
  }
  if (steps.some((s) => s.status === 'done' && s.issuedAt !== undefined)) return 'upgraded';
  if (steps.some((s) => s.status === 'skipped')) return 'skipped';
  if (steps.some((s) => s.status === 'done')) return 'upgraded';
  if (steps.some((s) => s.status === 'running' && s.issuedAt !== undefined)) return 'failed-after-issue';
  return 'untouched';
}

/** What the outcome reads as; an operation that is no upgrade (a rollback, a removal) changed its node. */
function outcomeText(outcome: NodeOutcome, upgrade: boolean): string {
  const done = upgrade ? 'upgraded' : 'changed';
  const asked = upgrade ? 'upgrade' : 'change';
  return {
    upgraded: `${done} by this operation`,
    skipped: 'skipped (already on the target)',
    'failed-after-issue': `${asked} requested by this operation, then stopped`,
    'failed-before-issue': 'stopped before anything was asked of it',
    untouched: 'not touched by this operation',
  }[outcome];
}

const yesNo = (value: boolean | undefined, yes: string, no: string): string => (value === undefined ? `${yes} unknown` : value ? yes : no);

/** One node's line: name, version, Ready, cordoned, and what this operation did to it. */
export function nodeStandingLine(op: Operation, standing: NodeStanding): string {
  const step = op.steps.find((s) => s.node === standing.node);
  const name = standing.name ?? step?.nodeName;
  const who = name !== undefined && name !== standing.node ? `${name} (${standing.node})` : standing.node;
  const parts = [
    standing.version ?? 'version unknown',
    yesNo(standing.ready, 'Ready', 'NotReady'),
    yesNo(standing.cordoned, 'cordoned', 'not cordoned'),
    outcomeText(nodeOutcome(op, standing.node), op.kind.endsWith('-upgrade')),
  ];
  return `${who}: ${parts.join(' · ')}`;
}

/** How a step that never started is named: its node's name, or its label when it is about no node. */
function stepName(step: Step, presentation: Presentation): string {
  return step.node !== undefined ? (step.nodeName ?? step.node) : presentation.stepLabel(step);
}

/** What the bot did not do: the nodes it did not touch and the other steps that did not start. */
export function notDoneLine(op: Operation, presentation: Presentation): string | undefined {
  const notStarted = op.steps.filter((s) => s.status === 'pending' && s.startedAt === undefined);
  const nodes = [...new Set(notStarted.filter((s) => s.node !== undefined).map((s) => stepName(s, presentation)))];
  const others = notStarted.filter((s) => s.node === undefined).map((s) => stepName(s, presentation));
  const parts: string[] = [];
  if (nodes.length > 0) parts.push(`The bot did not touch ${nodes.join(', ')}.`);
  // A step's label may hold commas of its own.
  if (others.length > 0) parts.push(`Not run: ${others.join('; ')}.`);
  return parts.length === 0 ? undefined : parts.join(' ');
}

/**
 * The cluster's state as a stop leads with it: a line per node (one section, so a phone shows it
 * as a list), then what the bot did not do; and the same as plain text.
 */
export function stopStateBlocks(
  op: Operation,
  standing: ClusterStanding | undefined,
  presentation: Presentation,
): { blocks: Block[]; text: string } {
  const lines = (standing?.nodes ?? []).map((n) => nodeStandingLine(op, n));
  const blocks: Block[] = [];
  const texts: string[] = [];
  if (lines.length > 0) {
    const unreachable = standing?.unreachable !== undefined ? ` (the bot could not read the cluster: ${standing.unreachable})` : '';
    // Whole lines only, within a section's limit; a cluster too large for it says how many more there are.
    let body = `*Nodes now*${escapeMrkdwn(unreachable)}:`;
    let shown = 0;
    for (const line of lines.map((l) => `• ${escapeMrkdwn(l)}`)) {
      if (body.length + line.length + 1 > SECTION_BUDGET) break;
      body += `\n${line}`;
      shown += 1;
    }
    if (shown < lines.length) body += `\n… ${lines.length - shown} more node(s)`;
    blocks.push(section(body));
    texts.push(lines.join('; '));
  }
  const notDone = notDoneLine(op, presentation);
  if (notDone !== undefined) {
    blocks.push(context(escapeMrkdwn(notDone)));
    texts.push(notDone);
  }
  return { blocks, text: texts.join(' ') };
}
