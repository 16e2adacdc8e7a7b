import { errorText } from '../../../src/chat/error-text.ts';
import { outsideWindowRefusal } from '../../../src/chat/window-refusal.ts';
import { allNodes, type ClusterConfig } from '../../../src/config/inventory.ts';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { nodeName } from '../../../src/config/node-names.ts';
import type { RecordedNodeClasses } from '../../../src/ops/node-class-record.ts';
import { doneNodeText, type DoneNode, type UpgradeContinuation } from '../../../src/ops/upgrade-continuation.ts';
import { upgradeOrder } from '../../../src/rules/upgrade-order.ts';
import { judgeVersionMix } from '../../../src/rules/version-mix.ts';
import { checkTalosUpgradePath } from '../../../src/rules/versions.ts';
import { minorOf, supportFor, supportTable, talosSupportsKubernetes, unknownMinorRefusal } from '../../../src/talos/compatibility.ts';
import { findNodeByAddress, kubeNodeView, observeTalosVersions, type KubeNodeView } from '../../../src/talos/observe.ts';
import { heldByRefusal } from '../../engine/held-by.ts';
import { probeSignals } from '../../engine/job-context.ts';
import type { PlaybookDeps } from '../../engine/playbook.ts';
import type { Playbook } from '../../engine/playbook.ts';
import { prefetchTalosctl, talosctlFor } from '../../engine/talosctl-client.ts';
import { hasOtherEndpoint } from '../shared/node-endpoints.ts';
import type { TalosUpgradeData } from './data.ts';
import { talosStagingRehearsal } from './staging-rehearsal.ts';
import { deriveInstallerImages, imageChanges, type InstallerImages } from './installer-images.ts';

/** The bot's record of the node classes; entries that do not parse are logged and left out. */
export async function recordedClasses(deps: PlaybookDeps, cluster: ClusterConfig): Promise<RecordedNodeClasses> {
  const recorded = await deps.nodeClasses.read(cluster.name);
  if (recorded.ignored.length > 0)
    deps.logger.warn({ cluster: cluster.name, nodes: recorded.ignored }, "ignored node class records that are not the bot's");
  return recorded;
}

function ignoredRecordNote(nodes: string[]): string {
  return `The bot's record of the node class of ${nodes.join(', ')} is not one it writes (edited or corrupt), so it was ignored: those nodes' classes come from what they run and the inventory.`;
}

/** The line on each node's installer class and why: the class decides the schematic the node keeps. */
function nodeClassNote(images: InstallerImages): string {
  const label = (c: string): string => (c === 'longhorn' ? 'Longhorn' : 'default');
  const lines = [...images.byNode].map(([node, n]) => `${node}: ${label(n.nodeClass.class)} (${n.nodeClass.because})`);
  return `Installer class of each node, and why: ${lines.join('; ')}.`;
}

/** Whether the nodes' installer classes differ: only then does the plan show them; otherwise they go to the record. */
function classesDiffer(images: InstallerImages): boolean {
  return new Set([...images.byNode.values()].map((n) => n.nodeClass.class)).size > 1;
}

/** How long the node's last upgrade or rollback took, in minutes, from the cluster's records; undefined without one. */
function lastRebootMinutes(history: readonly Operation[], node: string): number | undefined {
  const took = history
    .flatMap((o) => (o.kind === 'talos-upgrade' || o.kind === 'node-rollback' ? o.steps : []))
    .filter((s) => s.node === node && s.status === 'done' && s.startedAt !== undefined && s.endedAt !== undefined)
    .map((s) => ({ at: Date.parse(s.endedAt!), ms: Date.parse(s.endedAt!) - Date.parse(s.startedAt!) }))
    .filter((t) => Number.isFinite(t.ms) && t.ms >= 0)
    .sort((a, b) => b.at - a.at)[0];
  return took === undefined ? undefined : Math.max(1, Math.round(took.ms / 60_000));
}

/**
 * A cluster whose only control plane reboots: what the plan leads with (the API and etcd are down
 * while it reboots, and for about how long), and how the bot copes, for the record.
 */
