import { describe, expect, it } from 'vitest';
import { evaluateEtcdService } from '../../../../src/health/rules/etcd-service.ts';
import type { ServiceInfo } from '../../../../src/talos/parse-service.ts';

const CPS = ['10.0.30.11', '10.0.30.12'];

function running(node: string | undefined): ServiceInfo {
  const info: ServiceInfo = {
    id: 'etcd',
    state: 'Running',
    health: 'OK',
    events: [
      { state: 'Running', message: 'Health check successful', ago: '3m21s' },
      { state: 'Running', message: 'Started task etcd (PID 2343) for container etcd', ago: '3m26s' },
    ],
  };
  return node === undefined ? info : { ...info, node };
}

describe('evaluateEtcdService', () => {
  it('passes when every control plane runs a healthy etcd', () => {
    const result = evaluateEtcdService([running('10.0.30.11'), running('10.0.30.12')], CPS);

    expect(result).toEqual({
      id: 'etcd-service',
      title: 'etcd service (10.0.30.11, 10.0.30.12)',
      status: 'passed',
      summary: 'etcd Running and healthy on 2/2 control planes',
      evidence: [
        '10.0.30.11: etcd Running, health OK; newest event: [Running] Health check successful (3m21s ago)',
        '10.0.30.12: etcd Running, health OK; newest event: [Running] Health check successful (3m21s ago)',
      ],
    });
  });

  it('fails on an unhealthy etcd, quoting the last health message', () => {
    const preparing: ServiceInfo = {
      node: '10.0.30.12',
      id: 'etcd',
      state: 'Preparing',
      health: '?',
      lastHealthMessage: 'context deadline exceeded',
      events: [{ state: 'Preparing', message: 'Running pre state', ago: '12s' }],
    };

    const result = evaluateEtcdService([running('10.0.30.11'), preparing], CPS);

    expect(result.status).toBe('failed');
    expect(result.summary).toBe('etcd on 10.0.30.12 is Preparing with health ?: context deadline exceeded');
    expect(result.evidence[1]).toBe(
      '10.0.30.12: etcd Preparing, health ?; last health message: context deadline exceeded; newest event: [Preparing] Running pre state (12s ago)',
    );
  });

  it('fails when Running but the health check fails', () => {
    const failing: ServiceInfo = {
      ...running('10.0.30.11'),
      health: 'Fail',
      events: [{ state: 'Running', message: 'Health check failed: context deadline exceeded', ago: '4s' }],
    };

    const result = evaluateEtcdService([failing, running('10.0.30.12')], CPS);

    expect(result.summary).toBe('etcd on 10.0.30.11 is Running with health Fail: Health check failed: context deadline exceeded');
  });

  it('fails when a control plane is missing, with its error', () => {
    const result = evaluateEtcdService([running('10.0.30.11')], CPS, [
      { node: '10.0.30.12', message: 'rpc error: code = Unavailable desc = connection refused' },
    ]);

    expect(result.summary).toBe('no etcd service status from 10.0.30.12: rpc error: code = Unavailable desc = connection refused');
  });

  it('attributes a block without NODE to the single control plane', () => {
    expect(evaluateEtcdService([running(undefined)], ['10.0.20.204']).status).toBe('passed');
  });

  it('ignores services other than etcd', () => {
    const kubelet: ServiceInfo = { ...running('10.0.30.11'), id: 'kubelet' };

    expect(evaluateEtcdService([kubelet, running('10.0.30.12')], CPS).summary).toBe('no etcd service status from 10.0.30.11');
  });
});
