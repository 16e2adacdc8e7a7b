import type { Job } from 'bullmq';
import { errorText } from '../src/chat/error-text.ts';
import { NonceJobData } from '../src/queue/job-schemas.ts';
import { observeKubeNode, observeTalosVersions } from '../src/talos/observe.ts';
import { clusterNamed, sleep, type OpsJobDeps } from './job-context.ts';
import { endpointsAvoiding } from './node-upgrade.ts';

/**
 * The Rollback button of a stopped upgrade: `talosctl rollback` on that one node, then,
 * since rollback has no --wait, watch the node come back and report what it runs.
 */
export function createNodeRollbackJob(deps: OpsJobDeps) {
  return async (job: Job, signal?: AbortSignal): Promise<void> => {
    const { opId, nonce, by } = NonceJobData.parse(job.data);
    const op = await deps.store.get(opId);
    if (!op?.failure || op.failure.nonce !== nonce || op.failure.rollback !== 'running') return;
    const cluster = clusterNamed(deps.inventory, op.cluster);
    const node = op.failure.node;
    const expected = op.steps.find((s) => s.id === op.failure!.step)?.fromVersion;
    const log = deps.logger.child({ op: opId, cluster: cluster.name, node });
    let outcome: { ok: boolean; detail: string };
    try {
      outcome = await deps.access.withSession(cluster, signal, async (session) => {
        const talosctl = await session.talosctl(op.target.fromVersion);
        const endpoints = endpointsAvoiding(cluster, node);
        await talosctl.run(['rollback'], [node], { signal, endpoints });
        await deps.audit.record(opId, { actor: by ?? 'bot', event: `talosctl rollback issued on ${node}`, detail: 'waiting for the node to come back' });
        // The reboot is asynchronous: give the node a moment to go down before watching it come back.
        await sleep(Math.min(deps.timeouts.pollMs * 2, 10_000), signal);
        const deadline = Date.now() + deps.timeouts.nodeReadyMs;
        let last = 'no observation yet';
        for (;;) {
          const v = (await observeTalosVersions(talosctl, [node], signal, endpoints)).get(node);
          const kube = await observeKubeNode(session.kube, node, cluster.hostLabel, signal ?? AbortSignal.timeout(deps.timeouts.probeMs)).catch(() => undefined);
          if (v?.reachable === true && kube?.ready === true) {
            const ok = expected === undefined || v.version === expected;
            return { ok, detail: ok ? `${node} is back on ${v.version} and Ready` : `${node} is back but runs ${v.version}, expected ${expected}` };
          }
          last = v?.reachable === true ? `${v.version}, Kubernetes not Ready` : (v?.error ?? 'no answer');
          if (Date.now() >= deadline) return { ok: false, detail: `${node} did not come back within ${Math.round(deps.timeouts.nodeReadyMs / 1000)} s (last: ${last})` };
          await sleep(deps.timeouts.pollMs, signal);
        }
      });
    } catch (error) {
      outcome = { ok: false, detail: `rollback of ${node} failed: ${errorText(error)}` };
    }
    log.info({ ok: outcome.ok }, 'rollback finished');
    await deps.store.update(opId, (o) => (o.failure ? { ...o, failure: { ...o.failure, rollback: outcome.ok ? 'done' : 'failed' } } : undefined));
    await deps.audit.record(
      opId,
      { actor: 'bot', event: outcome.ok ? 'rollback verified' : 'rollback failed', detail: outcome.detail },
      {
        text: `${outcome.ok ? '↩️ Rollback verified' : '❌ Rollback failed'}: ${outcome.detail}. Do not move the Terraform talos_version declaration until the incident is resolved; \`/talos cancel ${opId}\` releases the cluster.`,
      },
    );
  };
}
