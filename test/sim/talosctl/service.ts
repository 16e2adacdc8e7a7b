/** `talosctl service [id]` (cmd/talosctl/cmd/talos/services.go, formatters.RenderServicesInfo). */
import { etcdService, kubeletService, type ServiceStatus } from '../cluster-model.ts';
import { formatGoDuration, tabwrite } from '../go-format.ts';
import type { SimCluster, SimNode, SimState, SimTiming } from '../types.ts';
import { connect, exitAfterPartial, fanOut, reportFailures, successes, type Session } from './session.ts';

interface ServiceView {
  id: string;
  status: ServiceStatus;
  /** Newest first. */
  events: { state: string; msg: string; at: number }[];
}

function pid(node: SimNode, id: string): number {
  let h = 7;
  for (const ch of `${node.bootId}/${id}`) h = (h * 31 + ch.charCodeAt(0)) >>> 0;
  return 1000 + (h % 4000);
}

function containerService(node: SimNode, id: string, status: ServiceStatus, now: number): ServiceView {
  const boot = node.bootedAt;
  const startedAt = boot + (id === 'etcd' ? 6000 : 3000);
  const history = [
    {
      state: 'Waiting',
      msg:
        id === 'etcd'
          ? 'Waiting for service "cri" to be "up", service "networkd" to be "up", service "timed" to be "up"'
          : 'Waiting for service "cri" to be "up"',
      at: boot + 2000,
    },
    { state: 'Preparing', msg: 'Running pre state', at: boot + 4500 },
    { state: 'Preparing', msg: 'Creating service runner', at: boot + 5000 },
    { state: 'Running', msg: `Started task ${id} (PID ${pid(node, id)}) for container ${id}`, at: startedAt },
    { state: 'Running', msg: 'Health check successful', at: startedAt + 5000 },
  ];
  let events = history.filter((e) => e.at <= now && !(status.health === '?' && e.msg === 'Health check successful'));
  if (status.state === 'Preparing') events = events.filter((e) => e.state !== 'Running');
  if (status.state === 'Waiting') events = events.filter((e) => e.state === 'Waiting');
  if (status.state === 'Running' && status.health === 'Fail') {
    events.push({
      state: 'Running',
      msg: `Health check failed: ${status.lastHealthMessage ?? 'context deadline exceeded'}`,
      at: now - 5000,
    });
  }
  if (status.state === 'Failed') {
    events.push({
      state: 'Failed',
      msg: `Error running Containerd(${id}), going to restart forever: task "${id}" failed: exit code 1`,
      at: now - 3000,
    });
  }
  if (status.state === 'Finished') events.push({ state: 'Finished', msg: 'Service finished successfully', at: now - 1000 });
  return { id, status, events: events.sort((a, b) => b.at - a.at) };
}

/**
 * The etcd service after an EPHEMERAL wipe or a bootstrap (reference/etcd-recovery.md): its event
 * history starts when this instance was loaded (service_runner.go v1.13.9: Waiting, Preparing
 * "Running pre state" before PreFunc, "Creating service runner" after it). A joining etcd stays in
 * PreFunc, so "Running pre state" is its last event; a failed PreFunc ends in Failed with the error.
 * Event times are spread over the instance's real age, since the simulator's boots take milliseconds.
 */
function recoveryEtcdService(node: SimNode, status: ServiceStatus, now: number): ServiceView {
  const since = node.etcdServiceSince ?? node.bootedAt;
  const age = Math.max(0, now - since);
  const at = (fraction: number): number => since + Math.floor(age * fraction);
  const events: ServiceView['events'] = [
    { state: 'Waiting', msg: 'Waiting for service "cri" to be "up", service "networkd" to be "up", time sync', at: at(0) },
    { state: 'Waiting', msg: 'Waiting for service "cri" to be "up", time sync', at: at(0.1) },
    { state: 'Preparing', msg: 'Running pre state', at: at(0.2) },
  ];
  if (status.state === 'Failed') {
    events.push({ state: 'Failed', msg: node.etcdFailed ?? '', at: at(0.3) });
  } else if (status.state === 'Running') {
    events.push(
      { state: 'Preparing', msg: 'Creating service runner', at: at(0.3) },
      { state: 'Running', msg: `Started task etcd (PID ${pid(node, 'etcd')}) for container etcd`, at: at(0.4) },
    );
    if (status.health === 'OK') events.push({ state: 'Running', msg: 'Health check successful', at: at(0.6) });
    if (status.health === 'Fail')
      events.push({ state: 'Running', msg: `Health check failed: ${status.lastHealthMessage ?? ''}`, at: at(0.6) });
  }
  // Built oldest first; newest first as talosctl prints them (times may tie at millisecond ages).
  return { id: 'etcd', status, events: events.reverse() };
}

