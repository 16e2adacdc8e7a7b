/**
 * Block Kit as HTML for the browser demo: header, section (text, fields, accessory), context,
 * actions (buttons with their confirm dialogs, checkboxes, selects), divider, image, rich text,
 * and a modal's inputs. Each interactive element carries, in data attributes, what the page sends
 * back to the emulator when it is used; every text is escaped (mrkdwn-html.ts).
 */
import type { JsonObject } from '../../slack-emulator/index.ts';
import { escapeHtml, type MarkupNames, mrkdwnToHtml, plainToHtml } from './mrkdwn-html.ts';

/** Where a block's interactive elements live: a channel message, a modal, or the Home tab. */
export type Surface = { kind: 'message'; channel: string; ts: string } | { kind: 'view'; viewId: string } | { kind: 'home' };

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function list(value: unknown): JsonObject[] {
  return Array.isArray(value) ? value.filter(isObject) : [];
}

/** A text object (plain_text or mrkdwn) as HTML. */
export function textHtml(value: unknown, names: MarkupNames): string {
  if (!isObject(value) || typeof value.text !== 'string') return '';
  return value.type === 'mrkdwn' ? mrkdwnToHtml(value.text, names) : plainToHtml(value.text);
}

function plain(value: unknown): string {
  return isObject(value) && typeof value.text === 'string' ? value.text : '';
}

function attrs(values: Record<string, string | undefined>): string {
  return Object.entries(values)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => ` ${k}="${escapeHtml(v)}"`)
    .join('');
}

function surfaceAttrs(surface: Surface): Record<string, string | undefined> {
  switch (surface.kind) {
    case 'message':
      return { 'data-surface': 'message', 'data-channel': surface.channel, 'data-ts': surface.ts };
    case 'view':
      return { 'data-surface': 'view', 'data-view-id': surface.viewId };
    case 'home':
      return { 'data-surface': 'home' };
  }
}

/** A button, and the dialog Slack's client shows before it sends a click whose button asks to be confirmed. */
function buttonHtml(element: JsonObject, blockId: string | undefined, surface: Surface, names: MarkupNames): string {
  const style = element.style === 'primary' || element.style === 'danger' ? ` ${element.style}` : '';
  const button = `<button type="button" class="btn${style}"${attrs({
    'data-act': 'click',
    ...surfaceAttrs(surface),
    'data-action-id': typeof element.action_id === 'string' ? element.action_id : undefined,
    'data-block-id': blockId,
    'data-value': typeof element.value === 'string' ? element.value : undefined,
    'data-url': typeof element.url === 'string' ? element.url : undefined,
  })}>${plainToHtml(plain(element.text))}</button>`;
  if (!isObject(element.confirm)) return button;
  const c = element.confirm;
  const dialog =
    `<div class="confirm" hidden><div class="confirm-title">${plainToHtml(plain(c.title))}</div>` +
    `<div class="confirm-text">${textHtml(c.text, names)}</div>` +
    `<div class="confirm-buttons"><button type="button" class="btn" data-confirm="deny">${plainToHtml(plain(c.deny) || 'Cancel')}</button>` +
    `<button type="button" class="btn primary" data-confirm="yes">${plainToHtml(plain(c.confirm) || 'Yes')}</button></div></div>`;
  return `<span class="confirmable">${button}${dialog}</span>`;
}

/** The options chosen in a view's state for this element, else its initial ones. */
function chosen(element: JsonObject, state: JsonObject | undefined): Set<string> {
  const fromState = state?.selected_options ?? (isObject(state?.selected_option) ? [state.selected_option] : undefined);
  const initial = element.initial_options ?? (isObject(element.initial_option) ? [element.initial_option] : []);
  return new Set(list(fromState ?? initial).map((o) => String(o.value)));
}

function checkboxesHtml(element: JsonObject, name: string, state: JsonObject | undefined, names: MarkupNames): string {
  const ticked = chosen(element, state);
  const boxes = list(element.options).map((o) => {
    const value = String(o.value);
    return `<label class="checkbox"><input type="checkbox"${attrs({ name, value })}${ticked.has(value) ? ' checked' : ''}> ${textHtml(o.text, names)}${
      isObject(o.description) ? `<div class="hint">${textHtml(o.description, names)}</div>` : ''
    }</label>`;
  });
  return `<div class="checkboxes"${attrs({ 'data-action-id': String(element.action_id) })}>${boxes.join('')}</div>`;
}

function selectHtml(element: JsonObject, name: string, state: JsonObject | undefined): string {
  const picked = chosen(element, state);
  const groups = list(element.option_groups);
  const option = (o: JsonObject): string =>
    `<option${attrs({ value: String(o.value) })}${picked.has(String(o.value)) ? ' selected' : ''}>${escapeHtml(plain(o.text))}</option>`;
  const body =
    groups.length > 0
      ? groups.map((g) => `<optgroup${attrs({ label: plain(g.label) })}>${list(g.options).map(option).join('')}</optgroup>`).join('')
      : list(element.options).map(option).join('');
  const placeholder = `<option value=""${picked.size === 0 ? ' selected' : ''}>${escapeHtml(plain(element.placeholder) || 'Choose…')}</option>`;
  return `<select${attrs({ name })}>${placeholder}${body}</select>`;
}

