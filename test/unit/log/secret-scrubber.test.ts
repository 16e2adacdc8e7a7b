import { describe, expect, it } from 'vitest';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

function b64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

/** A PEM block whose body is `body` cut into 64-character lines, as openssl writes it. */
function pem(label: string, body: string): string {
  return `-----BEGIN ${label}-----\n${(body.match(/.{1,64}/g) ?? []).join('\n')}\n-----END ${label}-----\n`;
}

const KEY_BODY = 'MC4CAQAwBQYDK2VwBCIEIPcanaryKeyMaterialThatMustNeverLeak0123456789abcdefABCDEFGH';
const SERVICE_ACCOUNT_TOKEN =
  'eyJhbGciOiJSUzI1NiIsImtpZCI6ImNhbmFyeSJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4iLCJjYW5hcnkiOnRydWV9.c2lnbmF0dXJlLWNhbmFyeS1ieXRlcy0wMTIzNDU2Nzg5';

/** A kubeconfig as `tofu output -raw talos_kubeconfig` prints it, with a bearer token. */
const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: production
  cluster:
    server: https://10.0.30.11:6443
contexts:
- name: admin@prod
  context:
    cluster: production
    namespace: default
    user: admin@prod
current-context: admin@prod
users:
- name: admin@prod
  user:
    token: ${SERVICE_ACCOUNT_TOKEN}
`;

/** A talosconfig: its key is base64 of a PEM whose body is the secret. */
const TALOSCONFIG = `context: production
contexts:
    production:
        endpoints:
            - 10.0.30.11
        key: ${b64(pem('ED25519 PRIVATE KEY', KEY_BODY))}
