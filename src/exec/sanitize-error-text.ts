// A tool's error text made safe to show or keep. It adds no markup and judges nothing, so an
// adapter cleans the errors it returns with it, and the health rules the errors they quote.

/** Terminal colour and cursor sequences. */
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;?]*[A-Za-z]/g;
/** C0 controls other than tab and newline, and DEL. */
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g;

/**
 * Credentials a tool may echo in an error. The process runner already blanks the secrets it was
 * given; these catch the shapes of secrets it was not told about.
 */
const SECRET_PATTERNS: readonly [RegExp, string][] = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)/g, '[REDACTED KEY]'],
  [/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [REDACTED]'],
  [/\bxox[abposr]-[A-Za-z0-9-]+/g, '[REDACTED]'],
  [/\bxapp-[A-Za-z0-9-]+/g, '[REDACTED]'],
  [/\b((?:token|password|passwd|secret|client-key-data|key)["']?\s*[:=]\s*["']?)[^\s"',}]+/gi, '$1[REDACTED]'],
];

/** Makes an error text safe and readable for a thread reply: no escapes, no credentials. */
export function sanitizeErrorText(text: string): string {
  let out = text.replace(ANSI, '').replace(/\r\n?/g, '\n').replace(CONTROL, '');
  for (const [pattern, replacement] of SECRET_PATTERNS) out = out.replace(pattern, replacement);
  return out.trim();
}
