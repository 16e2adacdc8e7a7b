import { describe, expect, it } from 'vitest';
import { judgeVersionMix } from '../../../src/rules/version-mix.ts';

/** An Image Factory `/versions` excerpt: latest patches 1.10.9, 1.11.6, 1.12.11, 1.13.9. */
const FACTORY = ['v1.10.8', 'v1.10.9', 'v1.11.5', 'v1.11.6', 'v1.12.10', 'v1.12.11', 'v1.13.8', 'v1.13.9'];

const mixOf = (entries: [string, string[]][]): Map<string, string[]> => new Map(entries);

describe('judgeVersionMix', () => {
  it('takes one version as it is: a fresh upgrade or a re-install', () => {
    expect(judgeVersionMix(mixOf([['v1.12.11', ['10.0.30.11', '10.0.30.12']]]), 'v1.13.9', FACTORY)).toEqual({
      kind: 'one',
      version: 'v1.12.11',
    });
    expect(judgeVersionMix(new Map(), 'v1.13.9', FACTORY)).toEqual({ kind: 'none' });
  });

  it('continues an upgrade when the nodes run the target and a version it may start from, naming the done and remaining nodes', () => {
    // Arrange: an upgrade v1.12.11 → v1.13.9 stopped after the worker and the first control plane.
    const mix = mixOf([
      ['v1.13.9', ['10.0.30.21', '10.0.30.11']],
      ['v1.12.11', ['10.0.30.12', '10.0.30.13']],
    ]);

    // Act
    const judged = judgeVersionMix(mix, 'v1.13.9', FACTORY);

    // Assert
    expect(judged).toEqual({
      kind: 'continuation',
      from: 'v1.12.11',
      done: ['10.0.30.21', '10.0.30.11'],
      remaining: ['10.0.30.12', '10.0.30.13'],
    });
  });

  it('continues a patch upgrade too', () => {
    const mix = mixOf([
      ['v1.11.5', ['10.0.30.12']],
      ['v1.11.6', ['10.0.30.11']],
    ]);
    expect(judgeVersionMix(mix, 'v1.11.6', FACTORY)).toMatchObject({ kind: 'continuation', from: 'v1.11.5', done: ['10.0.30.11'] });
  });

  it('refuses three versions, naming each version and its nodes', () => {
    const mix = mixOf([
      ['v1.13.9', ['10.0.30.11']],
      ['v1.12.11', ['10.0.30.12']],
      ['v1.12.10', ['10.0.30.13']],
    ]);

    const judged = judgeVersionMix(mix, 'v1.13.9', FACTORY);

    expect(judged).toEqual({
      kind: 'refused',
      reason:
        'the cluster runs mixed Talos versions (v1.13.9 on 10.0.30.11; v1.12.11 on 10.0.30.12; v1.12.10 on 10.0.30.13): ' +
        'an upgrade to v1.13.9 continues only when every node runs either v1.13.9 or the one version it upgrades from; ' +
        'finish or roll back the earlier upgrade first, so every node runs one version',
    });
  });

  it('refuses two versions when neither is the target', () => {
    const mix = mixOf([
      ['v1.12.11', ['10.0.30.11']],
      ['v1.12.10', ['10.0.30.12', '10.0.30.13']],
    ]);

    const judged = judgeVersionMix(mix, 'v1.13.9', FACTORY);

    expect(judged.kind).toBe('refused');
    expect(judged.kind === 'refused' && judged.reason).toContain('(v1.12.11 on 10.0.30.11; v1.12.10 on 10.0.30.12, 10.0.30.13)');
  });

  it('refuses the target beside a version the rules do not let it start from, with the rule that refuses it', () => {
    // Arrange: v1.12.10 is not the latest patch of 1.12, so a minor upgrade may not start from it.
    const mix = mixOf([
      ['v1.13.9', ['10.0.30.11']],
      ['v1.12.10', ['10.0.30.12', '10.0.30.13']],
    ]);

    // Act
    const judged = judgeVersionMix(mix, 'v1.13.9', FACTORY);

    // Assert
    expect(judged.kind).toBe('refused');
    const reason = judged.kind === 'refused' ? judged.reason : '';
    expect(reason).toMatch(
      /^the cluster runs mixed Talos versions \(v1\.13\.9 on 10\.0\.30\.11; v1\.12\.10 on 10\.0\.30\.12, 10\.0\.30\.13\): v1\.12\.10 is not a version an upgrade to v1\.13\.9 may start from \(the cluster runs v1\.12\.10, not v1\.12\.11, the latest patch of 1\.12/,
    );
    expect(reason).toContain('the nodes on v1.12.10 cannot continue to v1.13.9');
  });

  it('refuses a target that skips a minor from the other version', () => {
    const mix = mixOf([
      ['v1.13.9', ['10.0.30.11']],
      ['v1.11.6', ['10.0.30.12']],
    ]);
    const judged = judgeVersionMix(mix, 'v1.13.9', FACTORY);
    expect(judged.kind === 'refused' && judged.reason).toContain('skips a minor release');
  });
});
