/** The arithmetic of removing one etcd member, spelled out for the operator. */
export interface QuorumAfterRemoval {
  /** Votes the current membership needs: ⌊members/2⌋ + 1. */
  quorum: number;
  /** Members left after the removal. */
  remaining: number;
  /** Votes the remaining membership needs. */
  remainingQuorum: number;
  /** Whether the removal may go ahead. */
  ok: boolean;
  /** The arithmetic in words, e.g. "3 members need 2 for quorum; after removal 2 remain, …". */
  explanation: string;
}

/** The health of the membership, for removing a member from a degraded cluster. */
export interface QuorumOptions {
  /** Members currently healthy; defaults to all of them. */
  healthy?: number;
  /** Whether the member to remove is one of the healthy ones (a retired node) rather than a failed one. Default true. */
  removingHealthy?: boolean;
}

function quorumOf(members: number): number {
  return Math.floor(members / 2) + 1;
}

function members(count: number): string {
  return `${count} ${count === 1 ? 'member' : 'members'}`;
}

/**
 * Whether one control-plane (etcd) member can be removed. The runbook: never remove a control
 * plane if the remaining members cannot retain quorum; removing the only member is disaster
 * recovery, not a removal.
 *
 * @param memberCount voting etcd members now
 */
export function quorumAfterRemoval(memberCount: number, options: QuorumOptions = {}): QuorumAfterRemoval {
  if (!Number.isInteger(memberCount) || memberCount < 1) {
    throw new RangeError(`an etcd membership has at least 1 member, got ${memberCount}`);
  }
  const healthy = options.healthy ?? memberCount;
  if (!Number.isInteger(healthy) || healthy < 0 || healthy > memberCount) {
    throw new RangeError(`healthy members must be between 0 and ${memberCount}, got ${healthy}`);
  }
  const quorum = quorumOf(memberCount);
  const remaining = memberCount - 1;
  const remainingQuorum = remaining === 0 ? 0 : quorumOf(remaining);
  const before = `${members(memberCount)} need ${quorum} for quorum`;
  if (remaining === 0) {
    return {
      quorum,
      remaining,
      remainingQuorum,
      ok: false,
      explanation: `${before}; removing the only member leaves no cluster: that is etcd disaster recovery, not a node removal`,
    };
  }
  if (healthy < quorum) {
    return {
      quorum,
      remaining,
      remainingQuorum,
      ok: false,
      explanation: `${before} but only ${healthy} ${healthy === 1 ? 'is' : 'are'} healthy: quorum is already lost; use disaster recovery`,
    };
  }
  const remainingHealthy = healthy - (options.removingHealthy === false ? 0 : 1);
  const ok = remainingHealthy >= remainingQuorum;
  const remain = `${remaining} ${remaining === 1 ? 'remains' : 'remain'}`;
  const healthyPart = remainingHealthy === remaining ? '' : ` (${remainingHealthy} healthy)`;
  if (!ok) {
    return {
      quorum,
      remaining,
      remainingQuorum,
      ok,
      explanation: `${before}; after removal ${remain}${healthyPart}, which cannot keep quorum (${remainingQuorum} of ${remaining} needed): do not remove this member`,
    };
  }
  const tolerance = remainingHealthy - remainingQuorum;
  const [keep, tolerate] = remaining === 1 ? ['keeps', 'tolerates'] : ['keep', 'tolerate'];
  const spare =
    tolerance === 0
      ? ` but ${tolerate} no further failure`
      : ` and ${tolerate} ${tolerance} more ${tolerance === 1 ? 'failure' : 'failures'}`;
  return {
    quorum,
    remaining,
    remainingQuorum,
    ok,
    explanation: `${before}; after removal ${remain}${healthyPart}, which ${keep} quorum (${remainingQuorum} of ${remaining})${spare}`,
  };
}

/** Whether etcd keeps quorum while one member reboots, spelled out. */
export interface QuorumWhileDown {
  ok: boolean;
  /** e.g. "2 members need 2 for quorum; while 10.0.30.12 reboots 1 other healthy member remains, which cannot keep quorum". */
  explanation: string;
}

/**
 * Whether one control plane may reboot (an upgrade, a rollback): the other healthy voting members
 * must still be a majority of all of them. On Talos ≥ 1.13 nothing else checks this: the
 * LifecycleService upgrade has no etcd validation (internal/app/lifecycle/lifecycle.go v1.13.9),
 * so a two-member etcd, which loses quorum when either reboots, is refused here. The only member of
 * a single-control-plane cluster is the exception the runbook accepts: etcd and the Kubernetes
 * API are down while it reboots, and the plan says so.
 *
 * @param memberCount voting etcd members now
 * @param healthyOthers healthy voting members other than the one that reboots
 * @param onlyControlPlane the node is the cluster's only control plane
 */
