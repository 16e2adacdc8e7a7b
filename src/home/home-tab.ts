import type { ChatPort } from '../port/chat-port.ts';
import { operationTitle } from '../chat/operation-title.ts';
import {
  type HomeApproval,
  type HomeCluster,
  type HomeEntry,
  type HomeLock,
  type HomePublisher,
  type HomeView,
  homeView,
  type VersionReading,
} from './home-view.ts';
import type { PresentationLookup } from '../chat/presentation.ts';
import type { ClusterConfig, Inventory } from '../config/inventory.ts';
import type { GateReport } from '../health/health-gate.ts';
import type { Logger } from '../log/logger.ts';
import type { ClusterLock } from '../ops/cluster-lock.ts';
import type { Operation } from '../ops/operation.ts';
import { FINISHED } from '../ops/state-machine.ts';
import type { OperationStore } from '../ops/operation-store.ts';
import type { HomeRecords } from './home-records.ts';
import { clustersInDetail, clustersOperated, type HomeAudienceDeps } from './home-audience.ts';
import { clusterSummaries, type ClusterSummary } from '../ops/cluster-summary.ts';

/** How many of a cluster's latest operations the Home looks through for versions and approvals. */
const RECENT_OPERATIONS = 20;
/** Permalinks never change; this many are kept. */
const PERMALINK_CACHE = 500;

export interface HomeTabDeps {
  inventory: Inventory;
  store: Pick<OperationStore, 'get' | 'listForCluster' | 'update'>;
  lock: Pick<ClusterLock, 'holder'>;
  records: HomeRecords;
  chat: Pick<ChatPort, 'permalink'>;
  publisher: HomePublisher;
  /** Who may see which cluster in detail. */
  audience: HomeAudienceDeps;
  now: () => Date;
  logger: Logger;
  /** How every kind's steps are named. */
  presentations: PresentationLookup;
  /** Least time between two publishes of one user's Home, in ms. Default 3000. */
  throttleMs?: number;
  /** How long after a change the Home is drawn, so a burst of changes makes one publish, in ms. Default 500. */
  settleMs?: number;
}

/** The Home tab: drawn when a user opens it, and drawn again for recent viewers when something they see changes. */
export interface HomeTab {
  /** A user opened the Home: remember them for a while and draw it for them now. Never throws. */
  opened(user: string): Promise<void>;
  /** An operation was written (the operation store's `onChange`): redraw when its state, root or approvals changed. */
  operationChanged(before: Operation, after: Operation): void;
  /** A health gate finished: keep it as its cluster's last gate and redraw. */
  gateFinished(report: GateReport): void;
  /** Drops pending redraws, at shutdown. */
  close(): void;
}

/** What a viewer sees change: the state, the thread to link to, the approvals waiting. */
function visible(op: Operation): string {
  return JSON.stringify([
    op.state,
    op.rootTs,
    op.approvals.filter((a) => a.state === 'pending').map((a) => [a.step, a.messageTs, a.expiresAt]),
  ]);
}

function withV(version: string): string {
  return `v${version.replace(/^v/, '')}`;
}

/** The newer of two readings; a gate and an operation can each be the latest word. */
function newer(a: VersionReading | undefined, b: VersionReading | undefined): VersionReading | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return Date.parse(b.at) > Date.parse(a.at) ? b : a;
}

/** The versions a completed upgrade of this kind left on every node. */
function upgradeReading(ops: Operation[], kind: Operation['kind'], label: string): VersionReading | undefined {
  const done = ops.find((o) => o.kind === kind && o.state === 'completed' && o.endedAt !== undefined && o.target.version !== undefined);
  return done === undefined ? undefined : { versions: [withV(done.target.version!)], at: done.endedAt!, source: `${label} ${done.id}` };
}

/** What the bot recorded, read once for a round of redraws. */
interface Reading {
  now: Date;
  /** A cluster in full. */
  detail(cluster: ClusterConfig): Promise<HomeCluster>;
  /** Every cluster as `/talos status` shows it outside its channel, in inventory order. */
  summaries(): Promise<{ summaries: ClusterSummary[]; links: Map<string, string> }>;
}

