import type { V1LabelSelector, V1Node, V1Pod, V1PodDisruptionBudget } from '@kubernetes/client-node';
import type { CheckResult } from '../check-result.ts';
import { joinProblems, plural } from './format.ts';
import { cnpgPrimaryBudgetCluster, judgeCnpgPrimary } from './cnpg.ts';
import { judgeInstanceManagerBudget, type LonghornView } from './longhorn.ts';
import { upgradesThroughLifecycleService } from '../../talos/upgrade-flow.ts';

const ID = 'disruption-budgets';

/** What the budgets are judged against: the nodes the operation will drain and what runs there. */
export interface DrainView {
  /** The nodes the operation will drain, by Kubernetes name, each with the address the inventory knows it by. */
  drain: readonly { name: string; address: string }[];
  pods: readonly V1Pod[];
  nodes: readonly V1Node[];
  /** Longhorn's volumes, replicas and drain policy; `undefined` where Longhorn is not installed. */
  longhorn?: LonghornView;
}

function nameOf(pdb: V1PodDisruptionBudget): string {
  return `${pdb.metadata?.namespace ?? 'default'}/${pdb.metadata?.name ?? '<unnamed>'}`;
}

function counts(pdb: V1PodDisruptionBudget): string {
  const s = pdb.status;
  return `disruptionsAllowed=${s?.disruptionsAllowed ?? '?'} (currentHealthy ${s?.currentHealthy ?? '?'} / desiredHealthy ${s?.desiredHealthy ?? '?'})`;
}

/**
 * Whether the status describes the current spec. The eviction API refuses evictions covered by
 * a budget whose status lags its spec, so a stale budget blocks a drain until the disruption
 * controller catches up.
 */
function staleness(pdb: V1PodDisruptionBudget): string | undefined {
  const generation = pdb.metadata?.generation;
  const observed = pdb.status?.observedGeneration;
  if (pdb.status === undefined) return 'no status yet';
  if (generation !== undefined && (observed === undefined || observed < generation)) {
    return `status is stale (observedGeneration ${observed ?? 'none'} < generation ${generation}): evictions wait for the disruption controller`;
  }
  return undefined;
}

/** Label-selector semantics of policy/v1: an empty selector selects every pod of the namespace. */
export function selects(selector: V1LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return false;
  const byLabel = Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
  return (
    byLabel &&
    (selector.matchExpressions ?? []).every((e) => {
      const value = labels[e.key];
      switch (e.operator) {
        case 'In':
          return value !== undefined && (e.values ?? []).includes(value);
        case 'NotIn':
          return value === undefined || !(e.values ?? []).includes(value);
        case 'Exists':
          return value !== undefined;
        case 'DoesNotExist':
          return value === undefined;
        default:
          return false;
      }
    })
  );
}

function unmanaged(pod: V1Pod): boolean {
  return (
    pod.metadata?.annotations?.['kubernetes.io/config.mirror'] === undefined &&
    pod.metadata?.ownerReferences?.find((o) => o.controller === true) === undefined
  );
}

/**
 * Pods a Talos drain evicts: both drains skip mirror pods and DaemonSet pods, and a finished pod
 * holds nothing up. Pods without a controller are skipped by the drain inside the node (Talos
 * < 1.13), and evicted by talosctl's own drain (Talos ≥ 1.13: cmd/talosctl/pkg/talos/nodedrain/nodedrain.go
 * at v1.13.9 runs the kubectl drain library with `Force: true`), so nothing brings them back.
 */
function drained(pod: V1Pod, clientSide: boolean): boolean {
  if (pod.metadata?.annotations?.['kubernetes.io/config.mirror'] !== undefined) return false;
  const controller = pod.metadata?.ownerReferences?.find((o) => o.controller === true);
  if (controller === undefined ? !clientSide : controller.kind === 'DaemonSet') return false;
  const phase = pod.status?.phase;
  return phase !== 'Succeeded' && phase !== 'Failed';
}

/** Talos ≥ 1.13 on the node: its upgrade drains from talosctl, which deletes pods without a controller. */
export function drainsClientSide(node: V1Node | undefined): boolean {
  const version = /Talos \((v?\d+\.\d+[^)]*)\)/.exec(node?.status?.nodeInfo?.osImage ?? '')?.[1];
  return version !== undefined && upgradesThroughLifecycleService(version);
}

