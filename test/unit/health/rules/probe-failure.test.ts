import { describe, expect, it } from 'vitest';
import { sanitizeErrorText } from '../../../../src/exec/sanitize-error-text.ts';
import { probeFailed } from '../../../../src/health/rules/probe-failure.ts';

const TITLE = 'talosctl etcd status (10.0.30.11)';

describe('probeFailed', () => {
  it('is a failed check with the error message', () => {
    expect(probeFailed('etcd-status', TITLE, new Error('talosctl etcd status exited with 1: connection refused'), 812)).toEqual({
      id: 'etcd-status',
      title: TITLE,
      status: 'failed',
      summary: `${TITLE}: probe failed: talosctl etcd status exited with 1: connection refused`,
      evidence: ['talosctl etcd status exited with 1: connection refused'],
      durationMs: 812,
    });
  });

  it('reads a timeout as "timed out after Ns" from the duration', () => {
    const timeout = Object.assign(new Error('The operation was aborted due to timeout'), { name: 'TimeoutError' });

    expect(probeFailed('nodes', 'Kubernetes nodes', timeout, 30_004).summary).toBe('Kubernetes nodes: timed out after 30s');
  });

  it('keeps the duration a timeout message already states', () => {
    const error = Object.assign(new Error('talosctl health timed out after 20s'), { code: 'exec-timeout' });

    expect(probeFailed('talos-health', 'talosctl health', error, 20_950).summary).toBe('talosctl health: timed out after 20s');
  });

  it('adds the tail of a failed command’s stderr', () => {
    const error = Object.assign(new Error('talosctl version exited with 1'), {
      result: { stderr: 'error getting version: rpc error: code = Unavailable desc = connection refused\n' },
    });

    expect(probeFailed('talos-version', 'talosctl version', error, 5).evidence).toEqual([
      'talosctl version exited with 1',
      'error getting version: rpc error: code = Unavailable desc = connection refused',
    ]);
  });

  it('accepts things that are not errors', () => {
    expect(probeFailed('pods', 'pods', 'socket hang up', 5).summary).toBe('pods: probe failed: socket hang up');
    expect(probeFailed('pods', 'pods', undefined, 5).status).toBe('failed');
  });
});

describe('sanitizeErrorText', () => {
  it('removes colours and control characters', () => {
    expect(sanitizeErrorText('\u001b[31merror\u001b[0m:\u0007 boom\r\n')).toBe('error: boom');
  });

  it('redacts credentials a tool echoed', () => {
    const text = 'Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc.def token=s3cr3t-value xoxb-123-456-abc';

    expect(sanitizeErrorText(text)).toBe('Authorization: Bearer [REDACTED] token=[REDACTED] [REDACTED]');
  });

  it('redacts private keys', () => {
    expect(sanitizeErrorText('bad config: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----')).toBe(
      'bad config: [REDACTED KEY]',
    );
  });
});
