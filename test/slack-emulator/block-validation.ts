import type { JsonObject } from './types.ts';

/** Limits from the Block Kit reference; Slack rejects the whole message when one is exceeded. */
const LIMITS = {
  blocksPerMessage: 50,
  blockId: 255,
  actionId: 255,
  sectionText: 3000,
  sectionFields: 10,
  sectionFieldText: 2000,
  headerText: 150,
  markdownText: 12000,
  actionsElements: 25,
  contextElements: 10,
  buttonText: 75,
  buttonValue: 2000,
  buttonUrl: 3000,
  confirmTitle: 100,
  confirmText: 300,
  confirmButton: 30,
  altText: 2000,
} as const;

const BLOCK_TYPES = new Set([
  'actions',
  'context',
  'context_actions',
  'divider',
  'file',
  'header',
  'image',
  'input',
  'markdown',
  'rich_text',
  'section',
  'table',
  'video',
]);

export type BlockCheck =
  { ok: true; blocks: JsonObject[] } | { ok: false; error: 'invalid_blocks_format' | 'invalid_blocks'; errors: string[] };

export interface BlockCheckOptions {
  /** Blocks allowed: 50 in a message (the default), 100 in a modal or a Home tab. */
  maxBlocks?: number;
}

/**
 * Validates `blocks` as received (already JSON-decoded when it was valid JSON).
 * Error strings follow Slack's `<reason> [json-pointer:<path>]` form.
 */
export function validateBlocks(blocks: unknown, options: BlockCheckOptions = {}): BlockCheck {
  if (!Array.isArray(blocks) || !blocks.every(isObject)) {
    return { ok: false, error: 'invalid_blocks_format', errors: ['must be a JSON array of objects [json-pointer:/blocks]'] };
  }
  const errors: string[] = [];
  const maxBlocks = options.maxBlocks ?? LIMITS.blocksPerMessage;
  if (blocks.length > maxBlocks) {
    errors.push(`no more than ${maxBlocks} items allowed [json-pointer:/blocks]`);
  }
  const blockIds = new Set<string>();
  blocks.forEach((block, i) => {
    const path = `/blocks/${i}`;
    const blockId = block.block_id;
    if (blockId !== undefined) {
      checkString(errors, blockId, `${path}/block_id`, LIMITS.blockId);
      if (typeof blockId === 'string') {
        if (blockIds.has(blockId)) errors.push(`duplicate block_id: ${blockId} [json-pointer:${path}/block_id]`);
        blockIds.add(blockId);
      }
    }
    checkBlock(errors, block, path);
  });
  return errors.length === 0 ? { ok: true, blocks } : { ok: false, error: 'invalid_blocks', errors };
}

function checkBlock(errors: string[], block: JsonObject, path: string): void {
  const type = block.type;
  if (typeof type !== 'string') {
    errors.push(`missing required field: type [json-pointer:${path}]`);
    return;
  }
  if (!BLOCK_TYPES.has(type)) {
    errors.push(`unsupported type: ${type} [json-pointer:${path}/type]`);
    return;
  }
  switch (type) {
    case 'section':
      checkSection(errors, block, path);
      return;
    case 'header':
      checkTextObject(errors, block.text, `${path}/text`, LIMITS.headerText, true);
      return;
    case 'markdown':
      checkString(errors, block.text, `${path}/text`, LIMITS.markdownText);
      return;
    case 'actions':
      checkElements(errors, block.elements, `${path}/elements`, LIMITS.actionsElements, checkInteractive);
      return;
    case 'context':
      checkElements(errors, block.elements, `${path}/elements`, LIMITS.contextElements, checkContextElement);
      return;
    case 'image':
      checkString(errors, block.alt_text, `${path}/alt_text`, LIMITS.altText);
      return;
    default:
      return;
  }
}

