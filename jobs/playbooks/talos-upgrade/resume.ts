import type { Step } from '../../../src/ops/operation.ts';

/** What the bot sees of a node before it acts on it: the facts a resumed step decides by. */
export interface NodeSeen {
  /** talosctl answered `version` through the other control planes. */
  reachable: boolean;
  version?: string;
  /** Why talosctl did not answer. */
  error?: string;
  /** Kubernetes `nodeInfo.bootID`; undefined when the API did not answer. */
  bootId?: string;
  ready?: boolean;
  cordoned?: boolean;
  /** The schematic of the running image, read only for a re-install (the version does not tell the images apart). */
  schematic?: string;
  /** A healthy etcd member (control planes only); undefined when not read. */
  etcdMember?: boolean;
}

/**
 * What a node step does next, by observation:
 * - `issue`: the upgrade was never requested; request it (after the checks before it).
 * - `skip`: never requested, and the node already runs the target: nothing to do.
 * - `checks`: the node runs the target after a reboot: only the checks after it run again.
 * - `resend`: requested, but the node demonstrably never got it (previous image, the boot ID of
 *   the request, not cordoned): sending it again cannot upgrade the node twice.
 * - `watch`: requested, and the node's state is unknown (it does not answer, or it is cordoned
 *   and not yet rebooted): watch until it is back or the bound passes; never request again.
 * - `fell-back`: it rebooted since the request and runs the previous image: Talos went back on its own.
 */
export type ResumeAction = 'issue' | 'skip' | 'checks' | 'resend' | 'watch' | 'fell-back';

export interface ResumeDecision {
  action: ResumeAction;
  /** Why, for the thread. */
  because: string;
}

/**
 * Decides what a node step still has to do from what was recorded when the upgrade was
 * requested (`issuedAt`, `fromVersion`, `issuedBootId`) and what the node shows now.
 * `expectedSchematic` is set for a re-install, where only the schematic tells old from new.
 */
export function decideResume(
  step: Pick<Step, 'issuedAt' | 'fromVersion' | 'issuedBootId'>,
  seen: NodeSeen,
  target: string,
  expectedSchematic?: string,
): ResumeDecision {
  const onTarget = seen.reachable && seen.version === target && (expectedSchematic === undefined || seen.schematic === expectedSchematic);
  if (step.issuedAt === undefined) {
    if (onTarget) return { action: 'skip', because: `it already runs ${target}` };
    return { action: 'issue', because: 'its upgrade was never requested' };
  }
  if (!seen.reachable)
    return { action: 'watch', because: `it does not answer talosctl (${seen.error ?? 'no answer'}); its state is unknown` };
  if (seen.bootId === undefined || step.issuedBootId === undefined)
    return { action: 'watch', because: 'its boot ID cannot be compared with the one at the request, so whether it rebooted is unknown' };
  const rebooted = seen.bootId !== step.issuedBootId;
  if (onTarget && rebooted) return { action: 'checks', because: `it rebooted into ${target}; only the checks after it run again` };
  const previous = seen.version === step.fromVersion;
  if (previous && rebooted)
    return { action: 'fell-back', because: `it rebooted since the request and runs ${seen.version}: Talos booted the previous image` };
  if (previous && !rebooted && seen.cordoned === false)
    return {
      action: 'resend',
      because: `it runs ${seen.version} with the boot ID of the request and is not cordoned: nothing of the request shows on it`,
    };
  if (previous && !rebooted)
    return { action: 'watch', because: `it is cordoned and has not rebooted since the request: its upgrade may still be under way` };
  return { action: 'watch', because: `it runs ${seen.version ?? 'an unknown version'}, neither ${step.fromVersion ?? '?'} nor ${target}` };
}

/** The observation in one line, for the audit entry of a resumed step. */
export function describeSeen(node: string, step: Pick<Step, 'issuedBootId'>, seen: NodeSeen): string {
  const parts = [seen.reachable ? `runs ${seen.version}` : `does not answer talosctl (${seen.error ?? 'no answer'})`];
  if (seen.schematic !== undefined) parts.push(`schematic ${seen.schematic.slice(0, 12)}`);
  if (seen.bootId === undefined) parts.push('boot ID unknown');
  else if (step.issuedBootId !== undefined)
    parts.push(seen.bootId === step.issuedBootId ? 'not rebooted since the request' : 'rebooted since the request');
  if (seen.ready !== undefined) parts.push(seen.ready ? 'Ready' : 'not Ready');
  if (seen.cordoned !== undefined) parts.push(seen.cordoned ? 'cordoned' : 'not cordoned');
  if (seen.etcdMember !== undefined) parts.push(seen.etcdMember ? 'a healthy etcd member' : 'not a healthy etcd member');
  return `${node} ${parts.join(', ')}`;
}
