import type { ChangeAction, PlannedChange, PlanReview } from '../tofu/parse-plan.ts';

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

/** Changes grouped by provider (Talos and Proxmox first), then by action, most destructive first. */
export function groupedChanges(review: PlanReview): string[] {
  const dangerous = new Set(review.dangers.filter((d) => d.level === 'stop').map((d) => d.address));
  const providers = [...new Set(review.changes.map((c) => c.provider))].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  return providers.flatMap((provider) => {
    const mine = review.changes.filter((c) => c.provider === provider);
    const ordered = ACTION_ORDER.flatMap((action) => mine.filter((c) => c.action === action));
    return [provider, ...ordered.map((c) => changeLine(c, dangerous))];
  });
}

function rank(provider: string): number {
  return provider === 'Talos' ? 0 : provider === 'Proxmox' ? 1 : 2;
}
