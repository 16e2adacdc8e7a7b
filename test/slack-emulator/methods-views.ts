import { type ApiDeps, fail, type MethodSpec, stringArg } from './api-context.ts';
import { validateBlocks } from './block-validation.ts';
import { BOT_ID } from './config.ts';
import { isObject } from './payloads.ts';
import type { JsonObject } from './types.ts';

/** Block Kit allows a Home tab or a modal 100 blocks (a message 50). */
const HOME_MAX_BLOCKS = 100;
/** The view object reference: a modal's title, submit and close texts. */
const MODAL_TEXT_MAX = 24;
const CALLBACK_ID_MAX = 255;
const PRIVATE_METADATA_MAX = 3000;
const EXTERNAL_ID_MAX = 255;
/** `view_too_large`: Slack refuses a view over 250 kB. */
const MAX_VIEW_BYTES = 250_000;

function invalidArguments(...messages: string[]): JsonObject {
  return fail('invalid_arguments', { response_metadata: { messages: messages.map((m) => `[ERROR] ${m}`) } });
}

/** `view` travels as a JSON string in form bodies and as an object in JSON bodies. */
function viewArg(args: JsonObject): JsonObject | undefined {
  const raw = args.view;
  if (isObject(raw)) return raw;
  if (typeof raw !== 'string') return undefined;
  try {
    const parsed: unknown = JSON.parse(raw);
    return isObject(parsed) ? parsed : undefined;
  } catch {
    return undefined;
  }
}

/** `views.publish`: the Home tab of one user. */
function publish(args: JsonObject, deps: ApiDeps): JsonObject {
  const user = stringArg(args, 'user_id') ?? '';
  if (user === '' || deps.directory.user(user) === undefined) return invalidArguments('invalid `user_id`');
  const view = viewArg(args);
  if (view === undefined) return invalidArguments('must provide a view object [json-pointer:/view]');
  if (view.type !== 'home') return invalidArguments('must be home for views.publish [json-pointer:/view/type]');
  if (!deps.config.homeTabEnabled) return fail('not_enabled');
  if (Buffer.byteLength(JSON.stringify(view)) > MAX_VIEW_BYTES) return fail('view_too_large');
  const check = validateBlocks(view.blocks ?? [], { maxBlocks: HOME_MAX_BLOCKS });
  if (!check.ok) return invalidArguments(...check.errors.map((e) => e.replace('[json-pointer:/blocks', '[json-pointer:/view/blocks')));
  const hash = stringArg(args, 'hash');
  if (hash !== undefined && hash !== '' && deps.views.home(user)?.hash !== hash) return fail('hash_conflict');
  const stored = deps.views.publishHome(
    user,
    { ...view, blocks: check.blocks },
    { teamId: deps.config.teamId, appId: deps.config.appId, botId: BOT_ID },
  );
  return { ok: true, view: stored };
}

