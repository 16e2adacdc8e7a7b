/**
 * `talosctl upgrade` (cmd/talosctl/cmd/talos/upgrade.go at v1.13.0 and v1.13.9): the LifecycleService
 * flow of a ≥ 1.13 client against a server above 1.13.0-alpha.2, and the legacy MachineService
 * flow otherwise; and `talosctl rollback`.
 */
import { controlPlanes, findNode } from '../cluster-model.ts';
import { wait } from '../exec-io.ts';
import { goTimeNow, multiError, parseGoDuration, tabwrite } from '../go-format.ts';
import type { SimNode } from '../types.ts';
import { bare, compareVersions } from '../versions.ts';
import { connect, exitAfterPartial, fanOut, reach, reportFailures, successes, type NodeResult, type Session } from './session.ts';
import { machineReady, trackNode } from './tracker.ts';

const PROCESS_STARTED_AT = Date.now();

/** helpers.ClientVersionCheck: a warning per node running an older Talos than the client. */
export function warnVersionSkew(session: Session): void {
  for (const address of session.nodes) {
    const reached = reach(session, address);
    if ('error' in reached) continue;
    const server = reached.node.talosVersion;
    if (compareVersions(server, session.clientVersion) < 0) {
      session.io.err(`WARNING: ${address}: server version ${bare(server)} is older than client version ${bare(session.clientVersion)}\n`);
    }
  }
}

export function parseTimeout(session: Session, flag: string): number | undefined {
  const text = session.parsed.str(flag) ?? '30m0s';
  const ms = parseGoDuration(text);
  if (ms === undefined) {
    session.io.err(`invalid argument ${JSON.stringify(text)} for "--${flag}" flag: time: invalid duration ${JSON.stringify(text)}\n`);
  }
  return ms;
}

/** `talosctl upgrade` flags that exist from this client version on (upgrade.go: v1.13.0, `--no-reboot` v1.13.7). */
const NEWER_FLAGS: readonly (readonly [flag: string, since: string])[] = [
  ['drain', 'v1.13.0'],
  ['drain-timeout', 'v1.13.0'],
  ['legacy', 'v1.13.0'],
  ['progress', 'v1.13.0'],
  ['no-reboot', 'v1.13.7'],
];

/** `talosUpgradeAPIVersionRange` (upgrade.go v1.13.9): `>1.13.0-alpha.2 <2.0.0`; a released 1.13.0 is inside it. */
function hasLifecycleUpgrade(version: string): boolean {
  return compareVersions(version, 'v1.13.0') >= 0 && compareVersions(version, 'v2.0.0') < 0;
}

export async function runUpgrade(session: Session): Promise<number> {
  const { io, parsed } = session;
  const clientTag = session.clientVersion;
  for (const [flag, since] of NEWER_FLAGS) {
    if (parsed.has(flag) && compareVersions(clientTag, since) < 0) {
      io.err(`unknown flag: --${flag}\n`);
      return 1;
    }
  }
  const newClient = compareVersions(clientTag, 'v1.13.0') >= 0;
  // RunE: `if drain { wait = true }` runs before anything else, so with a ≥ 1.13 client `--wait=false`
  // alone is ignored; only `--drain=false` (or `--no-reboot`, which also turns the drain off) leaves it.
  let drain = newClient && parsed.bool('drain');
  const noReboot = parsed.bool('no-reboot');
  const wait = parsed.bool('wait') || parsed.bool('debug') || drain;
  if (noReboot) drain = false;
  if (parsed.bool('insecure')) {
    io.err('upgrade in maintenance mode is not supported by the simulated cluster\n');
    return 1;
  }
  const timeout = parseTimeout(session, 'timeout');
  if (timeout === undefined) return 1;
  if (newClient) {
    if (parsed.bool('legacy')) {
      io.err('WARNING: Forcing use of legacy upgrade method. This flag is deprecated and will be removed in Talos 1.18.\n');
      return runLegacyUpgrade(session, wait, timeout);
    }
    // helpers.TalosVersionCheck asks every node's version first.
    const unreachable: string[] = [];
    let outside = false;
    for (const address of session.nodes) {
      const reached = reach(session, address);
      if ('error' in reached) unreachable.push(`${address}: ${reached.error}`);
      else if (!hasLifecycleUpgrade(reached.node.talosVersion)) outside = true;
    }
    if (unreachable.length > 0) {
      io.err(`error checking Talos version compatibility: error getting server versions: ${multiError(unreachable)}\n`);
      return 1;
    }
    if (outside) {
      // Reported through the reporter with StatusError: a plain line on stderr.
      io.err('New upgrade API is not available, falling back to legacy\n');
      return runLegacyUpgrade(session, wait, timeout);
    }
    return runLifecycleUpgrade(session, { drain, wait, noReboot, timeout });
  }
  return runLegacyUpgrade(session, wait, timeout);
}

interface LifecycleFlags {
  drain: boolean;
  wait: boolean;
  noReboot: boolean;
  timeout: number;
}

