/**
 * Slack's mrkdwn as HTML for the browser demo. Every character of a message reaches the page
 * escaped: the markup the page adds is fixed tags around escaped text, and a link's target is kept
 * only when it is http(s) or mailto.
 */

/** How the page names what Slack's markup points at: people, channels, user groups, dates. */
export interface MarkupNames {
  /** `<@U…>`, `<#C…>`, `<!subteam^S…>`, `<!date^…|…>` as a Slack client shows it (`@alice`, `#maint-production`, `Today 07:30`). */
  readable(token: string): string;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text (or an attribute value) as HTML that shows exactly these characters. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** Slack's own three escapes in a message text, undone: the text as its author meant it. */
function unescapeSlack(text: string): string {
  return text.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
}

/** Marks a held piece's index in the text: a private-use character, which no message of the bot holds (and is removed from any that does). */
const HOLD = '\uE000';
const HELD = /\uE000(\d+)\uE000/g;

const SAFE_URL = /^(https?:\/\/|mailto:)/i;

/** One `<…>` token of Slack's markup as HTML. */
function tokenHtml(inner: string, names: MarkupNames): string {
  const sigil = inner[0];
  if (sigil === '@' || sigil === '#' || sigil === '!') {
    const shown = escapeHtml(unescapeSlack(names.readable(`<${inner}>`)));
    return sigil === '!' && inner.startsWith('!date^') ? `<time>${shown}</time>` : `<span class="mention">${shown}</span>`;
  }
  const bar = inner.indexOf('|');
  const url = unescapeSlack(bar < 0 ? inner : inner.slice(0, bar));
  const label = unescapeSlack(bar < 0 ? inner : inner.slice(bar + 1));
  if (!SAFE_URL.test(url)) return escapeHtml(label);
  return `<a href="${escapeHtml(url)}" target="_blank" rel="noopener noreferrer">${escapeHtml(label)}</a>`;
}

/** Bold, italic, strike-through inside one escaped line (markers Slack honours at word edges). */
function inlineStyles(html: string): string {
  return html
    .replace(/(^|[\s(])\*(?=\S)([^*\n]*?\S)\*(?=$|[\s.,;:!?)])/g, '$1<b>$2</b>')
    .replace(/(^|[\s(])_(?=\S)([^_\n]*?\S)_(?=$|[\s.,;:!?)])/g, '$1<i>$2</i>')
    .replace(/(^|[\s(])~(?=\S)([^~\n]*?\S)~(?=$|[\s.,;:!?)])/g, '$1<s>$2</s>');
}

/**
 * A mrkdwn text as HTML: code blocks and spans (left as written), links, mentions, channels and
 * dates, bold, italic, strike-through, block quotes and line breaks. Anything else is shown as text.
 */
export function mrkdwnToHtml(text: string, names: MarkupNames): string {
  // Pieces already turned into HTML wait behind placeholders the text itself cannot hold.
  const held: string[] = [];
  const hold = (html: string): string => `${HOLD}${held.push(html) - 1}${HOLD}`;
  let work = text.replaceAll(HOLD, '');
  work = work.replace(/```\n?([\s\S]*?)```/g, (_m, code: string) => hold(`<pre>${escapeHtml(unescapeSlack(code))}</pre>`));
  work = work.replace(/`([^`\n]+)`/g, (_m, code: string) => hold(`<code>${escapeHtml(unescapeSlack(code))}</code>`));
  work = work.replace(/<([^<>\n]+)>/g, (_m, inner: string) => hold(tokenHtml(inner, names)));
  const lines = escapeHtml(unescapeSlack(work))
    .split('\n')
    .map((line) => {
      const quote = /^&gt; ?(.*)$/.exec(line);
      return quote ? `<blockquote>${inlineStyles(quote[1] ?? '')}</blockquote>` : inlineStyles(line);
    });
  return lines
    .join('<br>')
    .replace(/<\/blockquote><br>/g, '</blockquote>')
    .replace(HELD, (_m, i: string) => held[Number(i)] ?? '');
}

/** A plain_text object's text as HTML: escaped, line breaks kept. */
export function plainToHtml(text: string): string {
  return escapeHtml(text).replace(/\n/g, '<br>');
}
