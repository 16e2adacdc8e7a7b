import type { ClusterConfig } from '../src/config/inventory.ts';
import type { Operation } from '../src/ops/operation.ts';
import { ACTION, GATE_AGAIN_ACTION, HOME_ACTION, OVERRIDE_ACTION, SIGN_OFF_ACTION, STATUS_ACTION } from '../src/chat/buttons.ts';
import type { LifecyclePolicy } from '../jobs/engine/lifecycle/deps.ts';
import { STOP_BUTTONS_WHO, type Who } from '../src/chat/who-may-click.ts';
import { MembershipUnknown, type Authorizer } from './authorize.ts';

export type { Who };

export interface Permission {
  /** Fixed, or decided by the operation's kind (a Terraform change's Start is an approver's Apply). */
  who: Who | ((op: Operation, policy: LifecyclePolicy) => Who);
  /** What someone else who clicks is told; `names` says who can: `<@U0CAROL> or anyone in <!subteam^S0SRE>`. */
  refusal: (op: Operation, policy: LifecyclePolicy, names: string) => string;
}

/**
 * A button of a cluster rather than of one operation's message ([Run the gate again], the entries of
 * `/talos status`): it runs the `/talos` command it stands for, which keeps that command's own rules;
 * `anyone` is whoever may type the command in the cluster's channel.
 */
export interface ClusterPermission {
  scope: 'cluster';
  who: Who | 'anyone';
  /** The command the click runs, for the refusal and the log. */
  command: string;
}

const starters = (op: Operation, policy: LifecyclePolicy): Who => (policy.startedByApprovers(op.kind) ? 'approvers' : 'operators');

/** Who may click what, for every button of an operation; the lifecycle then decides whether the click is still current. */
export const ACTION_PERMISSIONS: Readonly<Record<string, Permission | ClusterPermission>> = {
  [ACTION.start]: {
    who: starters,
    refusal: (op, policy) =>
      `Only ${starters(op, policy)} of *${op.cluster}* may ${policy.startedByApprovers(op.kind) ? 'apply' : 'start'} \`${op.id}\`. Nothing changed.`,
  },
  [ACTION.cancelPlan]: {
    who: STOP_BUTTONS_WHO.cancel,
    refusal: (op) => `Only operators and approvers of *${op.cluster}* may cancel. Nothing changed.`,
  },
  // The same people who may cancel: it is a cancel that waits for the step in progress to end.
  [ACTION.stopAfter]: {
    who: 'operators-or-approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s operators and approvers can stop \`${op.id}\`: ${names}. Nothing changed.`,
  },
  [ACTION.approve]: {
    who: 'approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s approvers can approve: ${names}. Nothing changed.`,
  },
  // Taking a request is the word of whoever will approve it: the same people, and four eyes hold in the lifecycle.
  [ACTION.take]: {
    who: 'approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s approvers can take its approvals: ${names}. Nothing changed.`,
  },
  [ACTION.stop]: {
    who: 'operators-or-approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s operators and approvers can stop this step: ${names}. Nothing changed.`,
  },
  // Apply and its Cancel are the approval of a Kubernetes upgrade's one gated step.
  [ACTION.apply]: {
    who: 'approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s approvers can apply: ${names}. Nothing changed.`,
  },
  [ACTION.cancelApply]: {
    who: 'operators-or-approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s operators and approvers can stop this step: ${names}. Nothing changed.`,
  },
  [ACTION.rollback]: {
    who: STOP_BUTTONS_WHO.rollback,
    refusal: (op) => `Only operators of *${op.cluster}* may request a rollback; an approver then approves it. Nothing changed.`,
  },
  [ACTION.rerequest]: {
    who: 'approvers',
    refusal: (op, _policy, names) => `Only ${op.cluster}'s approvers can ask for approval again: ${names}. Nothing changed.`,
  },
  // A node Talos put back on its previous image is tried again only on an approver's explicit word.
  [ACTION.retry]: {
    who: STOP_BUTTONS_WHO.retry,
    refusal: (op) =>
      op.retry?.explicit !== undefined
        ? `Only approvers of *${op.cluster}* may ${op.retry.explicit.toLowerCase()} (\`${op.id}\`). Nothing changed.`
        : `Only operators and approvers of *${op.cluster}* may retry \`${op.id}\`. Nothing changed.`,
  },
  [ACTION.windowOverride]: {
    who: 'approvers',
    refusal: (op) => `Only approvers of *${op.cluster}* may start a step outside the maintenance window. Nothing changed.`,
  },
  [ACTION.planAgain]: {
    who: 'operators',
    refusal: (op, policy) =>
      `Only operators of *${op.cluster}* may ask for ${policy.again(op.kind) === 'replan' ? 'a fresh plan' : 'this again'}. Nothing changed.`,
  },
  [OVERRIDE_ACTION]: {
    who: 'approvers',
    refusal: (op) => `Only approvers of *${op.cluster}* may override the staging rehearsal. Nothing changed.`,
  },
  [GATE_AGAIN_ACTION]: { scope: 'cluster', who: 'anyone', command: '/talos health' },
  // An approver's word on a production gate only a person can judge, with evidence.
  [SIGN_OFF_ACTION]: { scope: 'cluster', who: 'approvers', command: 'Sign off' },
  [STATUS_ACTION.cancel]: { scope: 'cluster', who: 'operators-or-approvers', command: '/talos cancel' },
  [STATUS_ACTION.record]: { scope: 'cluster', who: 'anyone', command: '/talos record' },
  // The Home tab shows these to a cluster's operators only; a click is checked again all the same.
  [HOME_ACTION.gate]: { scope: 'cluster', who: 'operators', command: '/talos health' },
  [HOME_ACTION.upgradeTalos]: { scope: 'cluster', who: 'operators', command: '/talos upgrade talos' },
  [HOME_ACTION.upgradeK8s]: { scope: 'cluster', who: 'operators', command: '/talos upgrade k8s' },
  [HOME_ACTION.snapshot]: { scope: 'cluster', who: 'operators', command: '/talos snapshot' },
};

