import { errorText } from '../../../src/chat/error-text.ts';
import { findNodeByAddress, observeTalosVersions } from '../../../src/talos/observe.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';

/** The replaced node as it is now: whether it answers talosctl, and its Node (name, Ready). */
export interface NodeNow {
  answers: boolean;
  ready: boolean;
  /** The name of the Kubernetes Node that carries the address, if one does. */
  nodeName?: string;
  summary: string;
}

/** Looks at the node again, through the other control planes (the talosctl of a replacement never uses it as an endpoint). */
export async function observeNodeNow(ctx: WalkContext, node: string): Promise<NodeNow> {
  const seen = (await observeTalosVersions(ctx.talosctl, [node], probeSignal(ctx))).get(node);
  // Without etcd quorum the Kubernetes API does not answer: the node is then not known to be Ready, and the step's own checks decide.
  let kubeError: string | undefined;
  const nodes = await ctx.session.kube.listNodes(probeSignal(ctx)).catch((error: unknown) => {
    kubeError = errorText(error).split('\n')[0];
    return [];
  });
  const found = findNodeByAddress(nodes, node);
  const answers = seen?.reachable === true;
  const ready = found?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const nodeName = found?.metadata?.name;
  const kube =
    kubeError !== undefined
      ? `the Kubernetes API does not answer (${kubeError})`
      : nodeName === undefined
        ? 'no Kubernetes Node has its address'
        : `Node ${nodeName} is ${ready ? 'Ready' : 'not Ready'}`;
  const summary = `${node}: ${answers ? `answers talosctl (Talos ${seen.version})` : `does not answer talosctl (${seen?.error ?? 'no answer'})`}; ${kube}`;
  return { answers, ready, ...(nodeName === undefined ? {} : { nodeName }), summary };
}

/**
 * Right before a step changes the cluster for a node believed failed: a node that answers and is
 * Ready again is not replaced, since its etcd member or Node would be taken from a working machine.
 * A working node is retired with `/talos remove`, whose graceful reset drains it and leaves etcd.
 */
export async function assertStillFailed(ctx: WalkContext, node: string, what: string): Promise<NodeNow> {
  const now = await observeNodeNow(ctx, node);
  if (now.answers && now.ready)
    throw new StepFailure(
      `${node} answers talosctl and its Node ${now.nodeName ?? ''} is Ready again, so ${what} was not done: a node that works is not replaced. ` +
        `Nothing was changed by this step. To retire it, cancel this replacement and run \`/talos remove ${node}\` (drain, graceful reset, leave etcd); if it fails again, Retry`,
      [now.summary],
    );
  return now;
}
