import { escapeAround, escapeMrkdwn } from './blocks.ts';
import { threadLink, type ThreadLinkDeps } from '../ops/thread-link.ts';

/**
 * An operation as a message names it: a link to its thread (`<url|op-…>`) once the link is
 * known, else its id as code. Slack opens the link only for members of the operation's
 * channel, so a link tells nobody else anything about the operation.
 */
export function operationRef(id: string, link: string | undefined): string {
  if (link === undefined) return `\`${id}\``;
  // Slack unescapes these inside a link; a `|` would end the URL early.
  const url = link.replace(/&/g, '&amp;').replace(/</g, '%3C').replace(/>/g, '%3E').replace(/\|/g, '%7C');
  return `<${url}|${id}>`;
}

/** What `operationRef` makes of a Slack permalink, and nothing else: a message archive on slack.com, labelled with an operation id. */
const OPERATION_LINK = /<https:\/\/[a-z0-9.-]+\.slack\.com\/archives\/[A-Z0-9]+\/p\d+(?:\?[A-Za-z0-9_=.;&%-]*)?\|(op-[a-z0-9]+)>/g;

/**
 * `escapeMrkdwn` for texts that may name another operation by its link (a refusal naming the
 * operation that holds the cluster): the links stay links, everything else is escaped.
 */
export function escapeMrkdwnKeepingLinks(text: string): string {
  return escapeAround(text, OPERATION_LINK, escapeMrkdwn);
}

/** Links to operations as the bare operation id, for places that are not mrkdwn (a Markdown file). */
export function plainLinks(text: string): string {
  return text.replace(OPERATION_LINK, '$1');
}

/** An operation known only by its id (a lock's holder), as a message names it: linked when it has a thread. */
export async function operationRefById(deps: ThreadLinkDeps, id: string): Promise<string> {
  const op = await deps.store.get(id).catch(() => undefined);
  return operationRef(id, op === undefined ? undefined : await threadLink(deps, op));
}