/** Who can act, for a refusal: `<@U0CAROL>, <@U0DAVE> or anyone in <!subteam^S0SRE>`. */
export function whoCanAct(ids: readonly string[]): string {
  const names = [...new Set(ids)].map((id) => (id.startsWith('S') ? `anyone in <!subteam^${id}>` : `<@${id}>`));
  if (names.length <= 1) return names[0] ?? 'nobody';
  return `${names.slice(0, -1).join(', ')} or ${names.at(-1)!}`;
}

function members(cluster: ClusterConfig, who: Who): string[] {
  if (who === 'operators') return cluster.operators;
  if (who === 'approvers') return cluster.approvers;
  return [...cluster.operators, ...cluster.approvers];
}

/**
 * Undefined when `user` may click `actionId` on `op`, else the refusal. A cluster that left the
 * inventory lets nobody click.
 */
export async function clickRefusal(
  authorizer: Authorizer,
  policy: LifecyclePolicy,
  cluster: ClusterConfig | undefined,
  actionId: string,
  op: Operation,
  user: string,
): Promise<string | undefined> {
  const permission = ACTION_PERMISSIONS[actionId];
  if (permission === undefined) throw new Error(`button ${actionId} has no permission declared`);
  if ('scope' in permission) throw new Error(`button ${actionId} is a cluster's button; ask clusterClickRefusal`);
  const who = typeof permission.who === 'function' ? permission.who(op, policy) : permission.who;
  try {
    if (cluster !== undefined && (await authorizer.isMember(user, members(cluster, who)))) return undefined;
  } catch (error) {
    if (error instanceof MembershipUnknown) return error.message;
    throw error;
  }
  return permission.refusal(op, policy, whoCanAct(cluster === undefined ? [] : members(cluster, who)));
}

/** Undefined when `user` may click the cluster button `actionId` on `cluster`, else the refusal. */
export async function clusterClickRefusal(
  authorizer: Authorizer,
  cluster: ClusterConfig,
  actionId: string,
  user: string,
): Promise<string | undefined> {
  const permission = ACTION_PERMISSIONS[actionId];
  if (permission === undefined || !('scope' in permission)) throw new Error(`button ${actionId} has no cluster permission declared`);
  if (permission.who === 'anyone') return undefined;
  try {
    if (await authorizer.isMember(user, members(cluster, permission.who))) return undefined;
  } catch (error) {
    if (error instanceof MembershipUnknown) return error.message;
    throw error;
  }
  const who = permission.who === 'operators-or-approvers' ? 'operators and approvers' : permission.who;
  return `Only ${who} of *${cluster.name}* may use \`${permission.command}\`: ${whoCanAct(members(cluster, permission.who))}. Nothing changed.`;
}
