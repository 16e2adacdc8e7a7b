import { HELP_TEXT, type Command } from '../parse-command.ts';
import type { CommandHandler } from './command-context.ts';
import { cancel } from './cancel.ts';
import { health } from './health.ts';
import { snapshot } from './snapshot.ts';
import { status } from './status.ts';
import { upgradeTalos } from './upgrade-talos.ts';

type Handlers = { [K in Command['kind']]?: CommandHandler<K> };

/** One handler per subcommand; each file owns its parsing-to-job step. */
export const COMMAND_HANDLERS: Handlers = {
  help: () => ({ reply: HELP_TEXT }),
  health,
  snapshot,
  'upgrade-talos': upgradeTalos,
  status,
  cancel,
};
