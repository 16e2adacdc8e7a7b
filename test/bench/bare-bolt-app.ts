/**
 * The baseline of the ack benchmark: a Bolt app on the same emulator that does
 * nothing but ack `/talos`. Run as a child process, like the bot.
 */
import { App, LogLevel } from '@slack/bolt';

const app = new App({
  token: process.env.SLACK_BOT_TOKEN,
  appToken: process.env.SLACK_APP_TOKEN,
  socketMode: true,
  logLevel: LogLevel.ERROR,
  clientOptions: { slackApiUrl: process.env.SLACK_API_URL, retryConfig: { retries: 0 } },
});
app.command('/talos', async ({ ack }) => {
  await ack({ text: 'ok' });
});
await app.start();
process.stdout.write('bare app started\n');
process.once('SIGTERM', () => {
  void app.stop().then(() => process.exit(0));
});
