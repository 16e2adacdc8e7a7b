/**
 * Remembers every credential value the process has seen (Slack tokens, the Redis password,
 * tofu's provider credentials, the talosconfig key, the kubeconfig token) and blanks them out of
 * any text before it leaves the process: log lines, Slack messages, error texts, what is stored
 * in Redis. Path-based redaction alone is not enough because a secret can surface inside a
 * tool's stderr or an error message.
 *
 * A secret is also found in part: any run of {@link FRAGMENT} or more characters of a registered
 * secret is blanked, so a secret cut by a truncation or split across lines still does not leak.
 * Shorter secrets (passwords of 8 to 15 characters) are matched whole.
 */
export class SecretScrubber {
  /** Rolling hash of each {@link FRAGMENT}-character window of every long secret → the windows with that hash. */
  private readonly windows = new Map<number, string[]>();
  /** Secrets too short to be windowed, matched whole. */
  private readonly whole = new Set<string>();
  private readonly registered = new Set<string>();

  /** Registers a secret and the parts of it that are long enough to be recognisable. */
  add(secret: string | undefined): void {
    if (secret === undefined) return;
    for (const piece of secretPieces(secret).flatMap(escapedForms)) {
      if (this.registered.has(piece)) continue;
      this.registered.add(piece);
      if (piece.length < FRAGMENT) {
        this.whole.add(piece);
        continue;
      }
      for (let i = 0; i + FRAGMENT <= piece.length; i++) {
        const window = piece.slice(i, i + FRAGMENT);
        const hash = windowHash(window);
        const known = this.windows.get(hash);
        if (known === undefined) this.windows.set(hash, [window]);
        else if (!known.includes(window)) known.push(window);
      }
    }
  }

  /**
   * Blanks every registered secret and every fragment of {@link FRAGMENT}+ characters of one.
   * One pass of a rolling hash over the text, so the cost grows with the text's length, not with
   * the length times the number of secrets.
   */
  scrub(text: string): string {
    let out = this.windows.size > 0 && text.length >= FRAGMENT ? this.blankFragments(text) : text;
    for (const secret of this.whole) {
      if (out.includes(secret)) out = out.split(secret).join(REDACTED);
    }
    return out;
  }

  /** How many distinct secret pieces are registered. */
  get size(): number {
    return this.registered.size;
  }

  private blankFragments(text: string): string {
    const ranges: [number, number][] = [];
    let hash = 0;
    for (let i = 0; i < FRAGMENT; i++) hash = (Math.imul(hash, BASE) + text.charCodeAt(i)) >>> 0;
    for (let start = 0; ; start++) {
      const candidates = this.windows.get(hash);
      if (candidates !== undefined && candidates.includes(text.slice(start, start + FRAGMENT))) {
        const last = ranges.at(-1);
        // Overlapping or touching windows of a secret make one blanked run.
        if (last !== undefined && start <= last[1]) last[1] = start + FRAGMENT;
        else ranges.push([start, start + FRAGMENT]);
      }
      const next = start + FRAGMENT;
      if (next >= text.length) break;
      hash = (Math.imul((hash - Math.imul(text.charCodeAt(start), TOP)) >>> 0, BASE) + text.charCodeAt(next)) >>> 0;
    }
    if (ranges.length === 0) return text;
    let out = '';
    let from = 0;
    for (const [start, end] of ranges) {
      out += text.slice(from, start) + REDACTED;
      from = end;
    }
    return out + text.slice(from);
  }
}

/** The shortest run of a secret's characters that is blanked wherever it appears. */
export const FRAGMENT = 16;

const REDACTED = '[REDACTED]';
const BASE = 0x01000193;
/** BASE^(FRAGMENT-1) mod 2^32: the weight of the character leaving the window. */
const TOP = Array.from({ length: FRAGMENT - 1 }).reduce<number>((acc) => Math.imul(acc, BASE) >>> 0, 1);

function windowHash(window: string): number {
  let hash = 0;
  for (let i = 0; i < window.length; i++) hash = (Math.imul(hash, BASE) + window.charCodeAt(i)) >>> 0;
  return hash;
}

/**
 * Whether a token has the texture of key material (letters mixed with digits, or a long
 * mixed-case run) rather than of a YAML key or a name such as
 * `certificate-authority-data`, which would only make logs unreadable if blanked.
 */
function looksSecret(token: string): boolean {
  const letters = /[A-Za-z]/.test(token);
  const digits = /\d/.test(token);
  return (letters && digits) || (token.length >= 24 && /[A-Z]/.test(token) && /[a-z]/.test(token));
}

/**
 * A credential file is multi-line YAML; its sensitive values are the long tokens
 * inside it. Registering each long token (and its base64-decoded form) catches a
 * value quoted on its own as well as the whole file.
 */
function secretPieces(secret: string): string[] {
  const pieces = new Set<string>();
  const trimmed = secret.trim();
  if (trimmed.length >= 8 && !trimmed.includes('\n')) pieces.add(trimmed);
  for (const token of trimmed.split(/[\s"':,]+/)) {
    if (token.length < 16 || !looksSecret(token)) continue;
    pieces.add(token);
    // Dotted tokens (JWTs, bootstrap tokens) leak segment by segment too.
    for (const segment of token.split('.')) if (segment.length >= 16 && looksSecret(segment)) pieces.add(segment);
    if (/^[A-Za-z0-9+/]+=*$/.test(token)) {
      const decoded = Buffer.from(token, 'base64').toString('utf8');
      for (const line of decoded.split(/\s+/)) {
        if (line.length >= 16 && /^[\x21-\x7e]+$/.test(line) && !/^-+(BEGIN|END)/.test(line) && looksSecret(line)) pieces.add(line);
      }
    }
  }
  return [...pieces];
}

/**
 * A piece as it is written inside a JSON string (Slack blocks and log lines are JSON), and inside a
 * JSON string that is itself quoted in one (an error message carrying a tool's JSON): a secret
 * with a `"` or a `\` is written escaped there, and would slip past its raw form.
 */
function escapedForms(piece: string): string[] {
  const once = JSON.stringify(piece).slice(1, -1);
  const twice = JSON.stringify(once).slice(1, -1);
  return [...new Set([piece, once, twice])];
}

/**
 * A copy of a JSON-like value with every string scrubbed: what is stored in Redis carries no secret, and stays valid JSON.
 * Strings under a key of `keep`, at any depth, are left as they are: an operation's ids, cluster, versions and times are
 * what the bot acts on, and a secret that happens to equal one must not rename the cluster.
 */
export function scrubValues<T>(value: T, scrub: (text: string) => string, keep: ReadonlySet<string> = NO_KEYS): T {
  if (typeof value === 'string') return scrub(value) as T;
  if (Array.isArray(value)) return value.map((v: unknown) => scrubValues(v, scrub, keep)) as T;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [k, keep.has(k) && typeof v === 'string' ? v : scrubValues(v, scrub, keep)]),
    ) as T;
  }
  return value;
}

const NO_KEYS: ReadonlySet<string> = new Set();

/** Scrubs an error's message and stack in place (BullMQ stores both in Redis as the job's failure) and returns it. */
export function scrubError(error: unknown, scrub: (text: string) => string): unknown {
  if (error instanceof Error) {
    error.message = scrub(error.message);
    if (error.stack !== undefined) error.stack = scrub(error.stack);
  }
  return error;
}
