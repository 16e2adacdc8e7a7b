import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/log/logger.ts';
import { SecretScrubber } from '../../../src/log/secret-scrubber.ts';

const CANARY = 'canary-7f3e9a1c5b2d4e6f8a0b1c2d3e4f5a6b';

/** A logger writing JSON lines into an array, with `CANARY` registered as a secret. */
function collectingLogger(level = 'info'): {
  logger: ReturnType<typeof createLogger>;
  lines: string[];
  records: () => Record<string, unknown>[];
} {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      callback();
    },
  });
  const scrubber = new SecretScrubber();
  scrubber.add(CANARY);
  const logger = createLogger({ level, scrubber, destination });
  return { logger, lines, records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
}

describe('createLogger', () => {
  it('writes structured JSON with the service name, message and fields', () => {
    // Arrange
    const { logger, records } = collectingLogger();

    // Act
    logger.child({ op: 'op-1a2b3c4d', cluster: 'production' }).info({ node: '10.0.30.12' }, 'node upgraded');

    // Assert
    expect(records()).toEqual([
      expect.objectContaining({
        level: 30,
        service: 'talos-chatops',
        op: 'op-1a2b3c4d',
        cluster: 'production',
        node: '10.0.30.12',
        msg: 'node upgraded',
      }),
    ]);
  });

  it('redacts credential fields by name, at the top and one level down', () => {
    // Arrange
    const { logger, records } = collectingLogger();

    // Act
    logger.info(
      {
        token: 'some-token',
        kubeconfig: 'apiVersion: v1',
        talosconfig: 'context: production',
        botToken: 'xoxb-value',
        session: { token: 'nested-token', kubeconfig: 'nested-kubeconfig', talosconfig: 'nested-talosconfig' },
        headers: { authorization: 'Bearer abc' },
        cluster: 'production',
      },
      'credentials fetched',
    );

    // Assert
    expect(records()[0]).toMatchObject({
      token: '[REDACTED]',
      kubeconfig: '[REDACTED]',
      talosconfig: '[REDACTED]',
      botToken: '[REDACTED]',
      session: { token: '[REDACTED]', kubeconfig: '[REDACTED]', talosconfig: '[REDACTED]' },
      headers: { authorization: '[REDACTED]' },
      cluster: 'production',
    });
  });

  it('blanks out a registered secret inside a message string', () => {
    // Arrange
    const { logger, lines } = collectingLogger();

    // Act
    logger.warn(`talosctl said: bad key ${CANARY} on 10.0.30.12`);

    // Assert
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(CANARY);
    expect(JSON.parse(lines[0]!)).toMatchObject({ msg: 'talosctl said: bad key [REDACTED] on 10.0.30.12' });
  });

  it('blanks out a registered secret in a field no redact path names and in an error', () => {
    // Arrange
    const { logger, lines, records } = collectingLogger();

    // Act
    logger.error({ stderr: `x509: ${CANARY}`, err: new Error(`handshake failed with ${CANARY}`) }, 'probe failed');

    // Assert
    expect(lines.join('\n')).not.toContain(CANARY);
    expect(records()[0]).toMatchObject({ stderr: 'x509: [REDACTED]', err: { message: 'handshake failed with [REDACTED]' } });
  });

  it('writes nothing below its level', () => {
    // Arrange
    const { logger, lines } = collectingLogger('warn');

    // Act
    logger.info('routine');
    logger.warn('unusual');

    // Assert
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['unusual']);
  });
});