/**
 * upgradeViaLifecycleService (upgrade.go v1.13.9), every line through the plain reporter on stderr
 * (pkg/reporter: not a terminal, so each update is one line, repeated ones once): pull the image
 * (`<node>: pulled image <name>@sha256:…`), run the installer (`<node>: <installer output>`, then
 * `<node>: Exit code: N` and `<node>: upgrade completed`), drain (`<k8s name>: cordoning node` …
 * `node drained`; a drain error returns before the reboot, so the node stays cordoned with the new
 * image installed and not booted), reboot with the action tracker (`"<node>": …` lines), then wait
 * for Ready and uncordon (`<k8s name>: node uncordoned`). Nothing on stdout.
 */
async function runLifecycleUpgrade(session: Session, flags: LifecycleFlags): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  const image = parsed.str('image') ?? `ghcr.io/siderolabs/installer:${session.clientVersion}`;
  const nodes: { address: string; node: SimNode }[] = [];
  for (const address of session.nodes) {
    const reached = reach(session, address);
    if (!('error' in reached)) nodes.push({ address, node: reached.node });
  }

  // 1. ImageService.Pull on every node.
  const pullErrors: string[] = [];
  const pulled: string[] = [];
  for (const { address } of nodes) {
    const result = deps.lifecycle.pullImage(image);
    if ('error' in result) pullErrors.push(`error from node ${address}: ${result.error}`);
    else pulled.push(`${address}: pulled image ${result.name}`);
  }
  if (pulled.length > 0) io.err(`${pulled.join('\n')}\n`);
  if (pullErrors.length > 0) {
    io.err(`error pulling upgrade image: ${pullErrors.join('\n')}\n`);
    return 1;
  }

  // 2. LifecycleService.Upgrade on every node, the installer's output streamed as it comes.
  const installs = await Promise.all(
    nodes.map(async ({ address, node }) => ({
      address,
      result: await deps.lifecycle.installUpgrade(cluster, node, image, (message) => {
        const text = message.trim();
        if (text !== '') io.err(`${address}: ${text}\n`);
      }),
    })),
  );
  const installErrors: string[] = [];
  const finished: string[] = [];
  for (const { address, result } of installs) {
    if ('error' in result) {
      installErrors.push(`error from node ${address}: ${result.error}`);
      continue;
    }
    io.err(`${address}: Exit code: ${result.exitCode}\n`);
    if (result.exitCode === 0) finished.push(`${address}: upgrade completed`);
    else {
      finished.push(`${address}: upgrade failed with exit code ${result.exitCode}`);
      installErrors.push(`node ${address}: upgrade failed with exit code ${result.exitCode}`);
    }
  }
  if (finished.length > 0) io.err(`${finished.join('\n')}\n`);
  if (installErrors.length > 0) {
    io.err(`error during upgrade: ${installErrors.join('\n')}\n`);
    return 1;
  }

  // 3. The client-side cordon and drain, all nodes at once; the first error ends the command.
  if (flags.drain) {
    const text = parsed.str('drain-timeout') ?? '5m0s';
    const literal = parsed.has('drain-timeout') ? parseGoDuration(text) : (deps.timing.drainTimeoutMs ?? 30 * deps.timing.stepMs);
    if (literal === undefined) {
      io.err(`invalid argument ${JSON.stringify(text)} for "--drain-timeout" flag: time: invalid duration ${JSON.stringify(text)}\n`);
      return 1;
    }
    const errors = await Promise.all(
      nodes.map(({ node }) =>
        deps.lifecycle.clientDrain(cluster, node, literal, text, (message) => io.err(`${node.hostname}: ${message}\n`)),
      ),
    );
    const failed = errors.find((e) => e !== undefined);
    if (failed !== undefined) {
      io.err(`${failed}\n`);
      return 1;
    }
  }

  // 4. The reboot (skipped by --no-reboot), tracked when waiting; 5. the uncordon runs after it either way.
  let code = 0;
  let suppressErrors = false;
  if (!flags.noReboot) {
    warnVersionSkew(session);
    if (!flags.wait) {
      const connection = connect(session);
      const failures: string[] = [];
      for (const { address, node } of nodes) {
        const accepted = 'error' in connection ? connection : deps.lifecycle.requestReboot(cluster, node);
        if ('error' in accepted) failures.push(`${address}: ${accepted.error}`);
      }
      if (failures.length > 0) {
        io.err(`error during upgrade: error executing reboot: ${multiError(failures)}\n`);
        code = 1;
      }
    } else {
      // The tracker's reporter prints the errors itself; the command's error is then suppressed.
      suppressErrors = true;
      const connection = connect(session);
      const endpoint = 'endpoint' in connection ? connection.endpoint : undefined;
      const deadline = Date.now() + flags.timeout;
      const codes = await Promise.all(
        nodes.map(({ address, node }) =>
          trackNode({
            session,
            address,
            node,
            deadline,
            action: () =>
              Promise.resolve('error' in connection ? { error: connection.error } : deps.lifecycle.requestReboot(cluster, node)),
            expected: machineReady,
            postCheck: 'boot-id-changed',
            hangAtActorId: hangsThroughEndpoint(session, node, endpoint),
          }),
        ),
      );
      if (codes.some((c) => c !== 0)) code = 1;
    }
  }
  if (flags.drain) {
    const deadline = Date.now() + flags.timeout;
    for (const { node } of nodes) {
      const say = (message: string): void => io.err(`${node.hostname}: ${message}\n`);
      say('waiting for node to become Ready');
      while (!deps.lifecycle.kubeReady(cluster, node) && Date.now() < deadline)
        await wait(Math.max(2, Math.min(deps.timing.stepMs, 20)), io.signal);
      if (!deps.lifecycle.kubeReady(cluster, node)) {
        if (!suppressErrors) io.err(`error waiting for node ${JSON.stringify(node.hostname)} to become Ready: context deadline exceeded\n`);
        code = 1;
        continue;
      }
      say('uncordoning node');
      deps.lifecycle.uncordon(cluster, node);
      say('node uncordoned');
    }
  }
  return code;
}

