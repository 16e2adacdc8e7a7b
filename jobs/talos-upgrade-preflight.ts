import type { Job } from 'bullmq';
import { errorText } from '../src/chat/error-text.ts';
import { operationRootMessage } from '../src/chat/upgrade-messages.ts';
import type { ClusterConfig } from '../src/config/inventory.ts';
import { allNodes } from '../src/config/inventory.ts';
import type { ClusterSession } from '../src/cluster/cluster-session.ts';
import { runHealthGate } from '../src/health/health-gate.ts';
import type { Operation, Step } from '../src/ops/operation.ts';
import { findStagingRehearsal } from '../src/ops/rehearsal.ts';
import { OperationJobData } from '../src/queue/job-schemas.ts';
import { outsideWindowRefusal } from '../src/rules/maintenance-window.ts';
import { installerImage, retagImage } from '../src/rules/installer-image.ts';
import { upgradeOrder } from '../src/rules/upgrade-order.ts';
import { checkTalosUpgradePath } from '../src/rules/versions.ts';
import { talosSupportsKubernetes } from '../src/talos/compatibility.ts';
import { findNodeByAddress, kubeNodeView, observeTalosVersions } from '../src/talos/observe.ts';
import { clusterNamed, type OpsJobDeps } from './job-context.ts';

interface PlanOutcome {
  refusals: string[];
  rehearsal?: { stagingOp?: string };
  fromVersion?: string;
  schematic?: string;
  steps: Step[];
}

/** Every preflight check of the runbook, collected rather than stopping at the first, so one refusal lists all that is wrong. */
async function preflight(deps: OpsJobDeps, cluster: ClusterConfig, target: string, session: ClusterSession, signal?: AbortSignal): Promise<PlanOutcome> {
  const refusals: string[] = [];
  const windowRefusal = outsideWindowRefusal(cluster, deps.now());
  if (windowRefusal !== undefined) refusals.push(windowRefusal);
  const nodes = allNodes(cluster);
  const probeSignal = (): AbortSignal => (signal ? AbortSignal.any([signal, AbortSignal.timeout(deps.timeouts.probeMs)]) : AbortSignal.timeout(deps.timeouts.probeMs));

  const kubeNodes = await session.kube.listNodes(probeSignal());
  const views = new Map(nodes.map((address) => [address, kubeNodeView(findNodeByAddress(kubeNodes, address), cluster.hostLabel)]));
  const reported = new Set([...views.values()].map((v) => v.osVersion).filter((v): v is string => v !== undefined));
  const running = reported.size === 1 ? [...reported][0] : undefined;

  // The client must match the running Talos; with a directory of binaries the bot picks it.
  let talosctl;
  try {
    talosctl = await session.talosctl(running);
  } catch (error) {
    refusals.push(`${errorText(error)}`);
    talosctl = await session.talosctl();
  }
  const versions = await observeTalosVersions(talosctl, nodes, probeSignal());
  const byVersion = new Map<string, string[]>();
  for (const [node, v] of versions) {
    if (!v.reachable) {
      refusals.push(`${node} does not answer talosctl (${v.error}); every node must be reachable before an upgrade`);
      continue;
    }
    byVersion.set(v.version, [...(byVersion.get(v.version) ?? []), node]);
  }
  if (byVersion.size > 1) {
    const mix = [...byVersion].map(([v, ns]) => `${v} on ${ns.join(', ')}`).join('; ');
    refusals.push(`the cluster runs mixed Talos versions (${mix}); finish or roll back the previous upgrade first, so every node runs one version`);
  }
  const fromVersion = byVersion.size === 1 ? [...byVersion.keys()][0] : running;
  if (talosctl.binary !== undefined && fromVersion !== undefined) {
    const client = await talosctl.run(['version', '--client'], [], { signal: probeSignal() }).catch(() => undefined);
    const tag = /Tag:\s+(\S+)/.exec(client?.stdout ?? '')?.[1];
    if (tag !== undefined && tag !== fromVersion) {
      refusals.push(`talosctl is ${tag} but the cluster runs ${fromVersion}; the runbook needs a matching client: install talosctl ${fromVersion} (or put talosctl-${fromVersion} in the TALOSCTL_BIN directory)`);
    }
  }

  const factoryVersions = await deps.factory.versions(probeSignal());
  if (fromVersion !== undefined) {
    const path = checkTalosUpgradePath(fromVersion, target, factoryVersions);
    if (!path.ok) refusals.push(path.reason);
  }
  const kubelets = new Set([...views.values()].map((v) => v.kubeletVersion).filter((v): v is string => v !== undefined));
  for (const k8s of kubelets) {
    if (!talosSupportsKubernetes(target, k8s)) {
      refusals.push(`Talos ${target} does not support the running Kubernetes ${k8s} (support matrix); upgrade Kubernetes first with /talos upgrade k8s`);
    }
  }

  const gate = await runHealthGate(cluster, { talosctl, kube: session.kube, probeTimeoutMs: deps.timeouts.probeMs, signal });
  if (!gate.passed) refusals.push(`the health gate failed: ${gate.stopReasons.join('; ')}`);

  const holder = await deps.lock.holder(cluster.name);
  if (holder !== undefined) refusals.push(`operation ${holder} holds ${cluster.name}; wait for it to finish, or \`/talos cancel ${holder}\``);

  let schematic: string | undefined;
  const steps: Step[] = [{ id: 'snapshot', kind: 'snapshot', status: 'pending' }];
  try {
    schematic = (await deps.tofu.outputRaw(cluster.terraformDir, 'talos_image_factory_schematic_id', signal)).trim();
    const image = installerImage({ platform: cluster.installerPlatform, schematic, version: target });
    const longhornImage =
      cluster.longhornNodes.length > 0
        ? retagImage((await deps.tofu.outputRaw(cluster.terraformDir, 'talos_longhorn_installer_image', signal)).trim(), target)
        : undefined;
    const ordered = upgradeOrder(nodes.map((address) => ({ address, role: cluster.controlPlanes.includes(address) ? ('controlplane' as const) : ('worker' as const) })));
    for (const node of ordered) {
      const view = views.get(node.address);
      steps.push({
        id: `node-${node.address}`,
        kind: node.role === 'controlplane' ? 'upgrade-control-plane' : 'upgrade-worker',
        node: node.address,
        nodeName: view?.name,
        host: view?.host,
        image: cluster.longhornNodes.includes(node.address) && longhornImage ? longhornImage : image,
        status: 'pending',
      });
    }
  } catch (error) {
    refusals.push(`cannot derive the installer image: ${errorText(error)}`);
  }
  steps.push({ id: 'verify', kind: 'verify', status: 'pending' });
  const rehearsal = cluster.environment === 'production' ? { stagingOp: await findStagingRehearsal(deps.store, deps.inventory, 'talos-upgrade', target) } : undefined;
  return { refusals, fromVersion, schematic, steps, rehearsal };
}

