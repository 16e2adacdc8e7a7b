import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tmpdir } from 'node:os';
import type { WebClient } from '@slack/web-api';
import type { ChatPort } from '../port/chat-port.ts';
import { createClusterAccess, type ClusterAccess, type ClusterAccessDeps } from '../cluster/cluster-session.ts';
import { judgeEstate } from '../rules/estate-agreement.ts';
import type { Inventory } from '../config/inventory.ts';
import { terraformCheckoutDir } from '../config/terraform-repo.ts';
import type { Logger } from '../log/logger.ts';
import { createTofu, type Tofu } from '../cluster/tofu.ts';
import { createProcessRunner } from '../exec/process-runner.ts';
import { recordExecCall } from '../metrics/exec-labels.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { createSlackClients } from '../slack/slack-clients.ts';
import { createImageFactory, type ImageFactory } from '../talos/image-factory.ts';
import { createTalosctlBinaries, type TalosctlBinaries } from '../talos/talosctl-binary.ts';
import { createTalosctlDownloader, type TalosctlDownloader } from '../talos/talosctl-download.ts';
import { createRepoCheckout, type RepoCheckout } from '../tofu/repo-checkout.ts';
import { createWorkingTreeReader, type WorkingTreeReader } from '../tofu/working-tree.ts';
import type { Infrastructure } from './infrastructure.ts';
import { observedRecord, type ObservedEstates } from '../ops/observed-estate.ts';
import type { Clock } from '../time/clock.ts';

/** The outside world: the clusters (talosctl, Kubernetes, tofu, git), the Image Factory and Slack's Web API. */
export interface Adapters {
  access: ClusterAccess;
  tofu: Tofu;
  factory: ImageFactory;
  git: WorkingTreeReader;
  /** The bot's own copies of the clusters' Terraform repositories (`terraformRepo`). */
  repo: RepoCheckout;
  /** Where reviewed plans wait for their Apply, one private directory per operation. */
  planDir: string;
  /** What the kept plans may hold together, in bytes. */
  planSpaceBytes: number;
  chat: ChatPort;
  slackClient: WebClient;
  /** The image's talosctl binaries (never downloading) and, unless `TALOSCTL_DOWNLOAD=false`, the download cache: for the doctor. */
  talosctl: { local: TalosctlBinaries; downloader: TalosctlDownloader | undefined };
}

export function buildAdapters(
  infra: Pick<Infrastructure, 'config' | 'scrubber' | 'clock'>,
  metrics: Metrics,
  onObserved?: ClusterAccessDeps['onObserved'],
): Adapters {
  const { config, scrubber } = infra;
  const runner = createProcessRunner({ scrubber, onCall: recordExecCall(metrics) });
  const tofu = createTofu({
    runner,
    bin: config.tofuBin,
    env: { ...config.childEnv, ...config.tofuEnv },
    timeoutMs: config.timeouts.probeMs,
  });
  const downloader = talosctlDownloader(config);
  const access = createClusterAccess({
    runner,
    tofu,
    binaries: createTalosctlBinaries(config.talosctlBin, downloader),
    scrubber,
    credentialsDir: config.credentialsDir,
    childEnv: config.childEnv,
    talosctlTimeoutMs: config.timeouts.probeMs,
    judgeEstate,
    ...(onObserved === undefined ? {} : { onObserved }),
  });
  const { client: slackClient, chat } = createSlackClients(config.slack, scrubber, metrics, infra.clock);
  return {
    access,
    tofu,
    factory: createImageFactory(config.imageFactoryUrl, config.timeouts.probeMs),
    git: createWorkingTreeReader(runner, {
      bin: config.gitBin,
      env: config.childEnv,
      timeoutMs: config.timeouts.probeMs,
      privateBase: config.credentialsDir,
    }),
    repo: createRepoCheckout(runner, {
      bin: config.gitBin,
      env: config.childEnv,
      // A fetch may move a whole repository's history.
      timeoutMs: config.timeouts.stepMs,
      privateBase: config.credentialsDir,
    }),
    // Never inside the credentials directory: a full plan space must not fail a credential write.
    planDir: config.planDir ?? join(config.credentialsDir === undefined ? tmpdir() : dirname(config.credentialsDir), 'talos-chatops-plans'),
    planSpaceBytes: config.planSpaceBytes,
    chat,
    slackClient,
    talosctl: { local: createTalosctlBinaries(config.talosctlBin), downloader },
  };
}

/**
 * The first copy of each `terraformRepo` not fetched yet, so that `tofu output` (the credentials)
 * answers before the first plan. A copy already there is left where it is: only a plan moves it,
 * and an apply resumed after this start runs on its planned commit.
 */
export async function fetchMissingTerraformRepos(
  adapters: Pick<Adapters, 'repo' | 'tofu'>,
  inventory: Inventory,
  logger: Logger,
): Promise<void> {
  for (const cluster of inventory.clusters) {
    if (cluster.terraformRepo === undefined || existsSync(join(terraformCheckoutDir(cluster), '.git'))) continue;
    try {
      const { commit, dir } = await adapters.repo.fetch(cluster);
      await adapters.tofu.run(dir, ['init', '-input=false', '-no-color']);
      logger.info({ cluster: cluster.name, commit }, 'fetched the Terraform repository');
    } catch (error) {
      logger.error(
        { cluster: cluster.name, err: error instanceof Error ? error.message : String(error) },
        'could not fetch the Terraform repository',
      );
    }
  }
}

/** Unless `TALOSCTL_DOWNLOAD=false`, the release downloads into the cache (never inside the credentials directory). */
function talosctlDownloader(config: Infrastructure['config']): TalosctlDownloader | undefined {
  const download = config.talosctlDownload;
  if (download === undefined) return undefined;
  const base = config.credentialsDir === undefined ? tmpdir() : dirname(config.credentialsDir);
  return createTalosctlDownloader({
    baseUrl: download.releaseUrl,
    cacheDir: download.cacheDir ?? join(base, 'talos-chatops-talosctl'),
    maxBytes: download.maxBytes,
    // An 80 MB client over a slow link: well beyond one probe, still bounded.
    timeoutMs: Math.max(config.timeouts.stepMs, 300_000),
  });
}

/** Records what each session observed of its cluster; a Redis that does not take it costs the job nothing, and is logged. */
export function recordObservations(
  store: Pick<ObservedEstates, 'write'>,
  clock: Clock,
  logger: Logger,
): NonNullable<ClusterAccessDeps['onObserved']> {
  return async (cluster, estate) => {
    const record = observedRecord(estate, clock.now());
    if (record === undefined) return;
    try {
      await store.write(cluster.name, record);
    } catch (error) {
      logger.warn(
        { cluster: cluster.name, err: error instanceof Error ? error.message : String(error) },
        'could not record the observed nodes',
      );
    }
  };
}
