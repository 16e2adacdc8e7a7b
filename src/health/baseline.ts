import { z } from 'zod';
import type { CheckResult, UnwellItem } from './check-result.ts';
import type { GateReport } from './health-gate.ts';
import { gateVerdict } from './rules/verdict.ts';
import { LonghornVolume, volumeLabel } from './rules/longhorn.ts';
import { limitLines } from './rules/format.ts';
import type { VolumeRebuild } from './rules/longhorn-rebuild.ts';

/** One thing that was already unwell when the gate before the operation ran. */
export const BaselineItem = z.object({
  key: z.string(),
  kind: z.enum(['pod', 'flux', 'longhorn']),
  name: z.string(),
  node: z.string().optional(),
  reason: z.string(),
});
export type BaselineItem = z.infer<typeof BaselineItem>;

/**
 * What was already unwell before the operation touched anything. After each node and at the end,
 * only what is worse than this stops the operation.
 */
export const Baseline = z.object({ takenAt: z.string(), items: z.array(BaselineItem) });
export type Baseline = z.infer<typeof Baseline>;

/**
 * Namespaces whose pods the cluster itself stands on: the control plane's static pods, CoreDNS and
 * Cilium (kube-system, or cilium where it is installed apart), Flux's controllers, Longhorn's
 * manager and instance managers. A pod there that is not ready is never a baseline item: the
 * preflight refuses.
 */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'cilium', 'flux-system', 'longhorn-system'];

function namespaceOf(item: UnwellItem): string {
  return item.name.split('/')[0] ?? '';
}

/** Whether an unwell pod belongs to the cluster's own machinery rather than to a workload. */
export function isSystemCritical(item: UnwellItem): boolean {
  return item.kind === 'pod' && SYSTEM_NAMESPACES.includes(namespaceOf(item));
}

/** Whether no baseline may hold the item: a pod of the cluster's own machinery, a stalled Flux object. */
function refusedBeforehand(item: UnwellItem): boolean {
  return isSystemCritical(item) || item.neverBaseline === true;
}

/** `apps/podinfo-abc: CrashLoopBackOff on worker-1`: an item as the thread and the record show it. */
export function describeItem(item: BaselineItem): string {
  return `${item.name}: ${item.reason}${item.node === undefined ? '' : ` on ${item.node}`}`;
}

/** Longhorn volumes that are not healthy (degraded, faulted, still attaching), as baseline items; a detached volume is not unwell. */
export function longhornItems(volumes: readonly unknown[]): BaselineItem[] {
  return volumes.flatMap((raw) => {
    const parsed = LonghornVolume.safeParse(raw);
    if (!parsed.success) return [];
    const { state, robustness, currentNodeID } = parsed.data.status ?? {};
    if (robustness === 'healthy' || state === 'detached') return [];
    return [
      {
        key: `longhorn:${parsed.data.metadata.name}`,
        kind: 'longhorn' as const,
        name: volumeLabel(parsed.data.metadata.name, [parsed.data]),
        ...(currentNodeID ? { node: currentNodeID } : {}),
        reason: `${robustness ?? 'no robustness yet'}${state ? ` (${state})` : ''}`,
      },
    ];
  });
}

/**
 * Whether a Longhorn volume that is not healthy now is as it was before the operation and no node
 * of the operation made it worse: in the baseline with the same robustness (degraded then and now,
 * not faulted now), and no replica rebuilding, or failing to rebuild, on a node the operation
 * changed. Such a volume is not waited for before or after a node: no rebuild the operation caused
 * is pending on it. Anything else is waited for, up to the rebuild bound.
 */
export function unchangedSinceBaseline(rebuild: VolumeRebuild, baseline: Baseline | undefined, changedNodes: readonly string[]): boolean {
  if (rebuild.name === undefined) return false;
  const before = baseline?.items.find((i) => i.key === `longhorn:${rebuild.name}`);
  if (before === undefined || before.reason !== rebuild.robustness) return false;
  if (rebuild.rebuilding.some((r) => changedNodes.includes(r.node))) return false;
  return !rebuild.errors.some((e) => changedNodes.some((n) => e.includes(`replica on ${n} `)));
}

/**
 * The baseline of a gate's report: every pod and Flux object it found unwell, and the Longhorn
 * volumes given. System-critical pods and stalled Flux objects are left out: they are refusals
 * (see {@link baselineRefusals}).
 */
export function takeBaseline(report: GateReport, at: string, longhornVolumes: readonly unknown[] = []): Baseline {
  const items = report.checks
    .flatMap((c) => c.unwell ?? [])
    .filter((item) => !refusedBeforehand(item))
    .map(({ key, kind, name, node, reason }) => ({ key, kind, name, ...(node === undefined ? {} : { node }), reason }));
  return { takenAt: at, items: [...items, ...longhornItems(longhornVolumes)] };
}

/**
 * What a baseline cannot tolerate in the gate before an operation: a pod of the cluster's own
 * machinery that is not ready, a stalled Flux object (the runbook's stop). Failed checks that do
 * not judge item by item (a node unavailable, etcd) refuse on their own.
 */
