import type { Playbook } from '../../jobs/engine/playbook.ts';
import { PLAYBOOKS, type OperationKind } from '../../jobs/playbooks/index.ts';
import type { Command } from '../parse-command.ts';
import { help } from './help.ts';
import type { CommandHandler, ImmediateHandler } from './command-context.ts';
import { cancel } from './cancel.ts';
import { record } from './record.ts';
import { gates } from './gates.ts';
import { health } from './health.ts';
import { status } from './status.ts';
import { doctor } from './doctor.ts';
import { requestPlaybook, type PlaybookRequest } from './playbook-command.ts';

type Immediate = { [K in Command['kind']]?: ImmediateHandler<K> };
type Deferred = { [K in Command['kind']]?: CommandHandler<K> };

/** Subcommands answered in the ack itself: their reply needs neither Redis nor Slack. */
export const IMMEDIATE_HANDLERS: Immediate = {
  help,
  health,
  gates,
};

/**
 * Every playbook's command, by the name it declares: each becomes a request for its operation. Built from
 * the registry passed in, so a playbook's line in it is all its command needs.
 */
export function playbookHandlers(playbooks: Readonly<Record<string, Playbook>>): Deferred {
  return Object.fromEntries(
    Object.entries(playbooks).map(([kind, { command }]) => {
      const handler: CommandHandler<Command['kind']> = (typed, slack, deps) =>
        // The registry's keys are its operation kinds.
        requestPlaybook(kind as OperationKind, command.request, typed as PlaybookRequest, slack, deps);
      return [command.name, handler];
    }),
  ) as Deferred;
}

/** Subcommands that authorize or read state first: acked empty, answered through the response_url. */
export const COMMAND_HANDLERS: Deferred = {
  ...playbookHandlers(PLAYBOOKS),
  status,
  cancel,
  record,
  doctor,
};