export function createHomeTab(deps: HomeTabDeps): HomeTab {
  const throttleMs = deps.throttleMs ?? 3000;
  const settleMs = deps.settleMs ?? 500;
  const permalinks = new Map<string, string>();
  const lastSent = new Map<string, number>();
  const waiting = new Map<string, NodeJS.Timeout>();
  let settling: NodeJS.Timeout | undefined;
  let closed = false;

  /** A link to a message, or none when Slack cannot give one now: the Home is drawn without it. */
  const permalink = async (channel: string, ts: string | undefined): Promise<string | undefined> => {
    if (ts === undefined) return undefined;
    const key = `${channel}:${ts}`;
    const cached = permalinks.get(key);
    if (cached !== undefined) return cached;
    try {
      const link = await deps.chat.permalink(channel, ts);
      if (permalinks.size >= PERMALINK_CACHE) permalinks.clear();
      permalinks.set(key, link);
      return link;
    } catch (error) {
      deps.logger.debug({ err: (error as Error).message }, 'no permalink for the home tab');
      return undefined;
    }
  };

  const lockOf = async (op: Operation): Promise<HomeLock> => {
    return {
      opId: op.id,
      // Named as people name it; the title carries its node and version.
      what: operationTitle(op, deps.presentations(op.kind)),
      state: op.state,
      by: op.startedBy ?? op.requestedBy,
      since: op.startedAt ?? op.createdAt,
      // The operation keeps its thread's link once someone asked for it; else Slack is asked (and the answer cached).
      ...(await (op.permalink === undefined ? permalink(op.channel, op.rootTs) : Promise.resolve(op.permalink)).then((link) =>
        link === undefined ? {} : { link },
      )),
    };
  };

  const approvalsOf = async (ops: Operation[], now: Date): Promise<HomeApproval[]> => {
    const waitingOps = ops.filter((o) => !FINISHED.includes(o.state));
    const pending = waitingOps.flatMap((op) =>
      op.approvals.filter((a) => a.state === 'pending' && Date.parse(a.expiresAt) > now.getTime()).map((a) => ({ op, a })),
    );
    return Promise.all(
      pending.map(async ({ op, a }) => {
        const step = op.steps.find((s) => s.id === a.step);
        const link = await permalink(op.channel, a.messageTs);
        return {
          opId: op.id,
          what: step === undefined ? a.step : deps.presentations(op.kind).stepLabel(step),
          requestedAt: a.requestedAt,
          expiresAt: a.expiresAt,
          ...(link === undefined ? {} : { link }),
        };
      }),
    );
  };

  const clusterState = async (cluster: ClusterConfig, now: Date): Promise<HomeCluster> => {
    const [holder, gate, ops] = await Promise.all([
      deps.lock.holder(cluster.name),
      deps.records.lastGate(cluster.name),
      deps.store.listForCluster(cluster.name, RECENT_OPERATIONS),
    ]);
    const holderOp = holder === undefined ? undefined : (ops.find((o) => o.id === holder) ?? (await deps.store.get(holder)));
    const gateTalos: VersionReading | undefined =
      gate && gate.talos.length > 0 ? { versions: gate.talos, at: gate.at, source: 'health gate' } : undefined;
    const gateKubernetes: VersionReading | undefined =
      gate && gate.kubernetes.length > 0 ? { versions: gate.kubernetes, at: gate.at, source: 'health gate' } : undefined;
    const talos = newer(gateTalos, upgradeReading(ops, 'talos-upgrade', 'Talos upgrade'));
    const kubernetes = newer(gateKubernetes, upgradeReading(ops, 'k8s-upgrade', 'Kubernetes upgrade'));
    return {
      name: cluster.name,
      environment: cluster.environment,
      channel: cluster.channel,
      ...(talos === undefined ? {} : { talos }),
      ...(kubernetes === undefined ? {} : { kubernetes }),
      ...(holderOp === undefined ? {} : { lock: await lockOf(holderOp) }),
      approvals: await approvalsOf(ops, now),
      ...(gate === undefined
        ? {}
        : {
            lastGate: {
              passed: gate.passed,
              at: gate.at,
              stopReasons: gate.stopReasons,
              ...(gate.declared === undefined ? {} : { declared: gate.declared }),
            },
          }),
    };
  };

  /**
   * One reading of what the bot recorded, shared by the views drawn from it. Each part is read
   * once, when a first viewer needs it; what a viewer gets of it is chosen per viewer in `build`.
   */
  const reading = (): Reading => {
    const now = deps.now();
    const details = new Map<string, Promise<HomeCluster>>();
    let summaries: Promise<{ summaries: ClusterSummary[]; links: Map<string, string> }> | undefined;
    return {
      now,
      detail: (cluster) => {
        let pending = details.get(cluster.name);
        if (pending === undefined) {
          pending = clusterState(cluster, now);
          details.set(cluster.name, pending);
        }
        return pending;
      },
      summaries: () => (summaries ??= clusterSummaries(deps.inventory.clusters, deps)),
    };
  };

  /** `user`'s Home: in detail the clusters they may see so, the others as `/talos status` shows them outside their channels. */
  const build = async (user: string, from: Reading = reading()): Promise<HomeView> => {
    const { clusters } = deps.inventory;
    const inDetail = await clustersInDetail(user, clusters, deps.audience);
    const operated = await clustersOperated(
      user,
      clusters.filter((c) => inDetail.has(c.name)),
      deps.audience,
    );
    const entries = await Promise.all(
      clusters.map(async (cluster, i): Promise<HomeEntry> => {
        // The detail is shared by every viewer of this reading; whether it carries buttons is this viewer's own.
        if (inDetail.has(cluster.name)) return { ...(await from.detail(cluster)), actable: operated.has(cluster.name) };
        const { summaries, links } = await from.summaries();
        const summary = summaries[i]!;
        const link = summary.holder === undefined ? undefined : links.get(summary.holder);
        return { withheld: true, summary, ...(link === undefined ? {} : { link }) };
      }),
    );
    return homeView(entries, from.now);
  };

  const send = async (user: string, view: HomeView): Promise<void> => {
    lastSent.set(user, Date.now());
    try {
      await deps.publisher.publish(user, view);
    } catch (error) {
      deps.logger.warn({ user, err: (error as Error).message }, 'home tab not published');
    }
  };

  /** Publishes now, or once the user's throttle allows, with the view as it is then. */
  const redrawFor = async (user: string, from: Reading): Promise<void> => {
    const wait = (lastSent.get(user) ?? Number.NEGATIVE_INFINITY) + throttleMs - Date.now();
    if (wait <= 0) {
      // Counted as sent from now, so a redraw that starts while this one is drawn waits its turn.
      lastSent.set(user, Date.now());
      await send(user, await build(user, from));
      return;
    }
    if (waiting.has(user)) return;
    const timer = setTimeout(() => {
      waiting.delete(user);
      if (closed) return;
      build(user).then(
        (fresh) => send(user, fresh),
        (error: unknown) => deps.logger.warn({ err: (error as Error).message }, 'home tab not drawn'),
      );
    }, wait);
    timer.unref();
    waiting.set(user, timer);
  };

  const redrawAll = async (): Promise<void> => {
    const viewers = await deps.records.recentViewers(deps.now());
    if (viewers.length === 0 || closed) return;
    const from = reading();
    await Promise.all(
      viewers.map((user) =>
        redrawFor(user, from).catch((error: unknown) => deps.logger.warn({ user, err: (error as Error).message }, 'home tab not redrawn')),
      ),
    );
  };

  const refresh = (): void => {
    if (settling !== undefined || closed) return;
    settling = setTimeout(() => {
      settling = undefined;
      redrawAll().catch((error: unknown) => deps.logger.warn({ err: (error as Error).message }, 'home tab not redrawn'));
    }, settleMs);
    settling.unref();
  };

  return {
    async opened(user) {
      try {
        await deps.records.opened(user, deps.now());
        const pending = waiting.get(user);
        if (pending !== undefined) clearTimeout(pending);
        waiting.delete(user);
        await send(user, await build(user));
      } catch (error) {
        deps.logger.warn({ user, err: (error as Error).message }, 'home tab not drawn');
      }
    },
    operationChanged(before, after) {
      if (visible(before) !== visible(after)) refresh();
    },
    gateFinished(report) {
      deps.records
        .recordGate({
          cluster: report.cluster,
          passed: report.passed,
          at: report.startedAt,
          stopReasons: report.stopReasons,
          talos: report.versions?.talos ?? [],
          kubernetes: report.versions?.kubernetes ?? [],
          ...(report.declared === undefined ? {} : { declared: report.declared }),
        })
        .then(refresh, (error: unknown) =>
          deps.logger.warn({ cluster: report.cluster, err: (error as Error).message }, 'health gate not recorded for the home tab'),
        );
    },
    close() {
      closed = true;
      if (settling !== undefined) clearTimeout(settling);
      for (const timer of waiting.values()) clearTimeout(timer);
      waiting.clear();
    },
  };
}
