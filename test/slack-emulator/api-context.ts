import type { EmulatorConfig } from './config.ts';
import type { Directory } from './directory.ts';
import type { FileStore } from './file-store.ts';
import type { MessageStore } from './message-store.ts';
import type { JsonObject } from './types.ts';
import type { ModalStore, TriggerStore, ViewStore } from './view-store.ts';

/** What Web API method handlers may touch. */
export interface ApiDeps {
  config: EmulatorConfig;
  directory: Directory;
  messages: MessageStore;
  files: FileStore;
  /** Home tabs published with `views.publish`. */
  views: ViewStore;
  /** Modals opened with `views.open`. */
  modals: ModalStore;
  /** Trigger ids issued with interactions, spent by `views.open`. */
  triggers: TriggerStore;
  /** `http://127.0.0.1:<port>`, known once the server listens. */
  origin: () => string;
  /** Issues a one-use Socket Mode URL. */
  openSocketUrl: () => string;
}

export type MethodHandler = (args: JsonObject, deps: ApiDeps) => JsonObject;

export interface MethodSpec {
  /** Which token kind the method accepts; the other kind gets `not_allowed_token_type`. */
  token: 'bot' | 'app';
  handle: MethodHandler;
}

export function fail(error: string, extra: JsonObject = {}): JsonObject {
  return { ok: false, error, ...extra };
}

export function stringArg(args: JsonObject, key: string): string | undefined {
  const value = args[key];
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  return undefined;
}

/** Form bodies carry booleans as strings. */
export function flagArg(args: JsonObject, key: string): boolean {
  const value = args[key];
  return value === true || value === 'true' || value === '1' || value === 1;
}

export function numberArg(args: JsonObject, key: string): number | undefined {
  const value = Number(args[key]);
  return args[key] === undefined || Number.isNaN(value) ? undefined : value;
}
