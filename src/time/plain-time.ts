/**
 * A point in time as plain text: `2026-11-29 23:51 UTC`. No markup: the fallback of a Slack date
 * token (src/chat/blocks.ts) and the time in plain evidence, so rules write it too.
 */
export function plainTime(time: string | Date): string {
  const date = typeof time === 'string' ? new Date(time) : time;
  if (Number.isNaN(date.getTime())) return String(time);
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}
