import type { App, SlashCommand } from '@slack/bolt';
import type { Logger } from '../src/log/logger.ts';
import type { Block } from '../src/port/chat-port.ts';
import { COMMAND_HANDLERS, IMMEDIATE_HANDLERS } from './commands/index.ts';
import type { CommandDeps, CommandHandler, ImmediateHandler, Outcome } from './commands/command-context.ts';
import { MembershipUnknown } from './authorize.ts';
import { parseCommand, type Command } from './parse-command.ts';
import { PLAYBOOK_COMMANDS } from '../jobs/playbooks/index.ts';
import { redisLostRefusal } from '../src/chat/redis-lost.ts';
import { type GuidedDeps, openGuided, registerGuidedSubmissions } from './guided-commands.ts';

export type { CommandDeps } from './commands/command-context.ts';

/** Answers the person who typed or clicked, privately; blocks when the answer has buttons. */
type Say = (text: string, blocks?: Block[]) => Promise<void>;

const ENQUEUE_FAILED = 'The bot could not queue that command (its Redis is unreachable). Nothing was started; try again in a minute.';

/**
 * A command's text run for `slack.user_id` in `slack.channel_id` as `/talos` runs it (parsed,
 * authorized, queued once), for a modal's submission; its reply, or why it could not run.
 */
export async function runTyped(text: string, slack: SlashCommand, deps: CommandDeps): Promise<Outcome> {
  const log = deps.logger.child({ user: slack.user_id, channel: slack.channel_id });
  const parsed = parseCommand(text);
  if (!parsed.ok) return { reply: parsed.reason };
  const lost = redisLostRefusalOf(parsed.command, deps);
  if (lost !== undefined) return { reply: lost };
  if (parsed.command.kind === 'guided') return { reply: 'Name the version or node. Nothing was started.' };
  let outcome: Outcome;
  try {
    outcome = immediateOutcome(parsed.command, slack, deps) ?? (await deferredOutcome(parsed.command, slack, deps));
  } catch (error) {
    if (error instanceof MembershipUnknown) return { reply: error.message };
    throw error;
  }
  return { reply: (await enqueueOnce(outcome, parsed.command, slack, deps, log)) ?? outcome.reply };
}

/**
 * Why a command that would change something is refused at once: Redis lost the bot's data, so nothing it
 * holds may be acted on. Read-only commands still answer. Undefined when the command may go on.
 */
function redisLostRefusalOf(command: Command, deps: CommandDeps): string | undefined {
  const changes = command.kind === 'cancel' || command.kind === 'guided' || PLAYBOOK_COMMANDS.some((c) => c.name === command.kind);
  const lost = changes ? deps.redisLost?.() : undefined;
  return lost === undefined ? undefined : redisLostRefusal(lost);
}

/** The command as the operator typed it (`/talos upgrade talos`), for replies about the command itself. */
function commandName(command: Command): string {
  const declared = PLAYBOOK_COMMANDS.find((c) => c.name === command.kind);
  return `/talos ${declared === undefined ? command.kind : declared.words.join(' ')}`;
}

/** A playbook command's example as its declaration gives it (`/talos upgrade talos v1.13.9`), for a form that could not open. */
function exampleOf(kind: string): string {
  return PLAYBOOK_COMMANDS.find((c) => c.name === kind)?.example ?? '/talos help';
}

/** The answer of a subcommand that needs no I/O; undefined when the subcommand must read Redis or Slack first. */
function immediateOutcome(command: Command, slack: SlashCommand, deps: CommandDeps): Outcome | undefined {
  const immediate = IMMEDIATE_HANDLERS[command.kind] as ImmediateHandler<typeof command.kind> | undefined;
  if (immediate) return immediate(command as never, slack, deps);
  if (COMMAND_HANDLERS[command.kind] === undefined)
    return { reply: `\`${commandName(command)}\` is not available in this version of the bot. See \`/talos help\`.` };
  return undefined;
}

function deferredOutcome(command: Command, slack: SlashCommand, deps: CommandDeps): Promise<Outcome> {
  const handler = COMMAND_HANDLERS[command.kind] as CommandHandler<typeof command.kind>;
  return handler(command as never, slack, deps);
}