function textInputHtml(element: JsonObject, name: string, state: JsonObject | undefined): string {
  const value = typeof state?.value === 'string' ? state.value : typeof element.initial_value === 'string' ? element.initial_value : '';
  const common = attrs({
    name,
    placeholder: plain(element.placeholder) || undefined,
    maxlength: typeof element.max_length === 'number' ? String(element.max_length) : undefined,
  });
  return element.multiline === true
    ? `<textarea${common} rows="3">${escapeHtml(value)}</textarea>`
    : `<input type="text"${common}${attrs({ value })}>`;
}

/** An element outside an input block (an accessory, an actions element). */
function elementHtml(element: JsonObject, blockId: string | undefined, surface: Surface, names: MarkupNames): string {
  switch (element.type) {
    case 'button':
      return buttonHtml(element, blockId, surface, names);
    case 'checkboxes':
      return checkboxesHtml(element, String(element.action_id), undefined, names);
    case 'static_select':
      return selectHtml(element, String(element.action_id), undefined);
    case 'image':
      return `<span class="image">[${escapeHtml(typeof element.alt_text === 'string' ? element.alt_text : 'image')}]</span>`;
    default:
      return `<span class="unsupported">[${escapeHtml(String(element.type))}]</span>`;
  }
}

function richText(node: unknown, names: MarkupNames): string {
  if (!isObject(node)) return '';
  if (typeof node.text === 'string') return plainToHtml(node.text);
  if (node.type === 'user' && typeof node.user_id === 'string') return mrkdwnToHtml(`<@${node.user_id}>`, names);
  if (node.type === 'link' && typeof node.url === 'string') return mrkdwnToHtml(`<${node.url}>`, names);
  const children = list(node.elements).map((child) => richText(child, names));
  return children.join(node.type === 'rich_text' || node.type === 'rich_text_list' ? '<br>' : '');
}

export interface BlockOptions {
  surface: Surface;
  names: MarkupNames;
  /** A view's `state.values`, by block_id then action_id. */
  values?: JsonObject;
  /** The bot's errors by block_id, shown under their inputs. */
  errors?: Record<string, string>;
}

function inputHtml(block: JsonObject, blockId: string, options: BlockOptions): string {
  const element = isObject(block.element) ? block.element : {};
  const blockValues = options.values?.[blockId];
  const state = isObject(blockValues) ? Object.values(blockValues).find(isObject) : undefined;
  const control =
    element.type === 'plain_text_input'
      ? textInputHtml(element, blockId, state)
      : element.type === 'checkboxes'
        ? checkboxesHtml(element, blockId, state, options.names)
        : element.type === 'static_select'
          ? selectHtml(element, blockId, state)
          : `<span class="unsupported">[${escapeHtml(String(element.type))}]</span>`;
  const error = options.errors?.[blockId];
  return (
    `<div class="block input"${attrs({ 'data-block-id': blockId, 'data-kind': String(element.type) })}>` +
    `<label class="input-label">${plainToHtml(plain(block.label))}${block.optional === true ? ' <span class="optional">(optional)</span>' : ''}</label>` +
    control +
    (isObject(block.hint) ? `<div class="hint">${textHtml(block.hint, options.names)}</div>` : '') +
    (error === undefined ? '' : `<div class="error" role="alert">⚠ ${escapeHtml(error)}</div>`) +
    `</div>`
  );
}

function blockHtml(block: JsonObject, options: BlockOptions): string {
  const { names, surface } = options;
  const blockId = typeof block.block_id === 'string' ? block.block_id : undefined;
  switch (block.type) {
    case 'header':
      return `<div class="block header">${plainToHtml(plain(block.text))}</div>`;
    case 'section': {
      const fields = list(block.fields).map((f) => `<div class="field">${textHtml(f, names)}</div>`);
      const accessory = isObject(block.accessory)
        ? `<div class="accessory">${elementHtml(block.accessory, blockId, surface, names)}</div>`
        : '';
      return (
        `<div class="block section"><div class="section-body">${textHtml(block.text, names)}` +
        (fields.length > 0 ? `<div class="fields">${fields.join('')}</div>` : '') +
        `</div>${accessory}</div>`
      );
    }
    case 'context':
      return `<div class="block context">${list(block.elements)
        .map((e) => (e.type === 'image' ? elementHtml(e, blockId, surface, names) : `<span>${textHtml(e, names)}</span>`))
        .join('<span class="dot"> · </span>')}</div>`;
    case 'actions':
      return `<div class="block actions"${attrs({ 'data-block-id': blockId })}>${list(block.elements)
        .map((e) => elementHtml(e, blockId, surface, names))
        .join('')}</div>`;
    case 'divider':
      return '<hr class="block divider">';
    case 'image':
      return `<div class="block image">[${escapeHtml(typeof block.alt_text === 'string' ? block.alt_text : 'image')}]</div>`;
    case 'markdown':
      return `<div class="block markdown">${mrkdwnToHtml(typeof block.text === 'string' ? block.text : '', names)}</div>`;
    case 'rich_text':
      return `<div class="block rich-text">${richText(block, names)}</div>`;
    case 'input':
      return inputHtml(block, blockId ?? '', options);
    default:
      return `<div class="block unsupported">[${escapeHtml(String(block.type))} block]</div>`;
  }
}

/** Blocks as HTML, one element per block. */
export function blocksHtml(blocks: unknown, options: BlockOptions): string {
  return list(blocks)
    .map((b) => blockHtml(b, options))
    .join('');
}
