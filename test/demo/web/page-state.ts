/**
 * What one reader's page shows, read from the Slack emulator and the simulator: the channel's
 * messages with the reader's own ephemeral replies among them, the open thread, the reader's open
 * modal and Home tab, and the simulated estate. Rendered on the server, so every text is escaped in
 * one place (blocks-html.ts); the page swaps the fragments in.
 */
import type { Ephemeral, JsonObject, Message, SlackEmulator } from '../../slack-emulator/index.ts';
import { BOT_USER_ID } from '../../slack-emulator/index.ts';
import type { Simulator } from '../../sim/index.ts';
import { blocksHtml } from './blocks-html.ts';
import { escapeHtml, type MarkupNames, mrkdwnToHtml } from './mrkdwn-html.ts';

/** Whose page and where they look. */
export interface Reader {
  user: string;
  channel: string;
  /** The root `ts` of the thread open beside the channel. */
  thread?: string;
  /** The reader's time zone for Slack's date tokens; default UTC. */
  timeZone?: string;
}

export interface PageState {
  channel: string;
  thread: string;
  modal: string;
  home: string;
  estate: string;
}

function namesFor(slack: SlackEmulator, reader: Reader): MarkupNames {
  return { readable: (token) => slack.readable(token, { timeZone: reader.timeZone ?? 'UTC' }) };
}

function timeOf(ts: string): string {
  return new Date(Math.floor(Number(ts) * 1000)).toISOString().slice(11, 19);
}

function authorOf(slack: SlackEmulator, user: string | undefined): string {
  if (user === undefined || user === BOT_USER_ID) return 'talos';
  return slack.readable(`<@${user}>`).replace(/^@/, '');
}

function messageHtml(slack: SlackEmulator, message: Message, names: MarkupNames, options: { inThread: boolean }): string {
  const bot = message.user === undefined || message.user === BOT_USER_ID;
  const flags = [
    message.edited ? '<span class="flag">(edited)</span>' : '',
    message.subtype === 'thread_broadcast' && !options.inThread ? '<span class="flag">replied to a thread</span>' : '',
  ].join('');
  const body =
    message.blocks !== undefined && message.blocks.length > 0
      ? blocksHtml(message.blocks, { surface: { kind: 'message', channel: message.channel, ts: message.ts }, names })
      : `<div class="text">${mrkdwnToHtml(message.text, names)}</div>`;
  const files = (message.files ?? []).map((f) => `<div class="file">📄 ${escapeHtml(f.title || f.name)}</div>`).join('');
  const replies =
    !options.inThread && message.thread_ts === message.ts && (message.reply_count ?? 0) > 0
      ? `<button type="button" class="replies" data-act="open-thread" data-ts="${escapeHtml(message.ts)}">${message.reply_count} ${
          message.reply_count === 1 ? 'reply' : 'replies'
        }</button>`
      : '';
  return (
    `<div class="message" data-ts="${escapeHtml(message.ts)}">` +
    `<div class="meta"><span class="author">${escapeHtml(authorOf(slack, message.user))}</span>${bot ? '<span class="app">APP</span>' : ''}` +
    `<span class="time">${timeOf(message.ts)} UTC</span>${flags}</div>` +
    `${body}${files}${replies}</div>`
  );
}

function ephemeralHtml(ephemeral: Ephemeral, names: MarkupNames): string {
  const body =
    ephemeral.blocks !== undefined && ephemeral.blocks.length > 0
      ? blocksHtml(ephemeral.blocks, { surface: { kind: 'message', channel: ephemeral.channel, ts: ephemeral.message_ts }, names })
      : `<div class="text">${mrkdwnToHtml(ephemeral.text, names)}</div>`;
  return (
    `<div class="message ephemeral" data-ts="${escapeHtml(ephemeral.message_ts)}">` +
    `<div class="meta"><span class="author">talos</span><span class="app">APP</span><span class="time">${timeOf(ephemeral.message_ts)} UTC</span>` +
    `<span class="flag">Only visible to you</span></div>${body}</div>`
  );
}

/** Messages and the reader's ephemerals in the order they came. */
function timeline(items: { ts: string; html: string }[]): string {
  return items
    .sort((a, b) => Number(a.ts) - Number(b.ts))
    .map((i) => i.html)
    .join('');
}

