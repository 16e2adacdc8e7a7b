import { createAuthorizer } from '../../handlers/authorize.ts';
import { createHomeRecords } from '../home/home-records.ts';
import { createHomeTab, type HomeTab } from '../home/home-tab.ts';
import { createLifecycle, type Lifecycle } from '../../jobs/engine/lifecycle/lifecycle.ts';
import { KIND_POLICY, playbookOf, presentationOf } from '../../jobs/playbooks/index.ts';
import { errorText } from '../chat/error-text.ts';
import type { ClusterConfig } from '../config/inventory.ts';
import { createAudit, type Audit } from '../../jobs/engine/audit.ts';
import type { Operation } from '../ops/operation.ts';
import { createRecordExporter } from '../ops/record-export.ts';
import { createUserNames } from '../slack/slack-user-names.ts';
import { enqueueCancelled } from '../queue/jobs.ts';
import { createChannelMembers } from '../slack/slack-channel-members.ts';
import { createHomePublisher } from '../slack/slack-home.ts';
import type { Adapters } from './adapters.ts';
import type { Infrastructure } from './infrastructure.ts';
import type { OperationRecords } from './operation-records.ts';

/** Set once shutdown begins: operations then stop between steps (see `DrainCheckpoint`) and resume on a running replica. */
export interface Drain {
  draining(): boolean;
  begin(): void;
}

/** The services every operation goes through: its audit thread, the Home tab, the exported records, the drain. */
export interface OperationsCore {
  audit: Audit;
  home: HomeTab;
  drain: Drain;
  /** The one service that moves an operation between states on a person's request. */
  lifecycle: Lifecycle;
}

function createDrain(): Drain {
  const state = { draining: false };
  return {
    draining: () => state.draining,
    begin: () => {
      state.draining = true;
    },
  };
}

export function buildOperationsCore(
  infra: Infrastructure,
  records: OperationRecords,
  adapters: Pick<Adapters, 'chat' | 'slackClient' | 'access'>,
): OperationsCore {
  const { config, inventory, redis, scrubber, logger, clock } = infra;
  const { store, lock, events } = records;
  const now = (): Date => clock.now();
  // The Home shows a cluster's detail to its operators and approvers and to the members of its channel.
  const authorizer = createAuthorizer(adapters.slackClient);
  const home = createHomeTab({
    inventory,
    store,
    lock,
    records: createHomeRecords(redis),
    chat: adapters.chat,
    publisher: createHomePublisher(adapters.slackClient, scrubber),
    audience: {
      isListed: (user, allowed) => authorizer.isMember(user, allowed),
      channelMembers: createChannelMembers(adapters.slackClient),
      logger,
    },
    now,
    logger,
    presentations: presentationOf,
  });
  events.on((before, after) => home.operationChanged(before, after));
  // Every path that ends an operation writes it through the store, so its record is exported here, once, by the writer that ended it.
  if (config.recordExportDir !== undefined) {
    const exporter = createRecordExporter({
      dir: config.recordExportDir,
      now,
      clock,
      logger,
      displayName: createUserNames(adapters.slackClient),
    });
    events.on((before, after) => exporter.operationChanged(before, after));
  }
  const audit = createAudit(store, adapters.chat, { clock, logger, postLease: records.auditPostLease });
  // The messages of a cancelled operation are edited by a job, so the command or click that cancelled answers first.
  const onCancelled = (cancelled: Operation): Promise<void> => enqueueCancelled(infra.queues.ops, cancelled.id);
  const lifecycle = createLifecycle({
    inventory,
    store,
    lock,
    audit,
    chat: adapters.chat,
    opsQueue: infra.queues.ops,
    now,
    clock,
    planTtlMs: config.timeouts.planTtlMs,
    onCancelled,
    policy: KIND_POLICY,
    startRecheck: async (op: Operation, cluster: ClusterConfig) => {
      const playbook = playbookOf(op.kind);
      if (playbook?.startRecheck === undefined) return [];
      // Bounded like a gate's probe: the click is acked already, and its answer waits for this.
      const signal = AbortSignal.timeout(config.timeouts.probeMs * 2);
      try {
        return await adapters.access.withSession(cluster, signal, (session) => playbook.startRecheck!(session, op, signal));
      } catch (error) {
        return [`the bot could not ask the cluster again (${errorText(error)}), so it does not start what it cannot check; try again`];
      }
    },
    redisLost: () => infra.epoch.lostReason(),
    signOffs: records.signOffs,
    signOffMaxAgeMs: config.retention.signOffMs,
  });
  return { audit, home, drain: createDrain(), lifecycle };
}
