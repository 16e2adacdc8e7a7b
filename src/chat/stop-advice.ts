import type { Operation, Step } from '../ops/operation.ts';
import { formatTime, mentionUser } from './blocks.ts';
import type { Presentation } from './presentation.ts';
import type { ClusterStanding, EtcdStanding } from './stop-state.ts';
import { STOP_BUTTONS_WHO, whoInWords } from './who-may-click.ts';

/** A node as people call it: its Kubernetes name where the stop or the step knows it, else its address. */
export function nodeCalled(op: Operation, standing: ClusterStanding | undefined, address: string): string {
  return standing?.nodes.find((n) => n.node === address)?.name ?? op.steps.find((s) => s.node === address)?.nodeName ?? address;
}

const plural = (count: number, one: string, many: string): string => `${count} ${count === 1 ? one : many}`;

/**
 * etcd in one line: members, the healthy ones, quorum and how many more failures it survives
 * ("2 of 3 members healthy (talos-prd-cp-2 is not) · quorum 2 · survives no further failure"),
 * or that it was not read and why.
 */
export function etcdLine(op: Operation, standing: ClusterStanding | undefined, etcd: EtcdStanding): string {
  if (!etcd.read) return `not read (${etcd.why})`;
  const quorum = Math.floor(etcd.members / 2) + 1;
  const healthy = etcd.healthy.length;
  const down = etcd.controlPlanes.filter((node) => !etcd.healthy.includes(node));
  const notHealthy =
    down.length > 0 ? ` (${down.map((n) => nodeCalled(op, standing, n)).join(', ')} ${down.length === 1 ? 'is' : 'are'} not)` : '';
  const spare = healthy - quorum;
  const survives =
    spare < 0
      ? 'quorum is lost: etcd takes no writes'
      : spare === 0
        ? 'survives no further failure'
        : `survives ${plural(spare, 'more failure', 'more failures')}`;
  return `${healthy} of ${plural(etcd.members, 'member', 'members')} healthy${notHealthy} · quorum ${quorum} · ${survives}`;
}

/** The one action a stop recommends: the button it names and why. */
export interface Recommendation {
  /** `retry`, `rollback` or `cancel`: the button it points to. */
  action: 'retry' | 'rollback' | 'cancel';
  /** The button's words, e.g. "Retry talos-prd-cp-2". */
  label: string;
  why: string;
}

/** The Retry button's words: the node it retries, by name. */
export function retryLabel(op: Operation, standing: ClusterStanding | undefined): string {
  const retried = op.steps.find((s) => s.id === op.retry?.step);
  const name = retried?.node === undefined ? undefined : nodeCalled(op, standing, retried.node);
  if (op.retry?.explicit !== undefined) return name === undefined ? op.retry.explicit : op.retry.explicit.replace('this node', name);
  return name === undefined ? 'Retry' : `Retry ${name}`;
}

/**
 * What the stop recommends, worded by what the Retry will really do (resume by observation):
 * an upgrade that was sent is watched, never sent again while it may be in flight; a node
 * already on the target only gets its checks again; a step that sent nothing runs its checks
 * again before anything is sent. Without a Retry, the Rollback of the node; else Cancel.
 */