function servicesOf(cluster: SimCluster, node: SimNode, now: number, timing: SimTiming, schematics: SimState['schematics']): ServiceView[] {
  const ok: ServiceStatus = { state: 'Running', health: 'OK' };
  const noCheck: ServiceStatus = { state: 'Running', health: '?' };
  const list: ServiceView[] = [
    containerService(node, 'apid', ok, now),
    containerService(node, 'containerd', ok, now),
    containerService(node, 'cri', ok, now),
    containerService(node, 'dashboard', noCheck, now),
    containerService(node, 'kubelet', kubeletService(node, now, timing), now),
    { id: 'machined', status: noCheck, events: [{ state: 'Running', msg: 'Service started as goroutine', at: node.bootedAt + 500 }] },
    { id: 'syslogd', status: noCheck, events: [{ state: 'Running', msg: 'Service started as goroutine', at: node.bootedAt + 600 }] },
    containerService(node, 'udevd', noCheck, now),
  ];
  const etcd = etcdService(cluster, node, now, timing);
  if (etcd) {
    const view = node.etcdServiceSince === undefined ? containerService(node, 'etcd', etcd, now) : recoveryEtcdService(node, etcd, now);
    list.push(view, containerService(node, 'trustd', ok, now));
  }
  // The iscsi-tools extension runs iscsid as the extension service ext-iscsid, on every node whose image carries it.
  if ((schematics[node.schematic] ?? []).includes('siderolabs/iscsi-tools')) {
    list.push(containerService(node, 'ext-iscsid', noCheck, now));
  }
  return list.sort((a, b) => a.id.localeCompare(b.id));
}

export function runService(session: Session): number {
  const { io, parsed, cluster, deps } = session;
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`${connection.error}\n`);
    return 1;
  }
  const now = Date.now();
  const [id, action] = parsed.args;
  const results = fanOut(session, (node) => servicesOf(cluster, node, now, deps.timing, deps.state.schematics));
  if (id === undefined) {
    const failed = reportFailures(session, results, 'error listing services');
    if (failed !== undefined) return failed;
    const rows = [['NODE', 'SERVICE', 'STATE', 'HEALTH', 'LAST CHANGE', 'LAST EVENT']];
    for (const r of successes(results)) {
      for (const s of r.value) {
        const last = s.events[0];
        rows.push([
          r.address,
          s.id,
          s.status.state,
          s.status.health,
          last ? `${formatGoDuration(now - last.at)} ago` : '',
          last?.msg ?? '',
        ]);
      }
    }
    io.out(tabwrite(rows));
    return exitAfterPartial(session, results);
  }
  if (action !== undefined && action !== 'status') {
    io.err(`unsupported service action ${JSON.stringify(action)}\n`);
    return 1;
  }
  const failed = reportFailures(session, results, 'error listing services');
  if (failed !== undefined) return failed;
  const found = successes(results).flatMap((r) => r.value.filter((s) => s.id === id).map((s) => ({ node: r.address, s })));
  if (found.length === 0) {
    io.err(`service ${JSON.stringify(id)} is not registered on any nodes\n`);
    return 1;
  }
  const rows: string[][] = [];
  for (const { node, s } of found) {
    rows.push(['NODE', node], ['ID', s.id], ['STATE', s.status.state], ['HEALTH', s.status.health]);
    if (s.status.lastHealthMessage) rows.push(['LAST HEALTH MESSAGE', s.status.lastHealthMessage]);
    s.events.forEach((e, i) => rows.push([i === 0 ? 'EVENTS' : '', `[${e.state}]: ${e.msg} (${formatGoDuration(now - e.at)} ago)`]));
  }
  io.out(tabwrite(rows));
  return exitAfterPartial(session, results);
}
