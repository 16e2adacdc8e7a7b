import { describe, expect, it } from 'vitest';
import { decideResume, describeSeen, type NodeSeen } from '../../../../../jobs/playbooks/talos-upgrade/resume.ts';

const TARGET = 'v1.12.11';
const FROM = 'v1.12.10';
const issued = { issuedAt: '2026-12-02T03:00:00.000Z', fromVersion: FROM, issuedBootId: 'boot-a' };
const node = (seen: Partial<NodeSeen>): NodeSeen => ({
  reachable: true,
  version: FROM,
  bootId: 'boot-a',
  ready: true,
  cordoned: false,
  ...seen,
});

describe('what a node step still has to do, by observation', () => {
  it('requests an upgrade that was never requested, and skips a node already on the target', () => {
    expect(decideResume({}, node({}), TARGET).action).toBe('issue');
    expect(decideResume({}, node({ version: TARGET }), TARGET).action).toBe('skip');
    // A re-install: the version alone does not tell old from new.
    expect(decideResume({}, node({ version: TARGET, schematic: 'old' }), TARGET, 'new').action).toBe('issue');
    expect(decideResume({}, node({ version: TARGET, schematic: 'new' }), TARGET, 'new').action).toBe('skip');
  });

  it('only checks a node that rebooted into the target after the request', () => {
    expect(decideResume(issued, node({ version: TARGET, bootId: 'boot-b' }), TARGET).action).toBe('checks');
  });

  it('sends the request again only when the node runs the previous image, has not rebooted and is not cordoned', () => {
    expect(decideResume(issued, node({}), TARGET).action).toBe('resend');
    expect(decideResume(issued, node({ cordoned: true }), TARGET).action).toBe('watch');
    expect(decideResume(issued, node({ cordoned: undefined }), TARGET).action).toBe('watch');
  });

  it('watches, and never requests again, while the state is unknown', () => {
    expect(decideResume(issued, { reachable: false, error: 'connection refused' }, TARGET).action).toBe('watch');
    expect(decideResume(issued, node({ bootId: undefined }), TARGET).action).toBe('watch');
    expect(decideResume({ ...issued, issuedBootId: undefined }, node({}), TARGET).action).toBe('watch');
    expect(decideResume(issued, node({ version: 'v1.11.0', bootId: 'boot-b' }), TARGET).action).toBe('watch');
    // On the target but not yet rebooted: the boot ID says the reported version cannot be the new image's.
    expect(decideResume(issued, node({ version: TARGET }), TARGET).action).toBe('watch');
  });

  it('recognises a node that rebooted into its previous image as an A/B fallback', () => {
    expect(decideResume(issued, node({ bootId: 'boot-b' }), TARGET).action).toBe('fell-back');
    const reinstall = { ...issued, fromVersion: TARGET };
    expect(decideResume(reinstall, node({ version: TARGET, bootId: 'boot-b', schematic: 'old' }), TARGET, 'new').action).toBe('fell-back');
    expect(decideResume(reinstall, node({ version: TARGET, bootId: 'boot-b', schematic: 'new' }), TARGET, 'new').action).toBe('checks');
  });

  it('describes the observation in the words of the record', () => {
    expect(describeSeen('10.0.30.11', issued, node({ cordoned: true, etcdMember: true }))).toBe(
      '10.0.30.11 runs v1.12.10, not rebooted since the request, Ready, cordoned, a healthy etcd member',
    );
    expect(describeSeen('10.0.30.11', issued, { reachable: false, error: 'timeout' })).toBe(
      '10.0.30.11 does not answer talosctl (timeout), boot ID unknown',
    );
  });
});
