import { plainTime } from '../time/plain-time.ts';
import type { Block } from '../port/chat-port.ts';

export { plainTime };

/** Slack's limits (Block Kit reference): section text 3000, header 150, fields 10 × 2000. */
const SECTION_LIMIT = 3000;
const HEADER_LIMIT = 150;

export function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

export function header(text: string): Block {
  return { type: 'header', text: { type: 'plain_text', text: truncate(text, HEADER_LIMIT), emoji: true } };
}

export function section(mrkdwn: string): Block {
  return { type: 'section', text: { type: 'mrkdwn', text: truncate(mrkdwn, SECTION_LIMIT) } };
}

export function fields(pairs: [string, string][]): Block {
  return {
    type: 'section',
    fields: pairs.slice(0, 10).map(([k, v]) => ({ type: 'mrkdwn', text: truncate(`*${k}*\n${v}`, 2000) })),
  };
}

export function context(mrkdwn: string): Block {
  return { type: 'context', elements: [{ type: 'mrkdwn', text: truncate(mrkdwn, SECTION_LIMIT) }] };
}

/**
 * Evidence as a preformatted block; long evidence keeps its head and says how much was cut.
 * Takes raw lines (tool output, names from a cluster) and escapes them itself.
 */
export function preformatted(lines: string[]): Block {
  const fence = '```';
  const budget = SECTION_LIMIT - 2 * fence.length - 40;
  let body = '';
  let shown = 0;
  // Escaped before measuring: the budget counts what Slack receives. Slack shows date tokens raw inside
  // code, so a time in evidence reads as its UTC fallback.
  for (const line of lines.map((l) => escapeMrkdwn(plainTimes(l)))) {
    if (body.length + line.length + 1 > budget) break;
    body += `${line}\n`;
    shown += 1;
  }
  const more = lines.length - shown;
  return section(`${fence}${body.trimEnd()}${more > 0 ? `\n… ${more} more line(s)` : ''}${fence}`);
}

/**
 * Characters Slack's mrkdwn treats as markup in text that came from a cluster or a person. A time
 * from `formatTime` passes: in exactly that shape a token can only show a date (no link, no
 * mention), and texts such as a window refusal carry one.
 */
export function escapeMrkdwn(text: string): string {
  return escapeAround(text, DATE_TOKEN, escapeAll);
}

/** `escape` applied to the text between the matches of `keep` (a global pattern); the matches stay as they are. */
export function escapeAround(text: string, keep: RegExp, escape: (part: string) => string): string {
  let out = '';
  let from = 0;
  for (const m of text.matchAll(keep)) {
    out += escape(text.slice(from, m.index)) + m[0];
    from = m.index + m[0].length;
  }
  return out + escape(text.slice(from));
}

function escapeAll(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function mentionUser(user: string): string {
  return `<@${user}>`;
}

/** A user (`U…`, `W…`) or a user group (`S…`) as Slack notifies them: `<@U…>`, `<!subteam^S…>`. */
export function mention(id: string): string {
  return id.startsWith('S') ? `<!subteam^${id}>` : mentionUser(id);
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1000);
  return `${minutes} min ${seconds} s`;
}

/** What `formatTime` makes, and nothing else: `<!date^<seconds>^{date_short_pretty} {time}|<yyyy-mm-dd hh:mm> UTC>`. */
const DATE_TOKEN = /<!date\^\d{1,12}\^\{date_short_pretty\} \{time\}\|(\d{4}-\d\d-\d\d \d\d:\d\d UTC)>/g;

/**
 * A point in time as a Slack date token: every reader sees it in their own time zone, and
 * clients that cannot render it (notifications, exports) show the fallback `2026-11-29 23:51 UTC`.
 * Tokens render in mrkdwn text (sections, fields, context, message text), not in code or
 * plain_text: button labels, headers and confirm titles take `plainTime`.
 */
export function formatTime(time: string | Date): string {
  const date = typeof time === 'string' ? new Date(time) : time;
  if (Number.isNaN(date.getTime())) return String(time);
  return `<!date^${Math.floor(date.getTime() / 1000)}^{date_short_pretty} {time}|${plainTime(date)}>`;
}

/** Text with its date tokens replaced by their fallback, for places that are not mrkdwn (a file, a code block). */
export function plainTimes(text: string): string {
  return text.replace(DATE_TOKEN, '$1');
}

export interface ButtonSpec {
  text: string;
  actionId: string;
  /** Carries the operation id and a nonce; never a secret. */
  value: string;
  style?: 'primary' | 'danger';
  /** A link button: Slack opens it (and still sends the click, to be acked). */
  url?: string;
  confirm?: { title: string; text: string; confirm: string; deny: string };
}

export function actions(blockId: string, buttons: ButtonSpec[]): Block {
  return {
    type: 'actions',
    block_id: blockId.slice(0, 255),
    elements: buttons.map((b) => ({
      type: 'button',
      action_id: b.actionId,
      text: { type: 'plain_text', text: truncate(b.text, 75), emoji: true },
      value: b.value,
      ...(b.url ? { url: b.url } : {}),
      ...(b.style ? { style: b.style } : {}),
      ...(b.confirm
        ? {
            confirm: {
              title: { type: 'plain_text', text: truncate(b.confirm.title, 100) },
              text: { type: 'mrkdwn', text: truncate(b.confirm.text, 300) },
              confirm: { type: 'plain_text', text: truncate(b.confirm.confirm, 30) },
              deny: { type: 'plain_text', text: truncate(b.confirm.deny, 30) },
            },
          }
        : {}),
    })),
  };
}
