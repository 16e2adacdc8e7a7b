/**
 * Remembers every credential value the process has seen (Slack tokens, the talosconfig
 * key, the kubeconfig token) and blanks them out of any text before it leaves the
 * process: log lines, Slack messages, error texts. Path-based redaction alone is not
 * enough because a secret can surface inside a tool's stderr or an error message.
 */
export class SecretScrubber {
  private readonly secrets = new Set<string>();

  /** Registers a secret and the parts of it that are long enough to be recognisable. */
  add(secret: string | undefined): void {
    if (secret === undefined) return;
    for (const piece of secretPieces(secret)) this.secrets.add(piece);
  }

  scrub(text: string): string {
    let out = text;
    for (const secret of this.secrets) {
      if (out.includes(secret)) out = out.split(secret).join('[REDACTED]');
    }
    return out;
  }

  get size(): number {
    return this.secrets.size;
  }
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
