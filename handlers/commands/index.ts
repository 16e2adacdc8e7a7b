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

/** Every playbook's command, by the name it declares: each becomes a request for its operation. */
const PLAYBOOK_HANDLERS = Object.fromEntries(
  (Object.keys(PLAYBOOKS) as OperationKind[]).map((kind) => {
    const { request, name } = PLAYBOOKS[kind].command;
    const handler: CommandHandler<Command['kind']> = (command, slack, deps) =>
      requestPlaybook(kind, request, command as PlaybookRequest, slack, deps);
    return [name, handler];
  }),
) as Deferred;

/** Subcommands that authorize or read state first: acked empty, answered through the response_url. */
export const COMMAND_HANDLERS: Deferred = {
  ...PLAYBOOK_HANDLERS,
  status,
  cancel,
  record,
  doctor,
};