export function baselineRefusals(report: GateReport): string[] {
  const unwell = report.checks.flatMap((c) => c.unwell ?? []);
  const critical = unwell.filter(isSystemCritical);
  const stalled = unwell.filter((item) => item.neverBaseline === true && !isSystemCritical(item));
  return [
    ...(critical.length === 0
      ? []
      : [
          `a pod of the cluster's own machinery (${SYSTEM_NAMESPACES.join(', ')}) is not ready, which no baseline tolerates: ${limitLines(critical.map(describeItem), 5).join('; ')}`,
        ]),
    ...(stalled.length === 0
      ? []
      : [`Flux is stalled, which the runbook stops on and no baseline tolerates: ${limitLines(stalled.map(describeItem), 5).join('; ')}`]),
  ];
}

export interface BaselineJudgement {
  /** Stop reasons: what was well before and is not now, and anything unwell on the nodes just changed. */
  regressions: string[];
  /** What is unwell now and was already before the operation, off the nodes just changed. */
  alreadyFailing: string[];
}

interface JudgeOptions {
  /** The nodes the operation just changed (addresses or Kubernetes names): what is unwell there stops, baseline or not. */
  nodes: readonly string[];
}

/** The baseline's items counted by key: a ReplicaSet with two crash-looping pods tolerates two, not a third. */
function tolerance(baseline: Baseline): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of baseline.items) counts.set(item.key, (counts.get(item.key) ?? 0) + 1);
  return counts;
}

interface CheckJudgement extends BaselineJudgement {
  check: CheckResult;
}

/** One check against the baseline; `left` is the tolerance still unspent, shared by the report's checks. */
function judgeCheck(check: CheckResult, left: Map<string, number>, nodes: readonly string[]): CheckJudgement {
  const alreadyFailing: string[] = [];
  const regressions: string[] = [];
  for (const item of check.unwell ?? []) {
    const onChanged = item.node !== undefined && nodes.includes(item.node);
    const tolerated = left.get(item.key) ?? 0;
    if (!onChanged && tolerated > 0) {
      left.set(item.key, tolerated - 1);
      alreadyFailing.push(describeItem(item));
    } else if (item.stops) {
      const why = onChanged
        ? tolerated > 0
          ? ' (on a node just changed; it was already failing before the operation)'
          : ' (on a node just changed)'
        : '';
      regressions.push(`${describeItem(item)}${why}`);
    }
  }
  if (check.status !== 'failed') return { check, regressions: [], alreadyFailing };
  // A failed check that does not judge item by item (nodes, etcd, Cilium), or whose failure no item explains, stops as it is.
  if (check.unwell === undefined || !check.unwell.some((i) => i.stops)) return { check, regressions: [check.summary], alreadyFailing };
  if (regressions.length === 0) {
    return {
      check: {
        ...check,
        status: 'warning',
        settling: false,
        summary: `already failing before the operation: ${alreadyFailing.join('; ')}`,
      },
      regressions: [],
      alreadyFailing,
    };
  }
  const also = alreadyFailing.length > 0 ? ` (and ${alreadyFailing.length} already failing before the operation)` : '';
  const summary = `${check.title}: not as before the operation: ${limitLines(regressions, 5).join('; ')}${also}`;
  return { check: { ...check, summary }, regressions: [summary], alreadyFailing };
}

/**
 * A gate's report judged against the baseline taken before the operation: only regressions stop,
 * that is something that was well before and is not now, or anything unwell on the nodes just
 * changed (even when it was in the baseline: the node may be why). A failure that is not judged
 * item by item (a node, etcd, Cilium) is always a regression.
 */
export function judgeAgainstBaseline(baseline: Baseline, report: GateReport, options: JudgeOptions): BaselineJudgement {
  const left = tolerance(baseline);
  const judged = report.checks.map((c) => judgeCheck(c, left, options.nodes));
  return { regressions: judged.flatMap((j) => j.regressions), alreadyFailing: judged.flatMap((j) => j.alreadyFailing) };
}

/**
 * The report as the operation must read it: a check whose only failures were already there before
 * the operation is a warning, so it neither stops nor waits out the settle window; `passed`,
 * `stopReasons` and `alreadyFailing` follow. Without a baseline (an operation an earlier version
 * planned) the report is as the gate made it.
 */
export function againstBaseline(report: GateReport, baseline: Baseline | undefined, nodes: readonly string[]): GateReport {
  if (baseline === undefined) return report;
  const left = tolerance(baseline);
  const judged = report.checks.map((c) => judgeCheck(c, left, nodes));
  const checks = judged.map((j) => j.check);
  const verdict = gateVerdict(checks);
  return {
    ...report,
    checks,
    passed: verdict.passed,
    stopReasons: verdict.stopReasons,
    alreadyFailing: judged.flatMap((j) => j.alreadyFailing),
  };
}

/** `; already failing before the operation: …` for a step's detail, or nothing. */
export function alreadyFailingNote(report: GateReport): string {
  const items = report.alreadyFailing ?? [];
  return items.length === 0 ? '' : `; already failing before the operation (not a stop): ${limitLines(items, 5).join('; ')}`;
}
