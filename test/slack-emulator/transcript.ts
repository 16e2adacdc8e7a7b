import { BOT_USER_ID } from './config.ts';
import type { Directory } from './directory.ts';
import type { MessageStore } from './message-store.ts';
import { isObject } from './payloads.ts';
import { tsToMillis } from './ts-clock.ts';
import type { JsonObject, Message } from './types.ts';

const REPLY_INDENT = '    │ ';
const BODY_INDENT = '  ';

export interface TranscriptOptions {
  /** The reader's time zone: Slack shows each `<!date^…>` token in the zone of whoever reads it. Default UTC. */
  timeZone?: string;
  /** The reader's now, for `Today`/`Yesterday`/`Tomorrow` in `{date_short_pretty}`. Default the current time. */
  now?: Date;
}

/**
 * Renders a channel the way an operator would read it in Slack: top-level messages in order,
 * the current version of each (blocks shown instead of fallback text, as clients do),
 * thread replies indented beneath their parent, a button's confirm dialog under its buttons,
 * and times in the reader's zone.
 */
export function renderTranscript(channel: string, messages: MessageStore, directory: Directory, options: TranscriptOptions = {}): string {
  const lines = [`#${directory.channelName(channel)} (${channel})`];
  for (const message of messages.topLevel(channel)) {
    lines.push(...renderMessage(message, directory).map((l) => BODY_INDENT + l));
    if (message.thread_ts !== message.ts) continue;
    for (const reply of messages.replies(channel, message.ts)) {
      lines.push(...renderMessage(reply, directory).map((l) => BODY_INDENT + REPLY_INDENT + l));
    }
  }
  const reader = readerOf(options);
  return lines.map((line) => humanize(line, directory, reader)).join('\n');
}

/** One message (or one version of it) as the transcript shows it to the reader. */
export function renderOne(message: Message, directory: Directory, options: TranscriptOptions = {}): string {
  const reader = readerOf(options);
  return renderMessage(message, directory)
    .map((line) => humanize(line, directory, reader))
    .join('\n');
}

/** Slack markup in a text (mentions, channels, dates, links) as a client shows it to the reader. */
export function renderText(text: string, directory: Directory, options: TranscriptOptions = {}): string {
  return humanize(text, directory, readerOf(options));
}

function readerOf(options: TranscriptOptions): { timeZone: string; now: Date } {
  return { timeZone: options.timeZone ?? 'UTC', now: options.now ?? new Date() };
}

function renderMessage(message: Message, directory: Directory): string[] {
  const time = new Date(tsToMillis(message.ts)).toISOString().slice(11, 19);
  const author = message.user ?? message.bot_id ?? 'unknown';
  const name = author === BOT_USER_ID ? `${directory.userName(author)} (bot)` : directory.userName(author);
  const flags = [message.edited ? '(edited)' : '', message.subtype === 'thread_broadcast' ? '(also sent to channel)' : '']
    .filter((f) => f !== '')
    .join(' ');
  const body = message.blocks !== undefined && message.blocks.length > 0 ? renderBlocks(message.blocks) : splitLines(message.text);
  for (const file of message.files ?? []) body.push(`[file: ${file.name}${file.title === file.name ? '' : ` "${file.title}"`}]`);
  const header = `[${time}] ${name}${flags === '' ? '' : ` ${flags}`}:`;
  const [first = '', ...rest] = body;
  return [`${header} ${first}`.trimEnd(), ...rest.map((l) => `${' '.repeat(11)}${l}`)];
}

export function renderBlocks(blocks: JsonObject[]): string[] {
  const lines: string[] = [];
  for (const block of blocks) lines.push(...renderBlock(block));
  return lines;
}

function renderBlock(block: JsonObject): string[] {
  switch (block.type) {
    case 'header':
      return [`== ${textOf(block.text)} ==`];
    case 'section': {
      const lines = splitLines(textOf(block.text));
      // A field is "*Label*\nvalue" in Slack's two-column layout; one line of "Label: value" pairs reads better here.
      const fields = Array.isArray(block.fields)
        ? block.fields.map((f) =>
            textOf(f)
              .replace(/^\*([^*]+)\*\n/, '$1: ')
              .replace(/\n/g, ' '),
          )
        : [];
      if (fields.length > 0) lines.push(fields.join('  ·  '));
      if (isObject(block.accessory)) lines.push(renderElement(block.accessory));
      return lines.filter((l) => l !== '');
    }
    case 'context':
      return [(Array.isArray(block.elements) ? block.elements.map(textOf) : []).filter((t) => t !== '').join(' · ')];
    case 'actions': {
      const elements = Array.isArray(block.elements) ? block.elements.filter(isObject) : [];
      // What a click on such a button opens first: Slack's confirm dialog.
      const dialogs = elements.flatMap((e) =>
        isObject(e.confirm)
          ? [
              `  ↳ [${textOf(e.text)}] asks first: "${textOf(e.confirm.title)}" ${textOf(e.confirm.text)} [${textOf(e.confirm.confirm)}] [${textOf(e.confirm.deny)}]`,
            ]
          : [],
      );
      return [elements.map(renderElement).join(' '), ...dialogs];
    }
    case 'divider':
      return ['────────'];
    case 'markdown':
      return splitLines(typeof block.text === 'string' ? block.text : '');
    case 'image':
      return [`[image: ${typeof block.alt_text === 'string' ? block.alt_text : ''}]`];
    case 'rich_text':
      return splitLines(richText(block));
    case 'input':
      return renderInput(block);
    default:
      return [`[${String(block.type)} block]`];
  }
}

