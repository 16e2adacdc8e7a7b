import { createAuthorizer } from '../../handlers/authorize.ts';
import { createReadRateLimiter } from '../../handlers/read-rate-limit.ts';
import { registerCommandButtons } from '../../handlers/command-buttons.ts';
import { registerHomeActions } from '../../handlers/home-actions.ts';
import { registerHomeTab } from '../../handlers/home-tab.ts';
import { registerOperationActions } from '../../handlers/operation-actions.ts';
import { registerOverrideAction } from '../../handlers/override-action.ts';
import { registerSignOffAction } from '../../handlers/sign-off-action.ts';
import { createSlackApp, type SlackApp } from '../../handlers/slack-app.ts';
import { registerTalosCommand } from '../../handlers/talos-command.ts';
import type { OpsRoute } from '../http/ops-endpoints.ts';
import type { Metrics } from '../metrics/metrics.ts';
import { onSlackRateLimited } from '../slack/slack-chat.ts';
import type { DoctorFinding } from '../chat/doctor-report.ts';
import type { Adapters } from './adapters.ts';
import type { Infrastructure } from './infrastructure.ts';
import type { OperationRecords } from './operation-records.ts';
import type { OperationsCore } from './operations-core.ts';

export interface IntakeParts {
  infra: Infrastructure;
  records: OperationRecords;
  adapters: Adapters;
  core: OperationsCore;
  metrics: Metrics;
  /** `/healthz`, `/readyz` and `/metrics`, served beside Slack's events. */
  routes: OpsRoute[];
  /** `/talos doctor`'s checks. */
  doctor?: () => Promise<DoctorFinding[]>;
}

/** The Bolt app with `/talos`, the buttons and the Home tab: the only way commands come in. */
export function buildSlackIntake(parts: IntakeParts): SlackApp {
  const { infra, records, adapters, core, metrics } = parts;
  const { config, inventory, logger, clock, queues } = infra;
  const { store, lock, dedupe } = records;
  const { chat } = adapters;
  const now = (): Date => clock.now();
  const slack = createSlackApp(config, logger, parts.routes, {
    onDisconnect: (reason) => metrics.slackSocketDisconnects.inc({ reason }),
    onConnectFailure: (error) => metrics.slackSocketConnectFailures.inc({ error }),
    onConnectedChange: (connected) => metrics.slackSocketConnected.set(connected ? 1 : 0),
  });
  const { app } = slack;
  onSlackRateLimited(app.client, (method) => metrics.slackRateLimited.inc({ method }));
  const authorizer = createAuthorizer(adapters.slackClient, {
    onLookupFailure: (group, error) => {
      metrics.slackUsergroupLookupFailures.inc({ error });
      logger.warn({ group, err: error }, 'user-group membership could not be read from Slack; the user was asked to try again');
    },
  });
  const { lifecycle } = core;
  const readLimiter = createReadRateLimiter({
    perMinute: config.readCommandsPerMinute,
    inventory,
    now: () => clock.now().getTime(),
    onLimited: (command) => metrics.commandsRateLimited.inc({ command }),
  });
  const commandDeps = {
    inventory,
    readQueue: queues.read,
    store,
    lock,
    dedupe,
    authorizer,
    chat,
    logger,
    now,
    lifecycle,
    readLimiter,
    signals: records.signals,
    observedEstates: records.observedEstates,
    redisLost: () => infra.epoch.lostReason(),
  };
  const guidedDeps = { ...commandDeps, factory: adapters.factory, doctor: parts.doctor };
  registerTalosCommand(app, guidedDeps);
  registerCommandButtons(app, commandDeps);
  const actionDeps = { inventory, store, authorizer, logger, lifecycle, redisLost: () => infra.epoch.lostReason() };
  registerOperationActions(app, actionDeps);
  registerOverrideAction(app, actionDeps);
  registerSignOffAction(app, actionDeps);
  registerHomeTab(app, core.home);
  registerHomeActions(app, guidedDeps);
  app.error(async (error) => {
    logger.error({ err: error.message, code: error.code }, 'slack listener error');
  });
  return slack;
}
