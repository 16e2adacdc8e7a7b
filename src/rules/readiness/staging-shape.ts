import type { V1Node } from '@kubernetes/client-node';
import type { Observed, ReadinessGate } from '../gate-result.ts';

const CONTROL_PLANE_LABELS = ['node-role.kubernetes.io/control-plane', 'node-role.kubernetes.io/master'];

/** A cluster's shape as observed: what a rehearsal on staging must share with production to mean anything. */
export interface ClusterShapeSeen {
  cluster: string;
  controlPlanes: number;
  workers: number;
  /** Distinct host label values among the control-plane nodes; unlabelled ones are not counted. */
  controlPlaneHosts: number;
  /** Distinct host label values among all nodes. */
  hosts: number;
  longhorn: boolean;
}

function hostOf(node: V1Node, hostLabel: string): string | undefined {
  const value = node.metadata?.labels?.[hostLabel];
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The shape from what a session observed: the control planes and workers of `session.cluster`,
 * the hosts from the Kubernetes nodes' host label, Longhorn from its settings being served.
 */
export function shapeOf(
  cluster: { name: string; controlPlanes: readonly string[]; workers: readonly string[]; hostLabel: string },
  nodes: V1Node[],
  longhorn: boolean,
): ClusterShapeSeen {
  const isControlPlane = (n: V1Node) => CONTROL_PLANE_LABELS.some((label) => label in (n.metadata?.labels ?? {}));
  const distinct = (list: V1Node[]) => new Set(list.flatMap((n) => hostOf(n, cluster.hostLabel) ?? [])).size;
  return {
    cluster: cluster.name,
    controlPlanes: cluster.controlPlanes.length,
    workers: cluster.workers.length,
    controlPlaneHosts: distinct(nodes.filter(isControlPlane)),
    hosts: distinct(nodes),
    longhorn,
  };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function describe(shape: ClusterShapeSeen): string {
  return `${shape.cluster}: ${plural(shape.controlPlanes, 'control plane')} on ${plural(shape.controlPlaneHosts, 'host')}, ${plural(shape.workers, 'worker')}, ${plural(shape.hosts, 'host')} in all, Longhorn ${shape.longhorn ? 'installed' : 'not installed'}`;
}

/**
 * The runbook rehearses every risky operation on staging first; a rehearsal only says something
 * about production when staging has production's shape: as many control planes, workers when
 * production has them, control planes on distinct hosts, Longhorn when production runs it.
 * `staging` is `undefined` when the inventory has no staging cluster.
 */
export function stagingShapeGate(production: Observed<ClusterShapeSeen>, staging: Observed<ClusterShapeSeen> | undefined): ReadinessGate {
  const id = 'staging-shape';
  const title = "Staging has production's shape";
  if (staging === undefined)
    return {
      id,
      title,
      status: 'failed',
      summary:
        "the inventory has no staging cluster (environment: staging), so no rehearsal can stand for production: add one of production's shape",
      evidence: production.ok ? [describe(production.value)] : [],
    };
  if (!production.ok)
    return { id, title, status: 'failed', summary: `could not read production's shape: ${production.error}`, evidence: [production.error] };
  if (!staging.ok)
    return {
      id,
      title,
      status: 'failed',
      summary: `could not read the staging cluster's shape: ${staging.error}. Make staging reachable, then check again`,
      evidence: [describe(production.value), `staging: ${staging.error}`],
    };
  const p = production.value;
  const s = staging.value;
  const evidence = [`production ${describe(p)}`, `staging ${describe(s)}`];
  const changes: string[] = [];
  if (s.controlPlanes !== p.controlPlanes)
    changes.push(`run ${plural(p.controlPlanes, 'control plane')} on ${s.cluster} (it has ${s.controlPlanes})`);
  if (p.workers > 0 && s.workers === 0) changes.push(`add a worker to ${s.cluster}, as ${p.cluster} has ${plural(p.workers, 'worker')}`);
  const productionApart = p.controlPlaneHosts === p.controlPlanes;
  if (productionApart && s.controlPlaneHosts < s.controlPlanes)
    changes.push(
      `put each control plane of ${s.cluster} on its own host, as in ${p.cluster} (its ${plural(s.controlPlanes, 'control plane')} carry ${plural(s.controlPlaneHosts, 'distinct host label')})`,
    );
  if (p.longhorn && !s.longhorn) changes.push(`install Longhorn on ${s.cluster}, as ${p.cluster} runs it`);
  if (changes.length > 0)
    return {
      id,
      title,
      status: 'failed',
      summary: `${s.cluster} is not shaped like ${p.cluster}, so its rehearsals do not stand for production: ${changes.join('; ')}`,
      evidence,
    };
  return { id, title, status: 'passed', summary: `${s.cluster} has ${p.cluster}'s shape`, evidence };
}