function checkSection(errors: string[], block: JsonObject, path: string): void {
  if (block.text === undefined && block.fields === undefined) {
    errors.push(`must provide either text or fields [json-pointer:${path}]`);
  }
  if (block.text !== undefined) checkTextObject(errors, block.text, `${path}/text`, LIMITS.sectionText, false);
  if (block.fields !== undefined) {
    checkElements(errors, block.fields, `${path}/fields`, LIMITS.sectionFields, (errs, field, p) =>
      checkTextObject(errs, field, p, LIMITS.sectionFieldText, false),
    );
  }
  if (block.accessory !== undefined) {
    if (isObject(block.accessory)) checkInteractive(errors, block.accessory, `${path}/accessory`, new Set());
    else errors.push(`must be an object [json-pointer:${path}/accessory]`);
  }
}

type ElementCheck = (errors: string[], element: JsonObject, path: string, actionIds: Set<string>) => void;

function checkElements(errors: string[], elements: unknown, path: string, max: number, check: ElementCheck): void {
  if (!Array.isArray(elements)) {
    errors.push(`must be an array [json-pointer:${path}]`);
    return;
  }
  if (elements.length === 0) errors.push(`must provide at least 1 item [json-pointer:${path}]`);
  if (elements.length > max) errors.push(`no more than ${max} items allowed [json-pointer:${path}]`);
  const actionIds = new Set<string>();
  elements.forEach((element: unknown, i) => {
    if (isObject(element)) check(errors, element, `${path}/${i}`, actionIds);
    else errors.push(`must be an object [json-pointer:${path}/${i}]`);
  });
}

function checkInteractive(errors: string[], element: JsonObject, path: string, actionIds: Set<string>): void {
  const actionId = element.action_id;
  if (actionId !== undefined) {
    checkString(errors, actionId, `${path}/action_id`, LIMITS.actionId);
    if (typeof actionId === 'string') {
      if (actionIds.has(actionId)) errors.push(`duplicate action_id: ${actionId} [json-pointer:${path}/action_id]`);
      actionIds.add(actionId);
    }
  }
  if (element.type !== 'button') return;
  checkTextObject(errors, element.text, `${path}/text`, LIMITS.buttonText, true);
  if (element.value !== undefined) checkString(errors, element.value, `${path}/value`, LIMITS.buttonValue);
  if (element.url !== undefined) checkString(errors, element.url, `${path}/url`, LIMITS.buttonUrl);
  if (element.style !== undefined && element.style !== 'primary' && element.style !== 'danger') {
    errors.push(`must be one of: primary, danger [json-pointer:${path}/style]`);
  }
  if (element.confirm !== undefined) checkConfirm(errors, element.confirm, `${path}/confirm`);
}

function checkConfirm(errors: string[], confirm: unknown, path: string): void {
  if (!isObject(confirm)) {
    errors.push(`must be an object [json-pointer:${path}]`);
    return;
  }
  checkTextObject(errors, confirm.title, `${path}/title`, LIMITS.confirmTitle, true);
  checkTextObject(errors, confirm.text, `${path}/text`, LIMITS.confirmText, false);
  checkTextObject(errors, confirm.confirm, `${path}/confirm`, LIMITS.confirmButton, true);
  checkTextObject(errors, confirm.deny, `${path}/deny`, LIMITS.confirmButton, true);
}

function checkContextElement(errors: string[], element: JsonObject, path: string): void {
  if (element.type === 'image') {
    checkString(errors, element.alt_text, `${path}/alt_text`, LIMITS.altText);
    return;
  }
  checkTextObject(errors, element, path, LIMITS.sectionText, false);
}

function checkTextObject(errors: string[], value: unknown, path: string, max: number, plainOnly: boolean): void {
  if (!isObject(value)) {
    errors.push(`must be a text object [json-pointer:${path}]`);
    return;
  }
  if (value.type !== 'plain_text' && (plainOnly || value.type !== 'mrkdwn')) {
    const allowed = plainOnly ? 'plain_text' : 'plain_text, mrkdwn';
    errors.push(`must be one of: ${allowed} [json-pointer:${path}/type]`);
  }
  checkString(errors, value.text, `${path}/text`, max);
}

function checkString(errors: string[], value: unknown, path: string, max: number): void {
  if (typeof value !== 'string') {
    errors.push(`must be a string [json-pointer:${path}]`);
  } else if (value.length === 0) {
    errors.push(`must be more than 0 characters [json-pointer:${path}]`);
  } else if (value.length > max) {
    errors.push(`must be less than ${max + 1} characters [json-pointer:${path}]`);
  }
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
