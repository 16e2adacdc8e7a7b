import { HELP_TEXT, type Command } from '../parse-command.ts';
import type { CommandHandler, ImmediateHandler } from './command-context.ts';
import { cancel } from './cancel.ts';
import { record } from './record.ts';
import { gates } from './gates.ts';
import { health } from './health.ts';
import { plan } from './plan.ts';
import { snapshot } from './snapshot.ts';
import { status } from './status.ts';
import { upgradeTalos } from './upgrade-talos.ts';
import { upgradeK8s } from './upgrade-k8s.ts';
import { rollback } from './rollback.ts';
import { remove } from './remove.ts';

type Immediate = { [K in Command['kind']]?: ImmediateHandler<K> };
type Deferred = { [K in Command['kind']]?: CommandHandler<K> };

/** Subcommands answered in the ack itself: their reply needs neither Redis nor Slack. */
export const IMMEDIATE_HANDLERS: Immediate = {
  help: () => ({ reply: HELP_TEXT }),
  health,
  gates,
};

/** Subcommands that authorize or read state first: acked empty, answered through the response_url. */
export const COMMAND_HANDLERS: Deferred = {
  plan,
  snapshot,
  'upgrade-talos': upgradeTalos,
  'upgrade-k8s': upgradeK8s,
  rollback,
  remove,
  status,
  cancel,
  record,
};