/** Longhorn's own budget for an instance manager, and the node it protects. */
export function instanceManagerNode(pdb: V1PodDisruptionBudget): string | undefined {
  const labels = pdb.spec?.selector?.matchLabels ?? {};
  return labels['longhorn.io/component'] === 'instance-manager' ? labels['longhorn.io/node'] : undefined;
}

function ready(node: V1Node): boolean {
  return node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
}

/**
 * Whether the drains of the operation can proceed through every PodDisruptionBudget. Longhorn's
 * instance-manager budgets allow no disruption at rest by design; they are judged by Longhorn's
 * rule ({@link judgeInstanceManagerBudget}) for each node to drain. Any other budget that allows
 * no disruption fails the check when it selects a pod the drain evicts on a node to drain, and is
 * a warning otherwise. A stale status or a `DisruptionAllowed` condition in SyncFailed is a
 * warning. Failed evidence names the budget and the node:
 * `PDB apps/web: disruptionsAllowed=0 (…) and apps/web-0 runs on talos-prd-cp-1 (10.0.30.11): draining that node would block`.
 */
export function evaluateDisruptionBudgets(pdbs: readonly V1PodDisruptionBudget[], view: DrainView): CheckResult {
  const title = 'PodDisruptionBudgets';
  const drainNames = new Map(view.drain.map((d) => [d.name, `${d.name} (${d.address})`]));
  const blocking: string[] = [];
  const notes: string[] = [];
  const longhornLines: string[] = [];
  // What the drains will do on the way: switchovers and Longhorn's rebuilds, for the plan.
  const announce: string[] = [];
  const protectedNodes = new Set(pdbs.map(instanceManagerNode).filter((n): n is string => n !== undefined));
  const protectedNode = (name: string): boolean => {
    const node = view.nodes.find((n) => n.metadata?.name === name);
    return node !== undefined && ready(node) && node.spec?.unschedulable !== true && protectedNodes.has(name);
  };
  const nodeOf = (name: string): V1Node | undefined => view.nodes.find((n) => n.metadata?.name === name);
  const clientSide = (name: string): boolean => drainsClientSide(nodeOf(name));
  const removes =
    (drainNode: string) =>
    (namespace: string, name: string): boolean | undefined => {
      const pod = view.pods.find((p) => p.metadata?.namespace === namespace && p.metadata?.name === name && p.spec?.nodeName === drainNode);
      return pod === undefined ? undefined : drained(pod, clientSide(drainNode));
    };
  // A pod without a controller on a node talosctl drains is deleted and never comes back: the
  // operator moves or recreates it under a controller first (kubectl drain refuses it without --force too).
  for (const [node, label] of drainNames) {
    if (!clientSide(node)) continue;
    const bare = view.pods.filter((p) => p.spec?.nodeName === node && unmanaged(p) && drained(p, true));
    for (const pod of bare) {
      blocking.push(
        `pod ${pod.metadata?.namespace}/${pod.metadata?.name} on ${label} has no controller: the Talos ≥ 1.13 drain deletes it and nothing recreates it. Move it under a Deployment or StatefulSet, or delete it yourself, then retry`,
      );
    }
  }
  const longhornNodes = [...protectedNodes];
  let longhornBudgets = 0;
  let cnpgBudgets = 0;
  for (const pdb of pdbs) {
    const status = pdb.status;
    const stale = staleness(pdb);
    if (stale !== undefined) notes.push(`PDB ${nameOf(pdb)}: ${stale}`);
    const sync = status?.conditions?.find((c) => c.type === 'DisruptionAllowed' && c.reason === 'SyncFailed');
    if (sync !== undefined) notes.push(`PDB ${nameOf(pdb)}: SyncFailed${sync.message ? `: ${sync.message}` : ''}`);
    const imNode = instanceManagerNode(pdb);
    if (imNode !== undefined && view.longhorn !== undefined) {
      longhornBudgets += 1;
      const label = drainNames.get(imNode);
      if (label === undefined) continue;
      const judged = judgeInstanceManagerBudget(imNode, view.longhorn, { protectedNode, removes: removes(imNode) }, longhornNodes);
      const line = `PDB ${nameOf(pdb)} (Longhorn's instance manager on ${label}): ${judged.text}`;
      if (judged.level === 'block') blocking.push(`${line}: draining that node would block`);
      else if (judged.level === 'wait') {
        notes.push(line);
        announce.push(`${label}: ${judged.text}.`);
      } else longhornLines.push(line);
      continue;
    }
    const namespace = pdb.metadata?.namespace;
    const cnpg = cnpgPrimaryBudgetCluster(pdb);
    if (cnpg !== undefined && stale === undefined) {
      // CloudNativePG's primary budget allows no disruption by design: judged by CloudNativePG's switchover rule.
      cnpgBudgets += 1;
      for (const [node, label] of drainNames) {
        const judged = judgeCnpgPrimary(namespace ?? 'default', cnpg, node, view.pods, view.nodes);
        if (judged === undefined) continue;
        const line = `PDB ${nameOf(pdb)} (CloudNativePG primary, on ${label}): ${judged.text}`;
        if (judged.level === 'block') blocking.push(`${line}: draining that node would block`);
        else {
          longhornLines.push(line);
          announce.push(`${judged.text.replace(/^the/, 'The')}.`);
        }
      }
      continue;
    }
    const held = view.pods.filter(
      (p) =>
        p.metadata?.namespace === namespace &&
        drainNames.has(p.spec?.nodeName ?? '') &&
        drained(p, clientSide(p.spec?.nodeName ?? '')) &&
        selects(pdb.spec?.selector, p.metadata?.labels ?? {}),
    );
    const allowed = status?.disruptionsAllowed;
    if (allowed !== undefined && allowed > 0) {
      // More of its pods on one node than it lets go: that drain waits for replacements to be ready elsewhere.
      for (const [node, label] of drainNames) {
        const here = held.filter((p) => p.spec?.nodeName === node).length;
        if (here > allowed)
          notes.push(
            `PDB ${nameOf(pdb)}: allows ${allowed} disruption${allowed === 1 ? '' : 's'} but ${here} of its pods run on ${label}: that drain waits until replacements are ready on other nodes`,
          );
      }
      continue;
    }
    if (status?.disruptionsAllowed !== 0 || (status.expectedPods ?? 0) === 0) continue;
    if (held.length === 0) {
      notes.push(
        view.drain.length === 0
          ? `PDB ${nameOf(pdb)}: ${counts(pdb)}; a drain of a node with its pods would block, and is judged before that drain`
          : `PDB ${nameOf(pdb)}: ${counts(pdb)}, but none of its pods runs on a node this operation drains`,
      );
      continue;
    }
    const where = [...new Set(held.map((p) => p.spec!.nodeName!))].map((n) => drainNames.get(n)!);
    const pods = held.map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`).join(', ');
    blocking.push(
      `PDB ${nameOf(pdb)}: ${counts(pdb)} and ${pods} ${held.length === 1 ? 'runs' : 'run'} on ${where.join(', ')}: draining ${where.length === 1 ? 'that node' : 'those nodes'} would block`,
    );
  }
  const evidence = [...blocking, ...notes, ...longhornLines];
  if (blocking.length > 0) {
    const names = blocking.length === 1 ? 'a PodDisruptionBudget would block' : `${blocking.length} PodDisruptionBudgets would block`;
    return { id: ID, title, status: 'failed', summary: `${names} the drain: ${joinProblems(blocking)}`, evidence };
  }
  const said = announce.length > 0 ? { announce } : {};
  if (notes.length > 0) return { id: ID, title, status: 'warning', summary: joinProblems(notes), evidence, ...said };
  const longhorn =
    longhornBudgets > 0
      ? `; ${plural(longhornBudgets, 'Longhorn instance-manager budget')} judged by Longhorn's node-drain-policy ${view.longhorn?.drainPolicy ?? ''}`
      : '';
  const moves = longhornLines.filter((l) => l.includes('CloudNativePG primary'));
  const cnpgText =
    cnpgBudgets > 0
      ? `; ${plural(cnpgBudgets, 'CloudNativePG primary budget')} judged by CloudNativePG's switchover${moves.length > 0 ? ` (${moves.map((l) => l.replace(/^.*?: (the primary of .*?) when (.*?) drains.*$/, '$1 when $2 drains')).join('; ')})` : ''}`
      : '';
  const summary =
    pdbs.length === 0
      ? 'no PodDisruptionBudgets'
      : `${plural(pdbs.length, 'PodDisruptionBudget')}, none blocks the drain${longhorn}${cnpgText}`;
  return { id: ID, title, status: 'passed', summary, evidence, ...said };
}