/** The event stream through the VIP, or through the rebooting node itself, never delivers the actor ID (talos#11830). */
function hangsThroughEndpoint(session: Session, node: SimNode, endpoint: string | undefined): boolean {
  const { cluster, deps } = session;
  const hang = deps.state.behavior.selfEndpointHang;
  const throughItself =
    (endpoint === node.address || endpoint === node.hostname) &&
    (hang === 'always' || (hang === 'multi-control-plane' && controlPlanes(cluster).length > 1));
  return node.role === 'controlplane' && endpoint !== undefined && (endpoint === cluster.vip || throughItself);
}

/**
 * The legacy MachineService.Upgrade (upgradeLegacy, upgrade.go v1.13.9; the whole command before
 * 1.13): the server validates the image, takes the upgrade mutex and checks etcd for a control
 * plane, then runs its upgrade sequence with a server-side drain. `--wait` tracks it.
 */
async function runLegacyUpgrade(session: Session, waitForIt: boolean, timeout: number): Promise<number> {
  const { io, parsed, cluster, deps } = session;
  const request = {
    image: parsed.str('image') ?? `ghcr.io/siderolabs/installer:${session.clientVersion}`,
    stage: parsed.bool('stage'),
    force: parsed.bool('force'),
    rebootMode: (parsed.str('reboot-mode') === 'powercycle' ? 'powercycle' : 'default') as 'default' | 'powercycle',
  };
  const connection = connect(session);
  warnVersionSkew(session);

  if (!waitForIt) {
    if ('error' in connection) {
      io.err(`error performing upgrade: ${connection.error}\n`);
      return 1;
    }
    const results: NodeResult<string>[] = [];
    for (const address of session.nodes) {
      const reached = reach(session, address);
      if ('error' in reached) {
        results.push({ address, error: reached.error });
        continue;
      }
      const accepted = await deps.lifecycle.requestUpgrade(cluster, reached.node, request);
      results.push('error' in accepted ? { address, error: accepted.error } : { address, node: reached.node, value: accepted.actorId });
    }
    const failed = reportFailures(session, results, 'error performing upgrade');
    if (failed !== undefined) return failed;
    const rows = [['NODE', 'ACK', 'STARTED']];
    for (const r of successes(results)) rows.push([r.address, 'Upgrade request received', goTimeNow(new Date(), PROCESS_STARTED_AT)]);
    io.out(tabwrite(rows));
    return exitAfterPartial(session, results);
  }

  const endpoint = 'endpoint' in connection ? connection.endpoint : undefined;
  const deadline = session.startedAt + timeout;
  const codes = await Promise.all(
    session.nodes.map((address) => {
      const node = findNode(cluster, address);
      if (!node) {
        io.err(
          `${JSON.stringify(address)}: rpc error: code = Unavailable desc = connection error: desc = "transport: Error while dialing: dial tcp ${address}:50000: connect: no route to host"\n`,
        );
        return Promise.resolve(1);
      }
      return trackNode({
        session,
        address,
        node,
        deadline,
        action: () =>
          'error' in connection ? Promise.resolve({ error: connection.error }) : deps.lifecycle.requestUpgrade(cluster, node, request),
        expected: machineReady,
        postCheck: 'boot-id-changed',
        hangAtActorId: hangsThroughEndpoint(session, node, endpoint),
      });
    }),
  );
  return codes.some((c) => c !== 0) ? 1 : 0;
}

/** `talosctl rollback`: silent on success; the reboot happens afterwards. */
export function runRollback(session: Session): number {
  const { io, cluster, deps } = session;
  const connection = connect(session);
  if ('error' in connection) {
    io.err(`error executing rollback: ${connection.error}\n`);
    return 1;
  }
  const results = fanOut(session, (node) => {
    const error = deps.lifecycle.requestRollback(cluster, node);
    return error ? { error } : node;
  });
  const failed = results.filter((r) => 'error' in r);
  if (failed.length === 0) return 0;
  const text = failed.map((f) => ('error' in f ? (session.nodes.length > 1 ? `${f.address}: ${f.error}` : f.error) : '')).join('; ');
  io.err(`error executing rollback: ${text}\n`);
  return 1;
}
