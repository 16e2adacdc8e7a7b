import type { ChatPort } from '../port/chat-port.ts';
import type { Operation } from './operation.ts';
import type { OperationStore } from './operation-store.ts';

export interface ThreadLinkDeps {
  store: Pick<OperationStore, 'get' | 'update'>;
  chat: Pick<ChatPort, 'permalink'>;
}

/**
 * The link to an operation's thread. Slack is asked the first time it is needed (most
 * operations are never linked to) and the answer is stored on the operation, so each
 * operation costs Slack at most one `chat.getPermalink`. Undefined while the operation has
 * no root message yet, or when Slack does not answer: the caller then names the bare id.
 */
export async function threadLink(deps: ThreadLinkDeps, op: Operation): Promise<string | undefined> {
  if (op.permalink !== undefined) return op.permalink;
  const { rootTs } = op;
  if (rootTs === undefined) return undefined;
  let link: string;
  try {
    link = await deps.chat.permalink(op.channel, rootTs);
  } catch {
    return undefined;
  }
  // A lost write costs the next reader one more call, nothing else.
  await deps.store
    .update(op.id, (o) => (o.permalink === undefined && o.rootTs === rootTs ? { ...o, permalink: link } : undefined))
    .catch(() => undefined);
  return link;
}

/** The links of several operations at once, by id; operations without one are left out. */
export async function threadLinks(deps: ThreadLinkDeps, ops: readonly Operation[]): Promise<Map<string, string>> {
  const links = await Promise.all(ops.map(async (op) => [op.id, await threadLink(deps, op)] as const));
  return new Map(links.filter((entry): entry is readonly [string, string] => entry[1] !== undefined));
}
