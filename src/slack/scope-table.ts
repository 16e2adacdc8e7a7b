/**
 * The table of bot scopes in docs/deploy.md, written from the scopes the bot requires
 * (`npm run docs:scopes`); a test fails when the page and the list disagree.
 */
export const SCOPE_TABLE_START = '<!-- scopes: written by `npm run docs:scopes` from src/slack/required-scopes.ts -->';
export const SCOPE_TABLE_END = '<!-- end of scopes -->';

/** A Markdown table of `scopes`, in their order, indented by `indent`. */
export function renderScopeTable(scopes: Readonly<Record<string, string>>, indent = ''): string {
  const rows = Object.entries(scopes).map(([scope, use]) => `| \`${scope}\` | ${use} |`);
  return ['| scope | used for |', '|---|---|', ...rows].map((line) => `${indent}${line}`).join('\n');
}

/** `doc` with the text between the markers replaced by the table; throws when a marker is missing. */
export function replaceScopeTable(doc: string, scopes: Readonly<Record<string, string>>): string {
  const start = doc.indexOf(SCOPE_TABLE_START);
  const end = doc.indexOf(SCOPE_TABLE_END);
  if (start < 0 || end < start) throw new Error(`the page has no "${SCOPE_TABLE_START}" … "${SCOPE_TABLE_END}" markers`);
  const lineStart = doc.lastIndexOf('\n', start) + 1;
  const indent = doc.slice(lineStart, start);
  const table = renderScopeTable(scopes, indent);
  return `${doc.slice(0, start)}${SCOPE_TABLE_START}\n\n${table}\n\n${indent}${doc.slice(end)}`;
}
