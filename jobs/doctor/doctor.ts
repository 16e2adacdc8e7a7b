import type { Redis } from 'ioredis';
import type { DoctorFinding } from '../../src/chat/doctor-report.ts';
import { placementUnknown, type BotPlacement } from '../../src/config/bot-placement.ts';
import type { ClusterConfig, Inventory } from '../../src/config/inventory.ts';
import type { ResolvedName } from '../../src/config/inventory-names.ts';
import type { ClusterAccess } from '../../src/cluster/cluster-session.ts';
import type { Tofu } from '../../src/cluster/tofu.ts';
import type { SecretScrubber } from '../../src/log/secret-scrubber.ts';
import type { SlackSelf } from '../../src/port/slack-self.ts';
import type { TalosctlBinaries } from '../../src/talos/talosctl-binary.ts';
import type { TalosctlDownloader } from '../../src/talos/talosctl-download.ts';
import { errorText } from '../../src/chat/error-text.ts';
import { systemClock, type Clock } from '../../src/time/clock.ts';
import { withDeadline } from '../../src/time/deadline.ts';
import { membershipChecks, namesCheck, scopesCheck } from './slack-checks.ts';
import { declaredVersionsCheck, outputsCheck, talosctlCheck } from './cluster-checks.ts';
import { redisCheck, snapshotDirCheck } from './host-checks.ts';
import { placementCheck, placementUnknownFinding } from './placement-check.ts';
import { windowCheck } from './window-check.ts';

export interface DoctorDeps {
  inventory: Inventory;
  slack: SlackSelf;
  /** The scopes the manifest asks for, each with what breaks without it. */
  requiredScopes: Readonly<Record<string, string>>;
  tofu: Tofu;
  scrubber: SecretScrubber;
  access: ClusterAccess;
  /** The image's talosctl (`TALOSCTL_BIN`), never downloading. */
  binaries: TalosctlBinaries;
  /** Unless `TALOSCTL_DOWNLOAD=false`: its cache, looked at, never filled by the doctor. */
  downloader?: TalosctlDownloader;
  redis: { url: string; client: Redis };
  now: () => Date;
  /** The bound of each check, in ms: a check that takes longer is reported as such, and the others still report. */
  checkTimeoutMs: number;
  /** The clock the checks' bound runs on; default the system's. */
  clock?: Pick<Clock, 'sleep'>;
  /** Where the bot itself runs (the downward API): a cluster it runs on cannot have its snapshots off-cluster. */
  placement: BotPlacement;
  /** The `#channel` and `@handle` names the inventory used, with the ids Slack resolved them to at start or reload. */
  names?: () => readonly ResolvedName[];
}

/** One check: its findings, given a signal that aborts at the check's bound. */
type Check = { check: string; cluster?: string; run: (signal: AbortSignal) => Promise<DoctorFinding[]> };

/** The check's findings; a check that throws or overruns its bound is one ⛔ line, and never hides another check. */
async function bounded(check: Check, deps: DoctorDeps): Promise<DoctorFinding[]> {
  try {
    const outcome = await withDeadline(deps.clock ?? systemClock, deps.checkTimeoutMs, (signal) => check.run(signal));
    if (outcome.ok) return outcome.value;
    return [
      {
        status: 'fail',
        check: check.check,
        cluster: check.cluster,
        found: `no answer within ${Math.round(deps.checkTimeoutMs / 1000)} s`,
        fix: 'look at what this check reaches (Slack, tofu, the cluster, Redis or the volume) for why it hangs',
      },
    ];
  } catch (error) {
    return [
      {
        status: 'fail',
        check: check.check,
        cluster: check.cluster,
        // Scrubbed: an error of tofu or Kubernetes may quote what it read.
        found: `could not be checked: ${deps.scrubber.scrub(errorText(error))}`,
        fix: 'fix the cause named here, then run `/talos doctor` again',
      },
    ];
  }
}

function perCluster(
  clusters: readonly ClusterConfig[],
  check: string,
  run: (cluster: ClusterConfig, signal: AbortSignal) => Promise<DoctorFinding[]>,
): Check[] {
  return clusters.map((cluster) => ({ check, cluster: cluster.name, run: (signal) => run(cluster, signal) }));
}

/**
 * `/talos doctor`: everything the bot needs before an operation, checked at once, each check on its
 * own and bounded in time, so one that fails or hangs never hides the others. Reads only: nothing
 * is downloaded, written (beyond a probe file removed at once) or posted here.
 */
export async function runDoctor(deps: DoctorDeps): Promise<DoctorFinding[]> {
  const clusters = deps.inventory.clusters;
  // The bot's identity is read once: the scopes and every membership check need it.
  let identity: ReturnType<SlackSelf['identity']> | undefined;
  const self = (): ReturnType<SlackSelf['identity']> => (identity ??= deps.slack.identity());
  const checks: Check[] = [
    { check: 'Slack scopes', run: () => scopesCheck(deps, self) },
    { check: 'Channel membership', run: () => membershipChecks(deps, self) },
    { check: 'Inventory names', run: () => Promise.resolve(namesCheck(deps.names?.() ?? [])) },
    ...perCluster(clusters, 'Terraform outputs', (c, signal) => outputsCheck(deps, c, signal)),
    ...perCluster(clusters, 'Declared versions', (c, signal) => declaredVersionsCheck(deps, c, signal)),
    ...perCluster(clusters, 'talosctl', (c, signal) => talosctlCheck(deps, c, signal)),
    { check: 'Redis', run: () => redisCheck(deps) },
    ...perCluster(clusters, 'Snapshot directory', (c) => snapshotDirCheck(c)),
    // Unknown, it is one warning for the whole bot; known, each cluster says whether the bot runs on it.
    ...(placementUnknown(deps.placement)
      ? [{ check: 'Where the bot runs', run: () => Promise.resolve([placementUnknownFinding()]) }]
      : perCluster(clusters, 'Where the bot runs', (c, signal) => placementCheck(deps, c, signal))),
    ...perCluster(clusters, 'Maintenance windows', (c) => Promise.resolve(windowCheck(c, deps.now()))),
  ];
  return (await Promise.all(checks.map((check) => bounded(check, deps)))).flat();
}
