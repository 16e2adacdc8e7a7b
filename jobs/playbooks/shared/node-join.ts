import type { V1Node } from '@kubernetes/client-node';
import type { Operation, Step } from '../../../src/ops/operation.ts';
import { checkEtcdQuorum } from '../../../src/health/etcd-quorum-check.ts';
import { parseEtcdMembers } from '../../../src/talos/parse-etcd-members.ts';
import { pollUntil } from '../../../src/time/clock.ts';
import { StepFailure } from '../../engine/job-context.ts';
import type { StepResult, WalkContext } from '../../engine/playbook.ts';
import { probeSignal } from '../../engine/walk.ts';
import { clusterWait } from './cluster-wait.ts';
import { checkNewNodeImage } from './new-node-image.ts';

const CONTROL_PLANE_LABEL = 'node-role.kubernetes.io/control-plane';

function internalIp(node: V1Node): string | undefined {
  return node.status?.addresses?.find((a) => a.type === 'InternalIP')?.address;
}

/** Where a new node stands: Ready in Kubernetes, and for a control plane a voting etcd member under one leader. */
async function joinState(ctx: WalkContext, name: string): Promise<{ joined: boolean; evidence: string[]; role: string; address?: string }> {
  const { cluster } = ctx;
  const node = (await ctx.session.kube.listNodes(probeSignal(ctx))).find((n) => n.metadata?.name === name);
  if (node === undefined) return { joined: false, evidence: [`${name}: no Kubernetes Node yet`], role: 'node' };
  const controlPlane = node.metadata?.labels?.[CONTROL_PLANE_LABEL] !== undefined;
  const role = controlPlane ? 'control plane' : 'worker';
  const address = internalIp(node);
  const ready = node.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  const evidence = [`${name} (${address ?? 'no InternalIP'}): Kubernetes ${ready ? 'Ready' : 'not Ready'}`];
  if (!controlPlane) return { joined: ready, evidence, role, address };
  const members = await ctx.talosctl.run(['etcd', 'members'], [cluster.controlPlanes[0]!], {
    signal: probeSignal(ctx),
    okExitCodes: [0, 1],
  });
  const member = members.stdout.trim() === '' ? undefined : parseEtcdMembers(members.stdout).find((m) => m.hostname === name);
  evidence.push(
    member === undefined
      ? `${name}: not an etcd member yet`
      : member.learner === true
        ? `${name}: etcd learner, not yet a voting member`
        : `${name}: voting etcd member`,
  );
  const voting = member !== undefined && member.learner !== true;
  const leader =
    address === undefined
      ? undefined
      : await checkEtcdQuorum(ctx.talosctl, [...new Set([...cluster.controlPlanes, address])], probeSignal(ctx));
  if (leader !== undefined) evidence.push(`etcd status: ${leader.summary}`);
  return { joined: ready && voting && leader?.status === 'passed', evidence, role, address };
}

/** A node the apply added, watched until it joined; the bot never runs `talosctl bootstrap` for it (the runbook forbids it). */
export async function watchJoin(ctx: WalkContext, op: Operation, step: Step): Promise<StepResult> {
  const { deps } = ctx;
  const name = step.nodeName ?? '';
  let evidence: string[] = [];
  const joined = await pollUntil(deps.clock, clusterWait(deps, ctx.signal), async () => {
    const state = await joinState(ctx, name);
    evidence = state.evidence;
    return state.joined && state.address !== undefined
      ? { done: true, value: { ...state, address: state.address } }
      : { done: false, pending: state.evidence.join('; ') };
  });
  if (!joined.ok) {
    throw new StepFailure(
      `${name} did not join within ${Math.round(deps.timeouts.nodeReadyMs / 60_000)} min; nothing was reverted. Look at the node's console and \`talosctl dmesg\`; Retry watches again`,
      evidence,
    );
  }
  const state = joined.value;
  await ctx.record({
    step: { id: step.id, joined: { address: state.address, role: state.role === 'control plane' ? 'controlplane' : 'worker' } },
  });
  // The VM booted the ISO at the static file ID: the node must run the declared Talos version and its class's schematic.
  const image = await checkNewNodeImage(ctx, state.address, name);
  const detail = `${name}${state.address ? ` (${state.address})` : ''} joined as a ${state.role}: ${state.evidence.join('; ')}; ${image}`;
  return { event: `${name} joined`, detail };
}