/** Preflight of `/talos upgrade talos`: touches nothing; posts either the refusal or the plan with Start and Cancel. */
export function createTalosUpgradePreflightJob(deps: OpsJobDeps) {
  return async (job: Job, signal?: AbortSignal): Promise<void> => {
    const { opId } = OperationJobData.parse(job.data);
    const op = await deps.store.get(opId);
    if (!op) return;
    // A retry (Slack failed under the last attempt) posts the root message that attempt could not.
    if (op.state !== 'preflight') {
      if (op.rootTs === undefined) await postRoot(deps, op);
      return;
    }
    const cluster = clusterNamed(deps.inventory, op.cluster);
    const target = op.target.version ?? '';
    let outcome: PlanOutcome;
    try {
      outcome = await deps.access.withSession(cluster, signal, (session) => preflight(deps, cluster, target, session, signal));
    } catch (error) {
      outcome = { refusals: [`preflight could not complete: ${errorText(error)}`], steps: [] };
    }
    const nonce = crypto.randomUUID().replace(/-/g, '').slice(0, 12);
    const refused = outcome.refusals.length > 0;
    // The plan and its entry are one write, so the entry is #1 even when Slack shows the plan (a 5xx after
    // posting it) and someone starts it before the bot learned where it is; the thread gets it once it knows.
    const entry = { actor: 'bot', event: refused ? 'preflight refused' : 'preflight passed, plan posted', detail: refused ? outcome.refusals.join('; ') : `${outcome.steps.length} steps` };
    const plan = (o: Operation): Operation => ({
      ...o,
      state: refused ? 'refused' : 'planned',
      refusals: outcome.refusals,
      steps: outcome.steps,
      target: { ...o.target, fromVersion: outcome.fromVersion, schematic: outcome.schematic },
      planNonce: refused ? undefined : nonce,
      rehearsal: outcome.rehearsal,
      endedAt: refused ? deps.now().toISOString() : undefined,
    });
    // A refusal goes under the plan at once; a passed preflight's entry waits for the run's first reply.
    const planned = refused ? await deps.audit.record(opId, entry, undefined, plan) : await deps.audit.note(opId, entry, plan);
    if (planned.rootTs === undefined) await postRoot(deps, planned);
    else await deps.chat.update(planned.channel, planned.rootTs, operationRootMessage(planned));
  };
}

/** Posts the plan or the refusal as the operation's root message, then the audit entries waiting for its thread. */
async function postRoot(deps: OpsJobDeps, op: Operation): Promise<void> {
  const { ts } = await deps.chat.post(op.channel, operationRootMessage(op));
  const { op: stored } = await deps.store.update(op.id, (o) => ({ ...o, rootTs: ts }));
  // Changed while the post was retried (an override from a copy Slack showed): show it as it is now.
  if (stored.revision !== op.revision + 1) await deps.chat.update(stored.channel, ts, operationRootMessage(stored));
  await deps.audit.flush(op.id);
}
