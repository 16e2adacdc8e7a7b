import type { Operation } from '../../../src/ops/operation.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { clusterWait } from '../shared/cluster-wait.ts';
import { etcdService, serviceWords } from './etcd-service.ts';
import { JOIN_LIMIT, MAX_REJOINS, rebootCommand, resetAgain } from './rejoin.ts';

/**
 * Every control plane's etcd waits for the bootstrap, as the guide says to check before it. A node
 * whose etcd is Failed meanwhile (etcd's join limit ran out: a slow approval, a stop, a long outage)
 * never waits again by itself: it is reset again, which brings it back into the join loop, once per
 * Failed it shows and at most {@link MAX_REJOINS} times per wait. A Retry of this step waits again.
 */
export async function waitForBootstrap(ctx: WalkContext, op: Operation): Promise<StepResult> {
  const nodes = ctx.cluster.controlPlanes;
  ctx.phase?.('waiting until etcd waits for bootstrap on every control plane');
  // Asked again and not yet seen out of Failed: the reset takes a moment to stop the service.
  const asked = new Set<string>();
  const rejoined: string[] = [];
  let failedNow: string[] = [];
  const seen = await pollUntil(ctx.deps.clock, clusterWait(ctx.deps, ctx.signal), async () => {
    const services = await Promise.all(nodes.map(async (node) => ({ node, service: await etcdService(ctx, node) })));
    failedNow = services.filter(({ service }) => service.read && service.state === 'Failed').map(({ node }) => node);
    for (const { node, service } of services) {
      const failed = service.read && service.state === 'Failed';
      if (!failed) asked.delete(node);
      if (!failed || asked.has(node)) continue;
      if (rejoined.filter((n) => n === node).length >= MAX_REJOINS) continue;
      ctx.phase?.(`${node}: etcd Failed (its join limit ran out); resetting it again to bring it back into the join loop`);
      await resetAgain(ctx, op, node);
      asked.add(node);
      rejoined.push(node);
    }
    const waiting = services.filter(({ service }) => !(service.read && service.state === 'Preparing'));
    return waiting.length === 0
      ? { done: true, value: undefined }
      : { done: false, pending: waiting.map(({ node, service }) => serviceWords(node, service)).join('; ') };
  });
  if (!seen.ok) {
    const again = [...new Set(rejoined)];
    const failed =
      failedNow.length === 0
        ? ''
        : ` etcd is Failed on ${failedNow.join(', ')}. ${JOIN_LIMIT}.${again.length > 0 ? ` The bot reset ${again.join(', ')} again.` : ''}`;
    const byHand = failedNow.length === 0 ? '' : `; or bring them back yourself (${failedNow.map(rebootCommand).join('; ')}) and Retry`;
    throw new StepFailure(
      `etcd does not wait for a bootstrap on every control plane, so no bootstrap was issued: every control plane is wiped and the Kubernetes API is down.${failed} Safe next: Retry, which waits again and resets again a control plane whose etcd is Failed${byHand}`,
      [seen.pending],
      { noRollback: true },
    );
  }
  const again = [...new Set(rejoined)];
  return {
    event: 'etcd waits for bootstrap',
    detail: `every control plane (${nodes.join(', ')}): service etcd Preparing${again.length > 0 ? `; ${again.map((n) => `${n} reset again after its etcd was Failed (join limit)`).join(', ')}` : ''}`,
  };
}
