import type { Block, ChatMessage } from '../../src/port/chat-port.ts';

/**
 * Slack's Block Kit limits (https://docs.slack.dev/reference/block-kit/blocks): a message past
 * any of them is refused with `invalid_blocks`, so an operator sees nothing at all.
 */
export const LIMITS = {
  blocks: 50,
  headerText: 150,
  sectionText: 3000,
  sectionFields: 10,
  fieldText: 2000,
  contextElements: 10,
  contextText: 3000,
  actionsElements: 25,
  id: 255,
  buttonText: 75,
  buttonValue: 2000,
  confirmTitle: 100,
  confirmText: 300,
  confirmButton: 30,
} as const;

interface TextObject {
  type?: string;
  text?: string;
}

function textOf(value: unknown): string {
  return typeof value === 'object' && value !== null && typeof (value as TextObject).text === 'string' ? (value as TextObject).text! : '';
}

function str(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function over(problems: string[], where: string, text: string, limit: number): void {
  if (text.length > limit) problems.push(`${where} is ${text.length} characters, over ${limit}`);
}

/** Every Block Kit limit `message` breaks, one line each; empty when Slack would take it. */
export function blockKitProblems(message: ChatMessage): string[] {
  const problems: string[] = [];
  const blocks: Block[] = message.blocks ?? [];
  if (blocks.length > LIMITS.blocks) problems.push(`${blocks.length} blocks, over ${LIMITS.blocks}`);
  blocks.forEach((block, i) => {
    const where = `block ${i} (${String(block['type'])})`;
    if (typeof block['block_id'] === 'string') over(problems, `${where} block_id`, block['block_id'], LIMITS.id);
    switch (block['type']) {
      case 'header':
        over(problems, `${where} text`, textOf(block['text']), LIMITS.headerText);
        break;
      case 'section': {
        over(problems, `${where} text`, textOf(block['text']), LIMITS.sectionText);
        const fields = (block['fields'] as unknown[] | undefined) ?? [];
        if (fields.length > LIMITS.sectionFields) problems.push(`${where} has ${fields.length} fields, over ${LIMITS.sectionFields}`);
        fields.forEach((field, j) => over(problems, `${where} field ${j}`, textOf(field), LIMITS.fieldText));
        if (block['text'] === undefined && fields.length === 0) problems.push(`${where} has neither text nor fields`);
        break;
      }
      case 'context': {
        const elements = (block['elements'] as unknown[] | undefined) ?? [];
        if (elements.length > LIMITS.contextElements)
          problems.push(`${where} has ${elements.length} elements, over ${LIMITS.contextElements}`);
        elements.forEach((element, j) => over(problems, `${where} element ${j}`, textOf(element), LIMITS.contextText));
        break;
      }
      case 'actions': {
        const elements = (block['elements'] as Record<string, unknown>[] | undefined) ?? [];
        if (elements.length > LIMITS.actionsElements)
          problems.push(`${where} has ${elements.length} elements, over ${LIMITS.actionsElements}`);
        elements.forEach((button, j) => {
          const at = `${where} button ${j}`;
          over(problems, `${at} action_id`, str(button['action_id']), LIMITS.id);
          over(problems, `${at} text`, textOf(button['text']), LIMITS.buttonText);
          over(problems, `${at} value`, str(button['value']), LIMITS.buttonValue);
          const confirm = button['confirm'] as Record<string, unknown> | undefined;
          if (confirm) {
            over(problems, `${at} confirm title`, textOf(confirm['title']), LIMITS.confirmTitle);
            over(problems, `${at} confirm text`, textOf(confirm['text']), LIMITS.confirmText);
            over(problems, `${at} confirm button`, textOf(confirm['confirm']), LIMITS.confirmButton);
            over(problems, `${at} deny button`, textOf(confirm['deny']), LIMITS.confirmButton);
          }
        });
        break;
      }
      default:
        problems.push(`${where} is a block type these messages never use`);
    }
  });
  return problems;
}