function channelHtml(slack: SlackEmulator, reader: Reader, names: MarkupNames): string {
  const messages = slack
    .channelMessages(reader.channel)
    .map((m) => ({ ts: m.ts, html: messageHtml(slack, m, names, { inThread: false }) }));
  const ephemerals = slack
    .ephemerals(reader.channel, reader.user)
    .filter((e) => e.thread_ts === undefined)
    .map((e) => ({ ts: e.message_ts, html: ephemeralHtml(e, names) }));
  const all = [...messages, ...ephemerals];
  return all.length === 0 ? '<div class="empty">No messages yet. Type <code>/talos help</code> below.</div>' : timeline(all);
}

function threadHtml(slack: SlackEmulator, reader: Reader, names: MarkupNames): string {
  if (reader.thread === undefined) return '';
  const root = slack.message(reader.channel, reader.thread);
  if (root === undefined) return '';
  const replies = slack
    .thread(reader.channel, reader.thread)
    .map((m) => ({ ts: m.ts, html: messageHtml(slack, m, names, { inThread: true }) }));
  const ephemerals = slack
    .ephemerals(reader.channel, reader.user)
    .filter((e) => e.thread_ts === reader.thread)
    .map((e) => ({ ts: e.message_ts, html: ephemeralHtml(e, names) }));
  return (
    `<div class="thread-head"><span>Thread</span><button type="button" class="btn" data-act="close-thread">Close</button></div>` +
    messageHtml(slack, root, names, { inThread: true }) +
    `<div class="thread-replies">${timeline([...replies, ...ephemerals])}</div>`
  );
}

function plainText(value: unknown): string {
  return typeof value === 'object' && value !== null && typeof (value as JsonObject).text === 'string'
    ? String((value as JsonObject).text)
    : '';
}

function modalHtml(slack: SlackEmulator, reader: Reader, names: MarkupNames): string {
  const modal = slack.openModal(reader.user);
  if (modal === undefined) return '';
  const { view } = modal;
  const state = view.state as { values?: JsonObject } | undefined;
  const body = blocksHtml(view.blocks, {
    surface: { kind: 'view', viewId: modal.viewId },
    names,
    values: state?.values ?? {},
    errors: modal.errors.at(-1) ?? {},
  });
  const submit = plainText(view.submit);
  return (
    `<form class="modal" data-view-id="${escapeHtml(modal.viewId)}" data-version="${modal.versions.length}.${modal.errors.length}">` +
    `<div class="modal-title">${escapeHtml(plainText(view.title))}</div><div class="modal-body">${body}</div>` +
    `<div class="modal-buttons"><button type="button" class="btn" data-act="close-view">${escapeHtml(plainText(view.close) || 'Cancel')}</button>` +
    (submit === '' ? '' : `<button type="submit" class="btn primary">${escapeHtml(submit)}</button>`) +
    `</div></form>`
  );
}

function homeHtml(slack: SlackEmulator, reader: Reader, names: MarkupNames): string {
  const view = slack.homeView(reader.user);
  if (view === undefined) return '<div class="empty">The bot has not published a Home tab for you yet.</div>';
  return blocksHtml(view.blocks, { surface: { kind: 'home' }, names });
}

function estateHtml(sim: Simulator): string {
  return Object.keys(sim.state.clusters)
    .map((name) => {
      const cluster = sim.cluster(name);
      const faults = Object.entries(sim.faults.get(name)).map(([k, v]) => `${k}: ${typeof v === 'function' ? 'hook' : JSON.stringify(v)}`);
      const nodes = cluster.nodes.map(
        (n) =>
          `<li><span class="node">${escapeHtml(n.hostname)}</span> <span class="role">${escapeHtml(n.role)}</span> ${escapeHtml(n.talosVersion)} · ${escapeHtml(n.stage)}</li>`,
      );
      return (
        `<div class="cluster" data-cluster="${escapeHtml(name)}"><div class="cluster-name">${escapeHtml(name)}</div><ul>${nodes.join('')}</ul>` +
        `<div class="faults">${faults.length === 0 ? 'No fault set.' : faults.map((f) => `⚠ ${escapeHtml(f)}`).join('<br>')}</div></div>`
      );
    })
    .join('');
}

/** The fragments of the reader's page as they stand now. */
export function pageState(slack: SlackEmulator, sim: Simulator, reader: Reader): PageState {
  const names = namesFor(slack, reader);
  return {
    channel: channelHtml(slack, reader, names),
    thread: threadHtml(slack, reader, names),
    modal: modalHtml(slack, reader, names),
    home: homeHtml(slack, reader, names),
    estate: estateHtml(sim),
  };
}
