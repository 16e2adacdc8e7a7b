import type { V1Node } from '@kubernetes/client-node';
import type { CheckResult } from '../check-result.ts';
import { alignColumns, joinProblems, plural } from './format.ts';

const ID = 'nodes';

const UNSCHEDULABLE_TAINT = 'node.kubernetes.io/unschedulable';
const UNAVAILABLE_TAINTS = ['node.kubernetes.io/unreachable', 'node.kubernetes.io/not-ready'];
const PRESSURE_CONDITIONS = ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'NetworkUnavailable'];
const ROLE_LABEL = 'node-role.kubernetes.io/';

function readyCondition(node: V1Node) {
  return node.status?.conditions?.find((c) => c.type === 'Ready');
}

function isCordoned(node: V1Node): boolean {
  return node.spec?.unschedulable === true || (node.spec?.taints ?? []).some((t) => t.key === UNSCHEDULABLE_TAINT);
}

function roles(node: V1Node): string {
  const labels = node.metadata?.labels ?? {};
  const names = Object.keys(labels)
    .filter((key) => key.startsWith(ROLE_LABEL))
    .map((key) => key.slice(ROLE_LABEL.length))
    .filter((name) => name !== '');
  const legacy = labels['kubernetes.io/role'];
  if (legacy !== undefined && !names.includes(legacy)) names.push(legacy);
  return names.length > 0 ? names.sort().join(',') : '<none>';
}

function internalIp(node: V1Node): string {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address ?? '<none>';
}

/** kubectl's STATUS column: `Ready`, `NotReady`, `Unknown`, with `,SchedulingDisabled` when cordoned. */
function statusColumn(node: V1Node): string {
  const ready = readyCondition(node)?.status;
  const base = ready === 'True' ? 'Ready' : ready === 'False' ? 'NotReady' : 'Unknown';
  return isCordoned(node) ? `${base},SchedulingDisabled` : base;
}

function label(node: V1Node): string {
  const name = node.metadata?.name ?? '<unnamed>';
  const ip = internalIp(node);
  return ip === '<none>' ? name : `${name} (${ip})`;
}

/** Why a node is unavailable, empty when it is not. */
function unavailability(node: V1Node): string[] {
  const reasons: string[] = [];
  const ready = readyCondition(node);
  const why = ready?.message === undefined || ready.message === '' ? '' : `: ${ready.message}`;
  if (ready === undefined) reasons.push('no Ready condition');
  else if (ready.status === 'False') reasons.push(`NotReady${why}`);
  else if (ready.status !== 'True') reasons.push(`unreachable (Ready=${ready.status})${why}`);
  if (isCordoned(node)) reasons.push('cordoned (SchedulingDisabled)');
  for (const taint of node.spec?.taints ?? []) {
    if (UNAVAILABLE_TAINTS.includes(taint.key)) reasons.push(`tainted ${taint.key}:${taint.effect}`);
  }
  return reasons;
}

function addressesOf(node: V1Node): string[] {
  return [node.metadata?.name ?? '', ...(node.status?.addresses ?? []).map((a) => a.address)].filter((a) => a !== '');
}

/**
 * The runbook's `kubectl get nodes -o wide` verdict. Failed when a node is NotReady, unreachable
 * (Ready=Unknown), cordoned, tainted unreachable/not-ready, or when an inventory address has no
 * Node. Pressure conditions are a warning. Evidence is one `kubectl get nodes -o wide`-like line
 * per node, then the reasons.
 *
 * @param expectedAddresses every node address from the inventory, matched against Node addresses and names
 */
export function evaluateNodes(nodes: V1Node[], expectedAddresses: string[]): CheckResult {
  const title = 'Kubernetes nodes';
  const table = alignColumns([
    ['NAME', 'STATUS', 'ROLES', 'INTERNAL-IP', 'VERSION', 'OS-IMAGE'],
    ...nodes.map((n) => [
      n.metadata?.name ?? '<unnamed>',
      statusColumn(n),
      roles(n),
      internalIp(n),
      n.status?.nodeInfo?.kubeletVersion ?? '<unknown>',
      n.status?.nodeInfo?.osImage ?? '<unknown>',
    ]),
  ]);
  const problems: string[] = [];
  const notes: string[] = [];
  for (const node of nodes) {
    const reasons = unavailability(node);
    if (reasons.length > 0) problems.push(`${label(node)} ${reasons.join(', ')}`);
    const pressure = (node.status?.conditions ?? []).filter((c) => PRESSURE_CONDITIONS.includes(c.type) && c.status === 'True');
    for (const condition of pressure)
      notes.push(`${label(node)} has ${condition.type}${condition.message ? `: ${condition.message}` : ''}`);
  }
  for (const address of expectedAddresses) {
    if (!nodes.some((n) => addressesOf(n).includes(address))) {
      problems.push(`${address} is in the inventory but no Kubernetes Node has this address`);
    }
  }
  const evidence = [...table, ...problems, ...notes];
  if (problems.length > 0) {
    const unavailable = problems.length === 1 ? 'a node is unavailable' : `${problems.length} nodes are unavailable`;
    return { id: ID, title, status: 'failed', summary: `${unavailable}: ${joinProblems(problems)}`, evidence };
  }
  if (notes.length > 0) return { id: ID, title, status: 'warning', summary: joinProblems(notes), evidence };
  if (nodes.length === 0) return { id: ID, title, status: 'failed', summary: 'Kubernetes lists no nodes', evidence };
  return { id: ID, title, status: 'passed', summary: `${plural(nodes.length, 'node')} Ready and schedulable`, evidence };
}
