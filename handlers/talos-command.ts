import type { App, SlashCommand } from '@slack/bolt';
import { COMMAND_HANDLERS } from './commands/index.ts';
import type { CommandDeps, CommandHandler, Outcome } from './commands/command-context.ts';
import { parseCommand, type Command } from './parse-command.ts';

export type { CommandDeps } from './commands/command-context.ts';

function dispatch(command: Command, slack: SlashCommand, deps: CommandDeps): Promise<Outcome> | Outcome {
  const handler = COMMAND_HANDLERS[command.kind] as CommandHandler<typeof command.kind> | undefined;
  if (!handler) return { reply: `\`/talos ${command.kind.replace('-', ' ')}\` is not available in this version of the bot. See \`/talos help\`.` };
  return handler(command as never, slack, deps);
}

/**
 * `/talos`: parse, authorize, ack at once with an ephemeral answer, then enqueue.
 * Nothing slow runs here; the jobs do the work and post to the channel.
 */
export function registerTalosCommand(app: App, deps: CommandDeps): void {
  app.command('/talos', async ({ command, ack, respond }) => {
    const log = deps.logger.child({ user: command.user_id, channel: command.channel_id });
    const parsed = parseCommand(command.text ?? '');
    if (!parsed.ok) {
      await ack({ text: parsed.reason });
      log.info({ reason: 'refused' }, 'command refused');
      return;
    }
    const outcome = await dispatch(parsed.command, command, deps);
    await ack({ text: outcome.reply });
    if (outcome.enqueue === undefined) return;
    try {
      // A redelivered command (Slack retry, second replica) is answered but never run twice.
      if (!(await deps.dedupe.claim(`cmd-${command.trigger_id}`))) return;
      await outcome.enqueue();
      log.info({ kind: parsed.command.kind }, 'command enqueued');
    } catch (error) {
      log.error({ err: (error as Error).message }, 'enqueue failed');
      await respond({ response_type: 'ephemeral', text: 'The bot could not queue that command (its Redis is unreachable). Nothing was started; try again in a minute.' });
    }
  });
}