/** Claims the delivery and enqueues the outcome's job; returns what to tell the user instead of the reply when queueing failed. */
async function enqueueOnce(
  outcome: Outcome,
  command: Command,
  slack: SlashCommand,
  deps: CommandDeps,
  log: Logger,
): Promise<string | undefined> {
  if (outcome.enqueue === undefined) return undefined;
  try {
    // A redelivered command (Slack retry, second replica) is answered but never run twice.
    if (!(await deps.dedupe.claim(`cmd-${slack.trigger_id}`))) return undefined;
    await outcome.enqueue();
    log.info({ kind: command.kind }, 'command enqueued');
    return undefined;
  } catch (error) {
    log.error({ err: errorText(error) }, 'enqueue failed');
    return ENQUEUE_FAILED;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * `/talos`: acked before any network call, so Slack's 3-second deadline holds however slowly
 * Slack or Redis answer. A parse error, `help`, and the read-only gates answer in the ack itself;
 * every other subcommand is acked empty, then authorizes, reads what it needs and enqueues, and
 * its reply arrives as an ephemeral message through the command's response_url.
 * Nothing slow runs here; the jobs do the work and post to the channel.
 */
export function registerTalosCommand(app: App, deps: GuidedDeps): void {
  registerGuidedSubmissions(app, deps, (text, slack) => runTyped(text, slack, deps));
  app.command('/talos', async ({ command, ack, respond, client }) => {
    const log = deps.logger.child({ user: command.user_id, channel: command.channel_id });
    const parsed = parseCommand(command.text ?? '');
    if (!parsed.ok) {
      await ack({ text: parsed.reason });
      log.info({ reason: 'refused' }, 'command refused');
      return;
    }
    // Refused in the ack: the epoch's state is kept in memory, so no Redis or Slack call comes first.
    const lost = redisLostRefusalOf(parsed.command, deps);
    if (lost !== undefined) {
      await ack({ text: lost });
      log.warn({ kind: parsed.command.kind, reason: 'redis-lost' }, 'command refused');
      return;
    }
    // Refused in the ack: the limit is kept in memory, so no Redis or Slack call comes first.
    const limited = deps.readLimiter?.refusal(parsed.command, command);
    if (limited !== undefined) {
      await ack({ text: limited });
      log.info({ kind: parsed.command.kind, reason: 'rate-limited' }, 'command refused');
      return;
    }
    // A reply that cannot be delivered (the response_url expired or was used up) is only logged: the user can run the command again.
    const say = (text: string, blocks?: Block[]): Promise<void> =>
      respond({ response_type: 'ephemeral', text, ...(blocks ? { blocks } : {}) }).then(
        () => undefined,
        (error: unknown) => log.warn({ kind: parsed.command.kind, err: errorText(error) }, 'command reply not delivered'),
      );

    if (parsed.command.kind === 'guided') {
      // Acked first: the modal opens right after, within the trigger's 3 s.
      await ack();
      try {
        const refusal = await openGuided(client, command.trigger_id, command.user_id, command.channel_id, parsed.command.playbook, deps);
        if (refusal !== undefined) await say(refusal);
      } catch (error) {
        log.warn({ kind: parsed.command.playbook, err: errorText(error) }, 'guided form not opened');
        await say(
          `The form could not open (${errorText(error)}). Nothing was started; type the command in full instead, e.g. \`${exampleOf(parsed.command.playbook)}\`.`,
        );
      }
      return;
    }

    const immediate = immediateOutcome(parsed.command, command, deps);
    if (immediate !== undefined) {
      await ack({ text: immediate.reply });
      const failed = await enqueueOnce(immediate, parsed.command, command, deps, log);
      if (failed !== undefined) await say(failed);
      return;
    }

    // Empty: Slack shows nothing for an empty ack, and the reply follows within moments; a
    // placeholder text would stay on screen as a second ephemeral beside it.
    await ack();
    await runDeferred(parsed.command, command, deps, log, say);
  });
}

/**
 * A subcommand as a button runs it (`/talos health` from [Run the gate again], `/talos cancel` from
 * `/talos status`): the same handler, the same read limit and the same once-only enqueue as typed.
 * `slack` carries who clicked, where, and an id that is the same for a redelivered click.
 */
export async function runAsCommand(command: Command, slack: SlashCommand, deps: CommandDeps, say: Say): Promise<void> {
  const log = deps.logger.child({ user: slack.user_id, channel: slack.channel_id, button: command.kind });
  const limited = deps.readLimiter?.refusal(command, slack);
  if (limited !== undefined) {
    log.info({ kind: command.kind, reason: 'rate-limited' }, 'command refused');
    return say(limited);
  }
  const immediate = immediateOutcome(command, slack, deps);
  if (immediate !== undefined) return say((await enqueueOnce(immediate, command, slack, deps, log)) ?? immediate.reply);
  await runDeferred(command, slack, deps, log, say);
}

async function runDeferred(command: Command, slack: SlashCommand, deps: CommandDeps, log: Logger, say: Say) {
  let outcome: Outcome;
  try {
    outcome = await deferredOutcome(command, slack, deps);
  } catch (error) {
    if (error instanceof MembershipUnknown) {
      await say(error.message);
      return;
    }
    log.error({ kind: command.kind, err: errorText(error) }, 'command failed');
    await say(
      `The bot could not check \`${commandName(command)}\`: Slack or its Redis did not answer (its log says which). Nothing was started; see \`/talos status\` for where things stand, and run the command again in a minute.`,
    );
    return;
  }
  const failed = await enqueueOnce(outcome, command, slack, deps, log);
  await (failed !== undefined ? say(failed) : say(outcome.reply, outcome.blocks));
}
