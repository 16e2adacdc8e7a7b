/**
 * talosctl's action tracker (cmd/talosctl/pkg/talos/action/{tracker,node}.go) for `upgrade` and
 * `reset` with `--wait`: it watches the node's event stream, survives the reboot by reconnecting,
 * and prints every update as a `"<node>": <message>` line on stderr.
 */
import { apidReachable, unavailableError } from '../cluster-model.ts';
import { wait } from '../exec-io.ts';
import { goQuote } from '../go-format.ts';
import type { Acceptance } from '../lifecycle.ts';
import type { MachineEvent, SimNode } from '../types.ts';
import type { Session } from './session.ts';

export interface TrackOptions {
  session: Session;
  /** The `--nodes` value, printed quoted. */
  address: string;
  node: SimNode;
  deadline: number;
  action(): Promise<Acceptance>;
  expected(event: MachineEvent): boolean;
  /** Post check after the expected event: the boot ID changed (or the node answers in maintenance mode). */
  postCheck?: 'boot-id-changed';
  /** The event stream never delivers the actor ID (VIP or the upgrading node as endpoint). */
  hangAtActorId?: boolean;
}

export const machineReady = (event: MachineEvent): boolean => event.kind === 'status' && event.stage === 'RUNNING' && event.ready === true;
export const stopAllServicesStarted = (event: MachineEvent): boolean => event.kind === 'task' && event.task === 'stopAllServices';

/** Tracks one node; resolves to 0 on success, 1 on failure. */
export async function trackNode(options: TrackOptions): Promise<number> {
  const { session, node, deadline } = options;
  const { io, cluster, deps } = session;
  const say = (message: string): void => io.err(`${goQuote(options.address)}: ${message}\n`);
  const pollMs = Math.max(2, Math.min(deps.timing.stepMs, 20));
  const timedOut = (): boolean => Date.now() >= deadline;
  const preActionBootId = node.bootId;

  if (!apidReachable(cluster, node)) {
    say('unavailable, retrying...');
    say(unavailableError(cluster, node, options.address));
    return 1;
  }
  say('waiting for actor ID');
  if (options.hangAtActorId) {
    session.call.hung = 'waiting for actor ID';
    // The request still reaches the node and the upgrade proceeds; only the reply never arrives.
    options.action().catch(() => undefined);
    while (!timedOut()) await wait(Math.min(pollMs * 10, Math.max(1, deadline - Date.now())), io.signal);
    say('context deadline exceeded');
    return 1;
  }
  const accepted = await options.action();
  if ('error' in accepted) {
    say(accepted.error);
    return 1;
  }
  say(`actor ID: ${accepted.actorId}`);

  let actor = accepted.actorId;
  let bootId = node.bootId;
  let seen = node.events.reduce((max, e) => (e.actorId === actor ? max : Math.max(max, e.seq)), 0);
  let connected = true;
  let lastRetryAt = 0;
  let conditionMet = false;
  while (!conditionMet) {
    if (timedOut()) {
      say('context deadline exceeded');
      return 1;
    }
    const rebooted = node.bootId !== bootId;
    if (!apidReachable(cluster, node) || (rebooted && connected)) {
      if (connected || Date.now() - lastRetryAt >= deps.timing.retryMs) {
        say('unavailable, retrying...');
        lastRetryAt = Date.now();
      }
      connected = false;
      // Reconnecting asks for every buffered event of the new boot, which carry no actor ID.
      actor = '';
      if (!apidReachable(cluster, node)) {
        await wait(pollMs, io.signal);
        continue;
      }
    }
    if (!connected) {
      connected = true;
      bootId = node.bootId;
      seen = 0;
    }
    for (const event of node.events) {
      if (event.seq <= seen) continue;
      seen = event.seq;
      if (options.expected(event)) {
        say('events check condition met');
        conditionMet = true;
        break;
      }
      if (event.actorId !== actor) continue;
      say(event.text);
      // node.go v1.13.9 handleEvent ends the watch with retry.ExpectedErrorf on these two; the retry loop
      // prints it as `error: …` (StatusError) and watches on. Routine, not a failure.
      if (event.kind === 'task' && event.task === 'stopAllServices') say('error: stopAllServices task completed');
      if (event.kind === 'sequence' && event.text.startsWith('sequence: reboot ')) say('error: reboot sequence completed');
      if (event.kind === 'sequence' && event.error) {
        say(`sequence error: ${event.error}`);
        return 1;
      }
    }
    if (!conditionMet) await wait(pollMs, io.signal);
  }
  if (!options.postCheck) return 0;
  for (;;) {
    if (timedOut()) {
      say('context deadline exceeded');
      return 1;
    }
    if (node.stage === 'maintenance' || (apidReachable(cluster, node) && node.bootId !== preActionBootId)) {
      say('post check passed');
      return 0;
    }
    if (!apidReachable(cluster, node) && Date.now() - lastRetryAt >= deps.timing.retryMs) {
      say('unavailable, retrying...');
      lastRetryAt = Date.now();
    }
    await wait(pollMs, io.signal);
  }
}