async function singleControlPlane(
  deps: PlaybookDeps,
  cluster: ClusterConfig,
): Promise<{ consequence: string; mechanics: string } | undefined> {
  const [only] = cluster.controlPlanes;
  if (only === undefined || hasOtherEndpoint(cluster, only)) return undefined;
  const seconds = (ms: number): number => Math.round(ms / 1000);
  const name = nodeName(cluster, only) ?? only;
  const minutes = lastRebootMinutes(await deps.store.listForCluster(cluster.name, 100), only);
  const howLong =
    minutes === undefined
      ? `; the bot waits up to ${Math.round(deps.timeouts.nodeReadyMs / 60_000)} min for it to come back`
      : `, about ${minutes} min (its last upgrade took that long)`;
  return {
    consequence: `⚠ Only control plane: the Kubernetes API and etcd are down while ${name} reboots${howLong}`,
    mechanics:
      `${only} is the only control plane: while it reboots, talosctl has no other endpoint. ` +
      `Its upgrade is asked for without waiting on the connection (talosctl upgrade --wait=false; a --wait through the rebooting node can hang, talos#11830; ` +
      `from Talos 1.13 also --drain=false, since talosctl's own drain forces --wait: its pods stop with the reboot, undrained), ` +
      `then the bot polls the node, each poll bounded by ${seconds(deps.timeouts.probeMs)} s, and counts a refused or timed-out call as not back yet until ${seconds(deps.timeouts.nodeReadyMs)} s have passed.`,
  };
}

/**
 * The version whose talosctl the reads start with, from what Kubernetes reports: the one version,
 * or, beside the target, the version the nodes still to upgrade run.
 */
function clientVersionHint(views: Map<string, KubeNodeView>, target: string): string | undefined {
  const reported = [...new Set([...views.values()].map((v) => v.osVersion).filter((v): v is string => v !== undefined))];
  if (reported.length === 1) return reported[0];
  const others = reported.filter((v) => v !== target);
  return reported.length === 2 && others.length === 1 ? others[0] : undefined;
}

/** The newest earlier upgrade to `target` whose step upgraded each node, from the bot's records. */
async function earlierUpgrades(deps: PlaybookDeps, op: Operation, target: string): Promise<Map<string, string>> {
  const history = await deps.store.listForCluster(op.cluster, 500);
  const byNode = new Map<string, string>();
  for (const earlier of history) {
    if (earlier.id === op.id || earlier.kind !== 'talos-upgrade' || earlier.target.version !== target) continue;
    for (const step of earlier.steps) {
      if (step.node !== undefined && step.status === 'done' && !byNode.has(step.node)) byNode.set(step.node, earlier.id);
    }
  }
  return byNode;
}

/**
 * The nodes already on the target, each checked to run the schematic the rules give it there
 * (`derived`, from `talosctl get extensions`): a node on the target with another image is not
 * done, and the continuation is refused, saying so.
 */
function judgeDoneNodes(
  done: string[],
  derived: InstallerImages,
  views: Map<string, KubeNodeView>,
  upgradedBy: Map<string, string>,
  target: string,
): { done: DoneNode[]; refusals: string[] } {
  const refusals = derived.refusals.map((reason) => `a node already on ${target}: ${reason}`);
  const nodes: DoneNode[] = [];
  for (const node of done) {
    const n = derived.byNode.get(node);
    if (n === undefined) continue;
    const runs = n.running.reachable ? n.running.schematic : undefined;
    if (runs !== n.schematic) {
      refusals.push(
        `${node} runs ${target} but with ${runs === undefined ? 'no Image Factory schematic' : `schematic ${runs}`}, not ${n.schematic}, ` +
          `the one of its ${n.nodeClass.class} class (${n.nodeClass.because}): it is not done, so the upgrade cannot continue past it; ` +
          `roll it back (\`/talos rollback ${node}\`) or re-install it with ${n.image}, then ask again`,
      );
      continue;
    }
    nodes.push({ node, nodeName: views.get(node)?.name, image: n.image, op: upgradedBy.get(node) });
  }
  return { done: nodes, refusals };
}