export function recommend(
  op: Operation,
  step: Step | undefined,
  standing: ClusterStanding | undefined,
  presentation: Presentation,
  holdsLock = true,
): Recommendation | undefined {
  const retry = op.retry?.state === 'offered' ? op.retry : undefined;
  if (retry !== undefined) {
    const label = retryLabel(op, standing);
    const retried = op.steps.find((s) => s.id === retry.step);
    const name = retried?.node === undefined ? undefined : nodeCalled(op, standing, retried.node);
    if (retry.explicit !== undefined) return { action: 'retry', label, why: `${retry.does ?? 'only an approver tries this node again'}` };
    if (retried === undefined || name === undefined)
      return {
        action: 'retry',
        label,
        why: `it runs ${retried === undefined ? 'the failed step' : presentation.stepLabel(retried)} again: ${retry.does ?? 'nothing was changed by this step'}`,
      };
    if (retried.id !== step?.id)
      return {
        action: 'retry',
        label,
        why: `it runs again from ${presentation.stepLabel(retried)}: ${retry.does ?? 'that step is safe to run again'}`,
      };
    if (retried.issuedAt === undefined)
      return {
        action: 'retry',
        label,
        why: `nothing was sent to ${name}: it runs the checks before ${name} again, and sends nothing unless they pass`,
      };
    // What the step asked of the node, in the words of its operation.
    const request = op.kind.endsWith('-upgrade') ? 'upgrade' : 'request';
    if (retry.resume === 'observe') {
      const runs = standing?.nodes.find((n) => n.node === retried.node)?.version;
      if (runs !== undefined && runs === op.target.version)
        return {
          action: 'retry',
          label,
          why: `${name} already runs ${runs}: it looks at ${name} again and runs only the checks after it; it never re-sends the ${request}`,
        };
      return {
        action: 'retry',
        label,
        why: `it watches ${name} again and never re-sends the ${request} while it may be in flight; it sends it again only if ${name} shows it never arrived (not rebooted, not cordoned)`,
      };
    }
    return { action: 'retry', label, why: retry.does ?? `it sends the ${request} to ${name} again` };
  }
  if (op.failure?.rollback === 'offered') {
    const name = nodeCalled(op, standing, op.failure.node);
    return {
      action: 'rollback',
      label: `Roll back ${name}`,
      why: `this step cannot be run again safely; a rollback puts ${name} back on the version it ran, after its own checks and an approver's click`,
    };
  }
  // An operation without a lock (a snapshot) has no Cancel button: nothing to recommend.
  if (op.stopNonce === undefined || !holdsLock) return undefined;
  return { action: 'cancel', label: 'Cancel', why: 'nothing here can be run again safely; Cancel frees the cluster and undoes nothing' };
}

/** Who may click each button the stop carries, in words. */
export function whoMayClick(op: Operation, buttons: { retry: boolean; rollback: boolean; cancel: boolean }): string {
  const parts: string[] = [];
  if (buttons.retry) parts.push(`Retry: ${whoInWords(STOP_BUTTONS_WHO.retry(op))}`);
  if (buttons.rollback) parts.push(`Roll back: ${whoInWords(STOP_BUTTONS_WHO.rollback)} (an approver then approves it)`);
  if (buttons.cancel) parts.push(`Cancel: ${whoInWords(STOP_BUTTONS_WHO.cancel)}`);
  return parts.length === 0 ? '' : `Who may click: ${parts.join(' · ')}.`;
}

/** The last approval given in the operation: the approver most likely awake. */
function lastApproval(op: Operation): { by: string; at: string } | undefined {
  const given = op.approvals.flatMap((a) => [
    ...(a.by !== undefined && a.at !== undefined && (a.state === 'approved' || a.state === 'spent') ? [{ by: a.by, at: a.at }] : []),
    ...(a.given ?? []),
  ]);
  return given.sort((x, y) => x.at.localeCompare(y.at)).at(-1);
}

/** Who the stop is for: the person who started the operation (and who asked for it, if another), and the approver who approved last (likely awake). */
export function peopleLine(op: Operation): string {
  const starter = op.startedBy ?? op.requestedBy;
  const approval = lastApproval(op);
  const parts = [`${mentionUser(starter)} started it`];
  if (op.requestedBy !== starter) parts.push(`${mentionUser(op.requestedBy)} asked for it`);
  if (approval !== undefined && approval.by !== starter)
    parts.push(`${mentionUser(approval.by)} approved last, ${formatTime(approval.at)}`);
  return parts.join('; ');
}

/** What a Cancel leaves: each version and the nodes that run it ("talos-prd-cp-1, talos-prd-cp-2 on v1.12.11; talos-prd-cp-3 on v1.11.6"). */
export function leftBehind(op: Operation, standing: ClusterStanding | undefined): string | undefined {
  const nodes = standing?.nodes ?? [];
  if (nodes.length === 0) return undefined;
  const byVersion = new Map<string, string[]>();
  for (const n of nodes) {
    const version = n.version ?? 'a version not read';
    byVersion.set(version, [...(byVersion.get(version) ?? []), nodeCalled(op, standing, n.node)]);
  }
  return [...byVersion].map(([version, names]) => `${names.join(', ')} on ${version}`).join('; ');
}
