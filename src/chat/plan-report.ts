import type { PlanEffect, RebootMode } from '../rules/plan-effect.ts';
import type { AttributeChange, ChangeAction, PlannedChange, PlanReview } from '../tofu/parse-plan.ts';

const SYMBOL: Record<ChangeAction, string> = {
  create: '+',
  read: '<=',
  update: '~',
  replace: '-/+',
  'forget-replace': './+',
  delete: '-',
  forget: '.',
  'no-op': ' ',
  unknown: '?',
};
const ACTION_ORDER: ChangeAction[] = ['unknown', 'replace', 'forget-replace', 'delete', 'create', 'update', 'read', 'forget'];
const COUNT_WORDS: [ChangeAction, string][] = [
  ['unknown', 'unrecognised'],
  ['replace', 'to replace'],
  ['forget-replace', 'to forget and create again'],
  ['delete', 'to destroy'],
  ['create', 'to add'],
  ['update', 'to change'],
  ['read', 'to read'],
  ['forget', 'to forget'],
];
const DANGER = '🟥';

/** `1 to replace, 1 to change`, or `no changes`. */
export function planCounts(review: PlanReview): string {
  const parts = COUNT_WORDS.filter(([action]) => review.counts[action as keyof PlanReview['counts']] > 0).map(
    ([action, words]) => `${review.counts[action as keyof PlanReview['counts']]} ${words}`,
  );
  return parts.length === 0 ? 'no changes' : parts.join(', ');
}

function changeLine(change: PlannedChange, dangerous: Set<string>): string {
  const symbol = change.action === 'replace' && change.actions[0] === 'create' ? '+/-' : SYMBOL[change.action];
  const action = change.action === 'unknown' ? change.actions.join(',') : change.action;
  const reason = change.reason === undefined ? '' : ` (${change.reason})`;
  return `${symbol.padStart(3)} ${action.padEnd(8)} ${change.address}${reason}${dangerous.has(change.address) ? ` ${DANGER} DANGER` : ''}`;
}

/** One attribute of a change as a diff line: `~ config_patch_revision: 1 → 2`, a sensitive one named with its value blanked. */
export function attributeLine(attribute: AttributeChange): string {
  const forces = attribute.forcesReplacement === true ? ' # forces replacement' : '';
  if (attribute.sensitive) return `      ~ ${attribute.name}: (sensitive value)${forces}`;
  return `      ~ ${attribute.name}: ${attribute.before ?? 'null'} → ${attribute.after ?? 'null'}${forces}`;
}

/** Changes grouped by provider (Talos and Proxmox first), then by action, most destructive first; under each, the attributes it changes. */
export function groupedChanges(review: PlanReview): string[] {
  const dangerous = new Set(review.dangers.filter((d) => d.level === 'stop').map((d) => d.address));
  const providers = [...new Set(review.changes.map((c) => c.provider))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return providers.flatMap((provider) => {
    const mine = review.changes.filter((c) => c.provider === provider);
    const ordered = ACTION_ORDER.flatMap((action) => mine.filter((c) => c.action === action));
    return [provider, ...ordered.flatMap((c) => [changeLine(c, dangerous), ...(c.attributes ?? []).map(attributeLine)])];
  });
}

function rank(provider: string): number {
  return provider === 'Talos' ? 0 : provider === 'Proxmox' ? 1 : 2;
}

const REBOOT_WORDS: Record<RebootMode, string> = {
  may: 'may reboot them',
  will: 'reboots them',
  no: 'without a reboot',
  staged: 'staged until their next reboot',
};

function counted(n: number, one: string, many: string): string {
  return `${n} ${n === 1 ? one : many}`;
}

/**
 * What applying the plan does to the nodes, first line the riskiest: "applies configuration to 3
 * control planes at once; may reboot them". Empty when the plan touches no node.
 */
export function planEffectLines(effect: PlanEffect): string[] {
  const lines: string[] = [];
  const { controlPlanes, workers, unknown, reboot } = effect.configured;
  const rebooting = reboot === 'may' || reboot === 'will';
  const groups: [string[], string, string][] = [
    [controlPlanes, 'control plane', 'control planes'],
    [workers, 'worker', 'workers'],
    [unknown, 'node', 'nodes'],
  ];
  for (const [names, one, many] of groups) {
    if (names.length === 0) continue;
    const them = names.length === 1 ? REBOOT_WORDS[reboot].replace('them', 'it') : REBOOT_WORDS[reboot];
    lines.push(
      `applies configuration to ${counted(names.length, one, many)}${names.length > 1 ? ' at once' : ''} (${names.join(', ')}); ${them}`,
    );
  }
  if (rebooting && controlPlanes.length > 0 && controlPlanes.length === effect.controlPlaneCount) {
    lines.unshift(
      effect.controlPlaneCount === 1
        ? `⚠ Only control plane: the Kubernetes API and etcd are down while ${controlPlanes[0]!} reboots`
        : `⚠ All ${effect.controlPlaneCount} control planes at once: if they reboot together, etcd loses quorum and the Kubernetes API is down until they are back`,
    );
  }
  if (effect.replaced.length > 0) lines.push(`replaces the VM of ${effect.replaced.join(', ')}: the node and its disks are destroyed`);
  if (effect.destroyed.length > 0) lines.push(`destroys the VM of ${effect.destroyed.join(', ')}`);
  if (effect.created.length > 0)
    lines.push(`adds ${effect.created.join(', ')}, watched until ${effect.created.length === 1 ? 'it joins' : 'they join'}`);
  return lines;
}