/** The plan's line on a continuation: what was done earlier, and what this operation does. */
function continuationNote(continuation: UpgradeContinuation, remaining: number, target: string): string {
  const done = continuation.done.map((d) => doneNodeText(d, true)).join(', ');
  return (
    `A continuation of an earlier upgrade to ${target}: already on ${target} from an earlier upgrade: ${done}. ` +
    `Those nodes get no step; this plan takes a new etcd snapshot, then upgrades the other ${remaining} from ${continuation.from}, with the same approvals as an upgrade.`
  );
}

/**
 * Every preflight check of the runbook, collected rather than stopping at the first, so one
 * refusal lists all that is wrong. A cluster on the target and the one version it upgrades from
 * (an upgrade stopped half-way, then cancelled) is planned as a continuation: only the nodes
 * still on the earlier version get a step.
 */
export const preflight: Playbook['preflight'] = async (deps, cluster, op, session, signal) => {
  const target = op.target.version ?? '';
  const refusals: string[] = [];
  const nodes = allNodes(cluster);
  const probe = probeSignals(deps.timeouts.probeMs, signal);

  // What needs no talosctl first, so a request refused anyway downloads nothing: a minor the table
  // cannot judge, a closed window, a held lock (the last two are checked with the command too, but
  // time passes before the preflight runs; the engine's common checks say the same in the same words).
  const support = supportTable(deps.inventory);
  if (supportFor(target, support) === undefined) {
    return { refusals: [unknownMinorRefusal(minorOf(target), support)], notes: [], steps: [], target: {} };
  }
  const window = outsideWindowRefusal(cluster, deps.now());
  const holder = await deps.lock.holder(cluster.name);
  if (window !== undefined || holder !== undefined) {
    const early = [window, holder === undefined ? undefined : await heldByRefusal(deps, cluster.name, holder)];
    return { refusals: early.filter((r): r is string => r !== undefined), notes: [], steps: [], target: {} };
  }

  const kubeNodes = await session.kube.listNodes(probe());
  const views = new Map(nodes.map((address) => [address, kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel)]));

  // The client must match the nodes still to upgrade; with a directory of binaries the bot picks it.
  const hint = clientVersionHint(views, target);
  let chosen = await talosctlFor(session, hint);
  const versions = await observeTalosVersions(chosen.talosctl, nodes, probe());
  const byVersion = new Map<string, string[]>();
  for (const [node, v] of versions) {
    if (!v.reachable) {
      refusals.push(`${node} does not answer talosctl (${v.error}); every node must be reachable before an upgrade`);
      continue;
    }
    byVersion.set(v.version, [...(byVersion.get(v.version) ?? []), node]);
  }
  const factoryVersions = await deps.factory.versions(probe());
  const mix = judgeVersionMix(byVersion, target, factoryVersions, support);
  if (mix.kind === 'refused') refusals.push(mix.reason);
  const fromVersion = mix.kind === 'one' ? mix.version : mix.kind === 'continuation' ? mix.from : hint;
  if (fromVersion !== hint) chosen = await talosctlFor(session, fromVersion);
  const talosctl = chosen.talosctl;
  const toUpgrade = mix.kind === 'continuation' ? mix.remaining : nodes;

  // What each node runs and the image the rules give it now: a request for the running version re-installs the nodes whose image changed.
  const notes: string[] = [];
  let images: InstallerImages | undefined;
  let continuation: UpgradeContinuation | undefined;
  try {
    const recorded = await recordedClasses(deps, cluster);
    if (recorded.ignored.length > 0) notes.push(ignoredRecordNote(recorded.ignored));
    const derive = (of: string[]): Promise<InstallerImages> =>
      deriveInstallerImages(
        session.outputs,
        cluster,
        talosctl,
        of,
        target,
        { recorded: recorded.byNode, runningVersion: fromVersion },
        probe(),
        deps.factory.registry,
      );
    images = await derive(toUpgrade);
    refusals.push(...images.refusals);
    if (mix.kind === 'continuation') {
      const judged = judgeDoneNodes(mix.done, await derive(mix.done), views, await earlierUpgrades(deps, op, target), target);
      refusals.push(...judged.refusals);
      continuation = { from: mix.from, done: judged.done };
    }
  } catch (error) {
    refusals.push(`cannot derive the installer image: ${errorText(error)}`);
  }
  if (continuation !== undefined) notes.push(continuationNote(continuation, toUpgrade.length, target));
  const changes = images === undefined ? [] : imageChanges(images);
  const path =
    fromVersion === undefined || mix.kind === 'refused'
      ? undefined
      : checkTalosUpgradePath(fromVersion, target, factoryVersions, { imageChanges: changes, support });
  if (path !== undefined && !path.ok) refusals.push(path.reason);
  const reinstall = path?.ok === true && path.kind === 'reinstall';
  if (reinstall && images !== undefined) {
    const what = changes.map((node) => {
      const n = images.byNode.get(node)!;
      const from = n.running.reachable ? (n.running.schematic ?? 'no schematic') : '?';
      return `${node} (${n.nodeClass.class} class) from schematic ${from} to ${n.schematic}`;
    });
    notes.push(
      `A re-install on ${target}, the version every node runs: only the installer image changes, on ${what.join('; ')}. Each node reboots into it, with the same approvals as an upgrade.`,
    );
  }
  // Classes that do not differ are mechanics: the record keeps them, the plan shows only a difference.
  const mechanics: string[] = [];
  const consequences: string[] = [];
  if (images !== undefined && images.byNode.size > 0) (classesDiffer(images) ? notes : mechanics).push(nodeClassNote(images));
  const alone = await singleControlPlane(deps, cluster);
  if (alone !== undefined) {
    consequences.push(alone.consequence);
    mechanics.push(alone.mechanics);
  }
  const kubelets = new Set([...views.values()].map((v) => v.kubeletVersion).filter((v): v is string => v !== undefined));
  for (const k8s of kubelets) {
    if (!talosSupportsKubernetes(target, k8s, support)) {
      refusals.push(
        `Talos ${target} does not support the running Kubernetes ${k8s} (support matrix); upgrade Kubernetes first with /talos upgrade k8s`,
      );
    }
  }

  // The target's client only for a plan the rules allow: a refused request downloads nothing more.
  if (refusals.length === 0 && path?.ok === true && !reinstall) {
    const prefetched = await prefetchTalosctl(session, target);
    if (prefetched.refusal !== undefined) refusals.push(prefetched.refusal);
    if (prefetched.note !== undefined) notes.push(prefetched.note);
  }

  const steps: Step[] = [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }];
  // A re-install touches only the nodes whose image changed; an upgrade, every node not yet on the target.
  const touched = reinstall ? toUpgrade.filter((address) => changes.includes(address)) : toUpgrade;
  const ordered = upgradeOrder(
    touched.map((address) => ({
      address,
      role: cluster.controlPlanes.includes(address) ? ('controlplane' as const) : ('worker' as const),
    })),
  );
  for (const node of ordered) {
    const view = views.get(node.address);
    const image = images?.byNode.get(node.address)?.image;
    if (image === undefined) continue;
    steps.push({
      id: `node-${node.address}`,
      kind: node.role === 'controlplane' ? 'upgrade-control-plane' : 'upgrade-worker',
      node: node.address,
      nodeName: view?.name,
      host: view?.host,
      image,
      status: 'pending',
    });
  }
  steps.push({ id: 'verify', kind: 'verify', status: 'pending' });
  // The exact target, per node class: a production upgrade's rehearsal is the staging upgrade that installed the same images.
  const classImages = Object.fromEntries([...(images?.byNode.values() ?? [])].map((n) => [n.nodeClass.class, n.image]));
  const rehearsal = cluster.environment === 'production' ? await talosStagingRehearsal(deps, target, classImages, notes) : undefined;
  const data: TalosUpgradeData | undefined =
    continuation === undefined && Object.keys(classImages).length === 0
      ? undefined
      : { ...(continuation === undefined ? {} : { continuation }), ...(Object.keys(classImages).length === 0 ? {} : { classImages }) };
  return {
    refusals,
    notes,
    consequences,
    mechanics,
    steps,
    rehearsal,
    ...(data === undefined ? {} : { data }),
    target: { fromVersion, talosVersion: fromVersion, schematic: images?.schematic },
    common: { talosctl, clientRefusal: chosen.refusal, running: fromVersion },
  };
};
