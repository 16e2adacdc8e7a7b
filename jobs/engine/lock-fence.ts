import type { ClusterSession } from '../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../src/cluster/tofu.ts';
import type { KubeApi } from '../../src/kube/kube-api.ts';
import type { LockHold } from '../../src/ops/cluster-lock.ts';
import type { Talosctl } from '../../src/talos/talosctl.ts';
import { StepFailure } from './job-context.ts';
import type { EngineContext, WalkStart } from './playbook.ts';

/** The stop of an operation whose cluster lock is gone. */
export const LOCK_GONE = 'the cluster lock is no longer held by this operation: Redis lost it or someone took it; nothing further was run';

/** talosctl subcommands that change a node; `etcd` ones are matched with their second word. */
const MUTATING_TALOSCTL = new Set([
  'upgrade',
  'upgrade-k8s',
  'reboot',
  'reset',
  'rollback',
  'apply-config',
  'patch',
  'shutdown',
  'bootstrap',
]);
const MUTATING_ETCD = new Set(['leave', 'remove-member', 'forfeit-leadership']);
/** tofu subcommands that change the estate. */
const MUTATING_TOFU = new Set(['apply', 'destroy', 'import']);

export function mutatesTalos(args: readonly string[]): boolean {
  return MUTATING_TALOSCTL.has(args[0] ?? '') || (args[0] === 'etcd' && MUTATING_ETCD.has(args[1] ?? ''));
}

/** What the operator reads beside the stop: why the fence refused. */
function evidence(hold: Exclude<LockHold, 'held'>, cluster: string, holder: string | undefined): string[] {
  if (hold === 'epoch-lost')
    return [
      'Redis lost the data the bot keeps (its epoch key is gone): locks and operations may be missing',
      `check ${cluster} by hand before anything else runs on it; docs/operating.md says how to re-seed`,
    ];
  return [holder === undefined ? `nobody holds ${cluster} now` : `${cluster} is held by ${holder} now`];
}

/**
 * Throws the stop when the operation no longer holds its cluster: checked before each step of a
 * playbook that takes the cluster, and again right before each call that changes it.
 */
export async function assertHoldsCluster(ctx: Pick<EngineContext, 'deps' | 'cluster'>, opId: string): Promise<void> {
  const hold = await ctx.deps.lock.holds(ctx.cluster.name, opId);
  if (hold === 'held') return;
  const holder = hold === 'lost' ? await ctx.deps.lock.holder(ctx.cluster.name) : undefined;
  throw new StepFailure(LOCK_GONE, evidence(hold, ctx.cluster.name, holder), { noRollback: true });
}

/** A subclass view of `base` with `overrides` in front: the base's own methods and fields stay reachable. */
function over<T extends object>(base: T, overrides: Partial<T>): T {
  // A session without a part (a read-only job's, a test's) keeps it missing: there is nothing to fence.
  if (typeof base !== 'object' || base === null) return base;
  return Object.assign(Object.create(base) as T, overrides);
}

function fencedTalosctl(talosctl: Talosctl, fence: () => Promise<void>): Talosctl {
  return over(talosctl, {
    run: async (args, nodes, options) => {
      if (mutatesTalos(args)) await fence();
      return talosctl.run(args, nodes, options);
    },
  });
}

/**
 * The walk's context with every call that changes the cluster fenced: a talosctl upgrade, reboot,
 * reset or rollback, a `tofu apply`, a Node deletion each first check that the operation still
 * holds its cluster, so a step that lost its lock half-way sends nothing more.
 */
export function fencedContext(ctx: WalkStart, opId: string): WalkStart {
  const fence = (): Promise<void> => assertHoldsCluster(ctx, opId);
  const { session, deps } = ctx;
  const kube = over<KubeApi>(session.kube, {
    deleteNode: async (name, signal) => {
      await fence();
      return session.kube.deleteNode(name, signal);
    },
  });
  const fencedSession = over<ClusterSession>(session, {
    kube,
    talosctl: async (...args) => fencedTalosctl(await session.talosctl(...args), fence),
  });
  const tofu = over<Tofu>(deps.tofu, {
    run: async (dir, args, options) => {
      if (MUTATING_TOFU.has(args[0] ?? '')) await fence();
      return deps.tofu.run(dir, args, options);
    },
  });
  return { ...ctx, deps: { ...deps, tofu }, session: fencedSession, talosctl: fencedTalosctl(ctx.talosctl, fence) };
}