`;

describe('SecretScrubber', () => {
  it('replaces a single-line secret wherever it appears', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add('xoxb-1111-2222-botsecretvalue');

    // Act
    const text = scrubber.scrub('auth failed for xoxb-1111-2222-botsecretvalue (twice: xoxb-1111-2222-botsecretvalue)');

    // Assert
    expect(text).toBe('auth failed for [REDACTED] (twice: [REDACTED])');
  });

  it("replaces a registered kubeconfig's token when it surfaces on its own", () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(KUBECONFIG);

    // Act
    const text = scrubber.scrub(`error: Unauthorized (Bearer ${SERVICE_ACCOUNT_TOKEN})`);

    // Assert
    expect(text).toBe('error: Unauthorized (Bearer [REDACTED])');
  });

  it('replaces each segment of a dotted token when only a part of it leaks', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(KUBECONFIG);
    const [, payload, signature] = SERVICE_ACCOUNT_TOKEN.split('.');

    // Act
    const text = scrubber.scrub(`claims ${payload!} signed ${signature!}`);

    // Assert
    expect(text).toBe('claims [REDACTED] signed [REDACTED]');
  });

  it('replaces a base64 key and its decoded body', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(TALOSCONFIG);
    const encoded = b64(pem('ED25519 PRIVATE KEY', KEY_BODY));
    const decoded = pem('ED25519 PRIVATE KEY', KEY_BODY);

    // Act
    const scrubbedEncoded = scrubber.scrub(`key: ${encoded}`);
    const scrubbedDecoded = scrubber.scrub(decoded);

    // Assert
    expect(scrubbedEncoded).toBe('key: [REDACTED]');
    const bodyLines = KEY_BODY.match(/.{1,64}/g)!;
    expect(bodyLines.map((l) => l.length)).toEqual([64, 16]);
    for (const line of bodyLines) expect(scrubbedDecoded).not.toContain(line);
    expect(scrubbedDecoded).toContain('[REDACTED]');
    expect(scrubbedDecoded.startsWith('-----BEGIN ED25519 PRIVATE KEY-----\n')).toBe(true);
  });

  it('blanks out a whole multi-line credential file echoed back by a tool', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(KUBECONFIG);
    scrubber.add(TALOSCONFIG);

    // Act
    const text = scrubber.scrub(`tofu printed:\n${KUBECONFIG}\n${TALOSCONFIG}`);

    // Assert
    expect(text).not.toContain(SERVICE_ACCOUNT_TOKEN.slice(0, 16));
    expect(text).not.toContain(b64(pem('ED25519 PRIVATE KEY', KEY_BODY)).slice(0, 16));
    expect(text).toContain('server: https://10.0.30.11:6443');
  });

  it('does not register short values that would blank out ordinary words', () => {
    // Arrange
    const scrubber = new SecretScrubber();

    // Act
    scrubber.add('secret');
    scrubber.add('  ');
    scrubber.add(undefined);
    scrubber.add(KUBECONFIG);
    const text = scrubber.scrub('secret apiVersion: v1 kind: Config cluster production namespace default user admin@prod 10.0.30.11 6443');

    // Assert
    expect(text).toBe('secret apiVersion: v1 kind: Config cluster production namespace default user admin@prod 10.0.30.11 6443');
  });

  it('registers a single-line secret of eight characters or more, trimmed', () => {
    // Arrange
    const scrubber = new SecretScrubber();

    // Act
    scrubber.add('  hunter22\n');

    // Assert
    expect(scrubber.size).toBe(1);
    expect(scrubber.scrub('password=hunter22;')).toBe('password=[REDACTED];');
  });

  it('registers a secret once however often it is added', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(KUBECONFIG);
    const size = scrubber.size;

    // Act
    scrubber.add(KUBECONFIG);

    // Assert
    expect(scrubber.size).toBe(size);
  });

  it('leaves text without secrets unchanged', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(KUBECONFIG);

    // Act
    const text = scrubber.scrub('etcd has no leader on 10.0.20.205: stopped before touching any node');

    // Assert
    expect(text).toBe('etcd has no leader on 10.0.20.205: stopped before touching any node');
  });
});

describe('what the scrubber leaves readable', () => {
  it('does not blank YAML keys and names that only happen to be long', () => {
    const scrubber = new SecretScrubber();
    scrubber.add(
      'clusters:\n- cluster:\n    certificate-authority-data: QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo5ODc2\n  name: homelab-production\nusers:\n- user:\n    token: t0k3n-abcdef0123456789\n',
    );
    const out = scrubber.scrub('context homelab-production uses certificate-authority-data and token t0k3n-abcdef0123456789');
    expect(out).toBe('context homelab-production uses certificate-authority-data and token [REDACTED]');
  });
});

describe('SecretScrubber: fragments', () => {
  const CANARY = 'canaryTok3n-9f8e7d6c5b4a39281706f5e4d3c2b1a0-ZZ';

  it('blanks a secret cut by a truncation, down to 16 characters of it', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(CANARY);
    const cut = `error: auth ${CANARY.slice(0, 16)}…`;

    // Act
    const text = scrubber.scrub(cut);

    // Assert
    expect(text).toBe('error: auth [REDACTED]…');
  });

  it('blanks the tail of a secret that starts a text, and each piece of a secret split across lines', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(CANARY);
    const split = `${CANARY.slice(20)} and\n${CANARY.slice(0, 20)}\n${CANARY.slice(20)}`;

    // Act
    const text = scrubber.scrub(split);

    // Assert
    expect(text).toBe('[REDACTED] and\n[REDACTED]\n[REDACTED]');
  });

  it('leaves a run of 15 characters of a secret, which is too short to tell from ordinary text', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(CANARY);

    // Act
    const text = scrubber.scrub(`x ${CANARY.slice(3, 18)} y`);

    // Assert
    expect(text).toBe(`x ${CANARY.slice(3, 18)} y`);
  });

  it('blanks two secrets that touch as one run, and a short password whole', () => {
    // Arrange
    const scrubber = new SecretScrubber();
    scrubber.add(CANARY);
    scrubber.add('anotherSecretValue0123456789');
    scrubber.add('pw-1234567');

    // Act
    const text = scrubber.scrub(`${CANARY}anotherSecretValue0123456789 redis pw-1234567.`);

    // Assert
    expect(text).toBe('[REDACTED] redis [REDACTED].');
  });

  it('finds a fragment anywhere in a large output, in one pass', () => {
    // Arrange: 4 MiB of tool output with the canary's middle buried near the end
    const scrubber = new SecretScrubber();
    for (let i = 0; i < 50; i++) scrubber.add(`registered-secret-${i}-0123456789abcdefghij`);
    scrubber.add(CANARY);
    const filler = 'NAMESPACE   NAME   READY   STATUS   RESTARTS   AGE\n'.repeat(80_000);
    const text = `${filler}leaked ${CANARY.slice(5, 30)} here\n${filler.slice(0, 100)}`;

    // Act
    const scrubbed = scrubber.scrub(text);

    // Assert
    expect(scrubbed.length).toBe(text.length - 25 + '[REDACTED]'.length);
    expect(scrubbed).toContain('leaked [REDACTED] here');
  });
});
