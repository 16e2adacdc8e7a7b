import { UnrecoverableError } from 'bullmq';
import { describe, expect, it } from 'vitest';
import { StepFailure, DrainCheckpoint } from '../../jobs/engine/job-context.ts';
import { ConfigError } from '../../src/config/config-error.ts';
import { BotError, ERROR_CODES, errorCode, isRetryable, OpsError } from '../../src/errors.ts';
import { ExecError } from '../../src/exec/process-runner.ts';
import { JobDataError, parseJobData } from '../../src/queue/job-data.ts';
import { OperationJobData } from '../../src/queue/job-schemas.ts';
import { InstallerImageError } from '../../src/rules/installer-image.ts';
import { UnsafeArgumentError } from '../../src/rules/argument-safety.ts';
import { ParseError } from '../../src/talos/parse-error.ts';

describe('the error taxonomy', () => {
  it("gives each of the bot's error classes its stable code and retryability", () => {
    // Arrange
    const errors = [
      new ConfigError('CLUSTERS_FILE', ['missing']),
      new StepFailure('etcd has no leader'),
      new DrainCheckpoint(),
      new ExecError('exec-timeout', 'talosctl timed out'),
      new ExecError('exec-failed', 'talosctl exited 1'),
      new ParseError('talosctl etcd status', 'the output is empty'),
      new InstallerImageError('not a platform'),
      new UnsafeArgumentError('starts with -'),
      new OpsError('factory-unreachable', 'no answer', { hint: 'try again' }),
    ];

    // Act
    const seen = errors.map((e) => [e.name, errorCode(e), isRetryable(e), e instanceof BotError]);

    // Assert
    expect(seen).toEqual([
      ['ConfigError', 'config-invalid', false, true],
      ['StepFailure', 'step-failed', false, true],
      ['DrainCheckpoint', 'drain-checkpoint', true, true],
      ['ExecError', 'exec-timeout', true, true],
      ['ExecError', 'exec-failed', false, true],
      ['ParseError', 'talosctl-output-unparseable', false, true],
      ['InstallerImageError', 'invalid-installer-image', false, true],
      ['UnsafeArgumentError', 'unsafe-argument', false, true],
      ['OpsError', 'factory-unreachable', true, true],
    ]);
  });

  it('reads retryability from the one table of codes', () => {
    for (const [code, { retryable }] of Object.entries(ERROR_CODES)) {
      expect(new BotError(code as keyof typeof ERROR_CODES, 'x').retryable).toBe(retryable);
    }
  });

  it('counts an error without a code of the bot as retryable, and gives it no code', () => {
    const redisAway = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    expect(errorCode(redisAway)).toBeUndefined();
    expect(isRetryable(redisAway)).toBe(true);
    expect(errorCode('config-invalid')).toBeUndefined();
  });

  it('makes bad job data a BullMQ UnrecoverableError with its own code, naming the field', () => {
    // Act
    const thrown = (() => {
      try {
        parseJobData(OperationJobData, { name: 'operation-run', id: 'op-1-click', data: { opId: 'OP 1' } });
      } catch (error) {
        return error;
      }
      return undefined;
    })();

    // Assert
    expect(thrown).toBeInstanceOf(UnrecoverableError);
    expect(thrown).toBeInstanceOf(JobDataError);
    expect(errorCode(thrown)).toBe('job-data-invalid');
    expect(isRetryable(thrown)).toBe(false);
    expect((thrown as Error).message).toMatch(/^job operation-run op-1-click has data that does not match its schema \(opId: /);
  });

  it('returns the parsed data of a job that matches its schema', () => {
    expect(parseJobData(OperationJobData, { name: 'operation-run', id: 'op-1-click', data: { opId: 'op-1' } })).toEqual({ opId: 'op-1' });
  });
});