export function quorumWhileRebooting(memberCount: number, healthyOthers: number, node: string, onlyControlPlane = false): QuorumWhileDown {
  const quorum = quorumOf(memberCount);
  const head = `${members(memberCount)} need ${quorum} for quorum`;
  if (memberCount === 1 && onlyControlPlane) {
    return {
      ok: true,
      explanation: `${head}; ${node} is the only member and the only control plane: etcd and the Kubernetes API are down while it reboots`,
    };
  }
  const ok = healthyOthers >= quorum;
  const remain = `${healthyOthers} other healthy ${healthyOthers === 1 ? 'member remains' : 'members remain'}`;
  return { ok, explanation: `${head}; while ${node} reboots ${remain}, which ${ok ? 'keeps' : 'cannot keep'} quorum` };
}

/** The arithmetic of replacing one control plane's etcd member, spelled out for the operator. */
export interface QuorumForReplacement {
  ok: boolean;
  /** Members, healthy ones and quorum now; after the member is removed; what the cluster survives meanwhile; and once the new one votes. */
  explanation: string;
}

/**
 * Whether a control plane's member can be removed and replaced: the members that remain must keep
 * quorum on their own, because the new member joins as a learner and votes only once it caught up.
 * Between the removal and the promotion the cluster survives as many more failures as the
 * remaining healthy members exceed their quorum.
 *
 * @param memberCount voting etcd members now
 * @param healthy healthy voting members now, the replaced one included if it is healthy
 * @param options.isMember whether the replaced node is still a member (a resumed or repeated replacement may find it gone)
 * @param options.replacedHealthy whether the replaced node's member is one of the healthy ones
 */
export function quorumForReplacement(
  memberCount: number,
  healthy: number,
  options: { isMember: boolean; replacedHealthy: boolean },
): QuorumForReplacement {
  if (!Number.isInteger(memberCount) || memberCount < 1)
    throw new RangeError(`an etcd membership has at least 1 member, got ${memberCount}`);
  if (!Number.isInteger(healthy) || healthy < 0 || healthy > memberCount)
    throw new RangeError(`healthy members must be between 0 and ${memberCount}, got ${healthy}`);
  const quorum = quorumOf(memberCount);
  const now = `${members(memberCount)} now, ${healthy} healthy, quorum ${quorum}`;
  if (healthy < quorum)
    return { ok: false, explanation: `${now}: quorum is already lost, which is etcd disaster recovery, not a node replacement` };
  const remaining = options.isMember ? memberCount - 1 : memberCount;
  const remainingHealthy = options.isMember && options.replacedHealthy ? healthy - 1 : healthy;
  if (remaining === 0)
    return {
      ok: false,
      explanation: `${now}: removing the only member leaves no cluster, which is etcd disaster recovery, not a node replacement`,
    };
  const remainingQuorum = quorumOf(remaining);
  const after = options.isMember
    ? `after its member is removed ${members(remaining)} remain (${remainingHealthy} healthy), quorum ${remainingQuorum}`
    : `its member is already removed: ${members(remaining)} remain`;
  if (remainingHealthy < remainingQuorum)
    return {
      ok: false,
      explanation: `${now}; ${after}, which cannot keep quorum (${remainingQuorum} of ${remaining} needed): do not replace this node before the others are healthy`,
    };
  const spare = remainingHealthy - remainingQuorum;
  const survives = spare === 0 ? 'survives no further failure' : `survives ${spare} more ${spare === 1 ? 'failure' : 'failures'}`;
  const joined = remaining + 1;
  return {
    ok: true,
    explanation: `${now}; ${after}; during the replacement the cluster ${survives}; once the new member votes ${members(joined)}, quorum ${quorumOf(joined)}`,
  };
}

/**
 * The fault tolerance left while one of `memberCount` voting members reboots, in the words an approver
 * reads: `etcd 2 of 3: no further failure tolerated`, `etcd 4 of 5: one more failure tolerated`.
 */
export function toleranceWhileRebooting(memberCount: number): string {
  const up = memberCount - 1;
  const spare = up - quorumOf(memberCount);
  const head = `etcd ${up} of ${memberCount}`;
  if (spare < 0) return `${head}: no quorum, etcd and the Kubernetes API are down`;
  if (spare === 0) return `${head}: no further failure tolerated`;
  return `${head}: ${spare === 1 ? 'one more failure' : `${spare} more failures`} tolerated`;
}
