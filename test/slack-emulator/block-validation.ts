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
  inputLabel: 2000,
  inputHint: 2000,
  placeholder: 150,
  optionText: 75,
  optionValue: 150,
  optionDescription: 75,
  checkboxOptions: 10,
  selectOptions: 100,
  textInputLength: 3000,
} as const;

/** Elements an `input` block may hold (Block Kit reference, "Input block": element). */
const INPUT_ELEMENTS = new Set([
  'checkboxes',
  'datepicker',
  'datetimepicker',
  'email_text_input',
  'multi_static_select',
  'number_input',
  'plain_text_input',
  'radio_buttons',
  'static_select',
  'timepicker',
  'url_text_input',
]);

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
    case 'input':
      checkInput(errors, block, path);
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

/** An `input` block: a plain_text label, one input element, an optional hint. */
function checkInput(errors: string[], block: JsonObject, path: string): void {
  checkTextObject(errors, block.label, `${path}/label`, LIMITS.inputLabel, true);
  if (block.hint !== undefined) checkTextObject(errors, block.hint, `${path}/hint`, LIMITS.inputHint, true);
  if (block.optional !== undefined && typeof block.optional !== 'boolean') errors.push(`must be a boolean [json-pointer:${path}/optional]`);
  const element = block.element;
  if (!isObject(element)) {
    errors.push(`must provide an object [json-pointer:${path}/element]`);
    return;
  }
  if (typeof element.type !== 'string' || !INPUT_ELEMENTS.has(element.type)) {
    errors.push(`unsupported type: ${String(element.type)} [json-pointer:${path}/element/type]`);
    return;
  }
  checkInteractive(errors, element, `${path}/element`, new Set());
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
  if (element.placeholder !== undefined) checkTextObject(errors, element.placeholder, `${path}/placeholder`, LIMITS.placeholder, true);
  switch (element.type) {
    case 'checkboxes':
      checkOptions(errors, element, path, LIMITS.checkboxOptions, false, true);
      return;
    case 'static_select':
    case 'multi_static_select':
      checkOptions(errors, element, path, LIMITS.selectOptions, true, element.type === 'multi_static_select');
      return;
    case 'radio_buttons':
      checkOptions(errors, element, path, LIMITS.checkboxOptions, false, false);
      return;
    case 'plain_text_input':
      checkTextInput(errors, element, path);
      return;
    default:
      break;
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

/**
 * `options` of a checkbox group or a select: each an option object whose value is unique,
 * and the initial choice one of them (Slack refuses an initial option that is not offered).
 */
function checkOptions(errors: string[], element: JsonObject, path: string, max: number, plainOnly: boolean, many: boolean): void {
  const options = element.options;
  if (!Array.isArray(options)) {
    if (element.option_groups === undefined) errors.push(`must provide options or option_groups [json-pointer:${path}/options]`);
    return;
  }
  if (options.length === 0) errors.push(`must provide at least 1 item [json-pointer:${path}/options]`);
  if (options.length > max) errors.push(`no more than ${max} items allowed [json-pointer:${path}/options]`);
  const values = new Set<string>();
  options.forEach((option: unknown, i) => {
    const at = `${path}/options/${i}`;
    if (!isObject(option)) {
      errors.push(`must be an object [json-pointer:${at}]`);
      return;
    }
    checkTextObject(errors, option.text, `${at}/text`, LIMITS.optionText, plainOnly);
    checkString(errors, option.value, `${at}/value`, LIMITS.optionValue);
    if (option.description !== undefined)
      checkTextObject(errors, option.description, `${at}/description`, LIMITS.optionDescription, plainOnly);
    if (typeof option.value === 'string') {
      if (values.has(option.value)) errors.push(`duplicate option value: ${option.value} [json-pointer:${at}/value]`);
      values.add(option.value);
    }
  });
  const initial = many ? element.initial_options : element.initial_option;
  if (initial === undefined) return;
  const key = many ? 'initial_options' : 'initial_option';
  const chosen = many ? (Array.isArray(initial) ? initial : [undefined]) : [initial];
  chosen.forEach((option: unknown) => {
    if (!isObject(option) || typeof option.value !== 'string' || !values.has(option.value)) {
      errors.push(`must match one of the provided options [json-pointer:${path}/${key}]`);
    }
  });
}

function checkTextInput(errors: string[], element: JsonObject, path: string): void {
  for (const key of ['min_length', 'max_length'] as const) {
    const value = element[key];
    if (value === undefined) continue;
    const low = key === 'min_length' ? 0 : 1;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < low || value > LIMITS.textInputLength) {
      errors.push(`must be an integer from ${low} to ${LIMITS.textInputLength} [json-pointer:${path}/${key}]`);
    }
  }
  if (element.initial_value !== undefined && typeof element.initial_value !== 'string') {
    errors.push(`must be a string [json-pointer:${path}/initial_value]`);
  }
  if (element.multiline !== undefined && typeof element.multiline !== 'boolean')
    errors.push(`must be a boolean [json-pointer:${path}/multiline]`);
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
