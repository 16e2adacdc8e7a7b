import { type ApiDeps, fail, type MethodSpec, stringArg } from './api-context.ts';
import { validateBlocks } from './block-validation.ts';
import { BOT_ID } from './config.ts';
import { isObject } from './payloads.ts';
import type { JsonObject } from './types.ts';

/** Block Kit allows a Home tab 100 blocks (a message 50). */
const HOME_MAX_BLOCKS = 100;
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

export const viewMethods: Record<string, MethodSpec> = {
  'views.publish': { token: 'bot', handle: publish },
};