/** A modal view's own fields and blocks, as Slack checks them; errors in the `[ERROR] … [json-pointer:/view/…]` form. */
function modalErrors(view: JsonObject): string[] {
  const errors: string[] = [];
  if (view.type !== 'modal') errors.push('must be modal [json-pointer:/view/type]');
  const text = (key: string, required: boolean): void => {
    const value = view[key];
    if (value === undefined || value === null) {
      if (required) errors.push(`missing required field: ${key} [json-pointer:/view/${key}]`);
      return;
    }
    if (!isObject(value) || value.type !== 'plain_text') {
      errors.push(`must be a plain_text text object [json-pointer:/view/${key}]`);
      return;
    }
    if (typeof value.text !== 'string' || value.text.length === 0)
      errors.push(`must be more than 0 characters [json-pointer:/view/${key}/text]`);
    else if (value.text.length > MODAL_TEXT_MAX)
      errors.push(`must be less than ${MODAL_TEXT_MAX + 1} characters [json-pointer:/view/${key}/text]`);
  };
  text('title', true);
  text('submit', false);
  text('close', false);
  const limit = (key: string, max: number): void => {
    const value = view[key];
    if (value === undefined) return;
    if (typeof value !== 'string') errors.push(`must be a string [json-pointer:/view/${key}]`);
    else if (value.length > max) errors.push(`must be less than ${max + 1} characters [json-pointer:/view/${key}]`);
  };
  limit('callback_id', CALLBACK_ID_MAX);
  limit('private_metadata', PRIVATE_METADATA_MAX);
  limit('external_id', EXTERNAL_ID_MAX);
  const blocks = Array.isArray(view.blocks) ? view.blocks : [];
  if (blocks.some((b) => isObject(b) && b.type === 'input') && (view.submit === undefined || view.submit === null)) {
    errors.push('must provide submit when the view has input blocks [json-pointer:/view/submit]');
  }
  const check = validateBlocks(view.blocks ?? [], { maxBlocks: HOME_MAX_BLOCKS });
  if (!check.ok) errors.push(...check.errors.map((e) => e.replace('[json-pointer:/blocks', '[json-pointer:/view/blocks')));
  return errors;
}

function ids(deps: ApiDeps): { teamId: string; appId: string; botId: string } {
  return { teamId: deps.config.teamId, appId: deps.config.appId, botId: BOT_ID };
}

/**
 * `views.open`: a modal for the user whose interaction issued `trigger_id`. The trigger opens
 * one modal, within a few seconds of the interaction; a bad view does not spend it.
 */
function open(args: JsonObject, deps: ApiDeps): JsonObject {
  const triggerId = stringArg(args, 'trigger_id') ?? '';
  if (triggerId === '') return invalidArguments('missing required field: trigger_id');
  const view = viewArg(args);
  if (view === undefined) return invalidArguments('must provide a view object [json-pointer:/view]');
  if (Buffer.byteLength(JSON.stringify(view)) > MAX_VIEW_BYTES) return fail('view_too_large');
  const errors = modalErrors(view);
  if (errors.length > 0) return invalidArguments(...errors);
  const trigger = deps.triggers.exchange(triggerId, deps.config.triggerTtlMs);
  if (!trigger.ok) return fail(trigger.error);
  return { ok: true, view: deps.modals.open(trigger.user, view, ids(deps)) };
}

/** `views.update`: replaces an open modal, found by `view_id` or `external_id`; a stale `hash` answers `hash_conflict`. */
function update(args: JsonObject, deps: ApiDeps): JsonObject {
  const viewId = stringArg(args, 'view_id');
  const externalId = stringArg(args, 'external_id');
  if ((viewId ?? '') === '' && (externalId ?? '') === '') return invalidArguments('must provide view_id or external_id');
  const view = viewArg(args);
  if (view === undefined) return invalidArguments('must provide a view object [json-pointer:/view]');
  if (Buffer.byteLength(JSON.stringify(view)) > MAX_VIEW_BYTES) return fail('view_too_large');
  const errors = modalErrors(view);
  if (errors.length > 0) return invalidArguments(...errors);
  const modal = deps.modals.find(viewId, externalId);
  if (modal === undefined) return fail('not_found');
  const hash = stringArg(args, 'hash');
  if (hash !== undefined && hash !== '' && modal.view.hash !== hash) return fail('hash_conflict');
  const stored = deps.modals.update(modal.viewId, view, ids(deps));
  return stored === undefined ? fail('not_found') : { ok: true, view: stored };
}

/** The checks of `views.open` on a view the bot gives in an ack (`response_action: update`). */
export function modalViewErrors(view: JsonObject): string[] {
  return modalErrors(view);
}

export const viewMethods: Record<string, MethodSpec> = {
  'views.publish': { token: 'bot', handle: publish },
  'views.open': { token: 'bot', handle: open },
  'views.update': { token: 'bot', handle: update },
};