/** An input block: its label, then the control (☐/☑ per checkbox, the chosen option of a select, a text box). */
function renderInput(block: JsonObject, state?: JsonObject): string[] {
  const element = isObject(block.element) ? block.element : {};
  const label = `${textOf(block.label)}${block.optional === true ? ' (optional)' : ''}:`;
  const hint = textOf(block.hint) === '' ? [] : [`  (${textOf(block.hint)})`];
  if (element.type === 'checkboxes') {
    const options = Array.isArray(element.options) ? element.options.filter(isObject) : [];
    const ticked = new Set(
      (Array.isArray(state?.selected_options) ? state.selected_options : []).filter(isObject).map((o) => String(o.value)),
    );
    return [label, ...options.map((o) => `  ${ticked.has(String(o.value)) ? '☑' : '☐'} ${textOf(o.text)}`), ...hint];
  }
  if (element.type === 'plain_text_input') {
    const value = typeof state?.value === 'string' ? state.value : textOf(element.placeholder);
    return [`${label} [${value}___]`, ...hint];
  }
  const chosen = isObject(state?.selected_option) ? textOf(state.selected_option.text) : '';
  return [`${label} [${chosen || textOf(element.placeholder) || String(element.type)} ▾]`, ...hint];
}

/**
 * A modal as its user sees it: the title in a frame, the blocks with each input's current value,
 * the errors the bot answered under their inputs, and the close and submit buttons at the bottom.
 */
export function renderModal(view: JsonObject, errors: Record<string, string> = {}): string[] {
  const values = isObject(view.state) && isObject(view.state.values) ? view.state.values : {};
  const lines = [`┌─ modal: ${textOf(view.title)} ─┐`];
  for (const block of Array.isArray(view.blocks) ? view.blocks.filter(isObject) : []) {
    const blockValues = values[String(block.block_id)];
    const state = isObject(blockValues) ? Object.values(blockValues).find(isObject) : undefined;
    const shown = block.type === 'input' ? renderInput(block, state) : renderBlock(block);
    lines.push(...shown.map((l) => `│ ${l}`));
    const error = errors[String(block.block_id)];
    if (error !== undefined) lines.push(`│   ⚠ ${error}`);
  }
  const buttons = [isObject(view.close) ? `[${textOf(view.close)}]` : '[Cancel]', isObject(view.submit) ? `[${textOf(view.submit)}]` : '']
    .filter((b) => b !== '')
    .join(' ');
  lines.push(`└─ ${buttons}`);
  return lines;
}

function renderElement(element: JsonObject): string {
  if (element.type === 'button') return `[${textOf(element.text)}]`;
  const label = textOf(element.placeholder) || textOf(element.text) || String(element.type);
  return `[${label} ▾]`;
}

function textOf(value: unknown): string {
  if (!isObject(value)) return '';
  if (typeof value.text === 'string') return value.text;
  if (value.type === 'image' && typeof value.alt_text === 'string') return `[${value.alt_text}]`;
  return '';
}

/** Flattens rich_text elements to their visible text. */
function richText(node: unknown): string {
  if (!isObject(node)) return '';
  if (typeof node.text === 'string') return node.text;
  if (node.type === 'user' && typeof node.user_id === 'string') return `<@${node.user_id}>`;
  if (node.type === 'link' && typeof node.url === 'string') return node.url;
  const children = Array.isArray(node.elements) ? node.elements.map(richText) : [];
  return children.join(node.type === 'rich_text' || node.type === 'rich_text_list' ? '\n' : '');
}

/** Turns Slack's `<@U1>`, `<#C1|ops>`, `<!subteam^S1>`, `<!date^…|…>` and `<url|label>` markup into what a client shows. */
function humanize(text: string, directory: Directory, reader: { timeZone: string; now: Date }): string {
  const dated = text.replace(
    /<!date\^(\d+)\^([^^|<>]+)(?:\^[^|<>]*)?\|([^<>]*)>/g,
    (_match, seconds: string, format: string, fallback: string) => localDate(Number(seconds), format, fallback, reader),
  );
  return dated.replace(
    /<([@#!])?([^<>|]+)(?:\|([^<>]*))?>/g,
    (_match, sigil: string | undefined, target: string, label: string | undefined) => {
      if (sigil === '@') return `@${directory.userName(target)}`;
      if (sigil === '#') return `#${label ?? directory.channelName(target)}`;
      if (sigil === '!') return `@${label ?? target.replace(/^subteam\^/, '')}`;
      return label ?? target;
    },
  );
}

/**
 * A date token as Slack shows it to a reader in `timeZone`: `{date_short_pretty}` is Today,
 * Yesterday, Tomorrow or `Dec 1, 2026`; `{time}` is `07:30`. Other tokens keep the fallback.
 */
function localDate(seconds: number, format: string, fallback: string, reader: { timeZone: string; now: Date }): string {
  const at = new Date(seconds * 1000);
  const day = (d: Date): string =>
    new Intl.DateTimeFormat('en-CA', { timeZone: reader.timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(d);
  const shift = (days: number): string => day(new Date(reader.now.getTime() + days * 86_400_000));
  const pretty =
    { [shift(0)]: 'Today', [shift(-1)]: 'Yesterday', [shift(1)]: 'Tomorrow' }[day(at)] ??
    new Intl.DateTimeFormat('en-US', { timeZone: reader.timeZone, month: 'short', day: 'numeric', year: 'numeric' }).format(at);
  const time = new Intl.DateTimeFormat('en-GB', { timeZone: reader.timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).format(
    at,
  );
  const tokens: Record<string, string> = { '{date_short_pretty}': pretty, '{time}': time };
  const known = format.replace(/\{[a-z_]+\}/g, (token) => tokens[token] ?? '\u0000');
  return known.includes('\u0000') ? fallback : known;
}

function splitLines(text: string): string[] {
  return text === '' ? [] : text.split('\n');
}
