/**
 * The baseline of the ack benchmark: a Bolt app on the same emulator that does
 * nothing but ack `/talos`. Run as a child process, like the bot.
 */
import { App, LogLevel } from '@slack/bolt';

// Offline, it is a bystander: a Node process that only keeps its event loop turning, so its delay
// is what the machine's load alone does to any process, measured beside the bot in the same window.
if (process.env['BARE_OFFLINE'] === '1') {
  setInterval(() => undefined, 1000);
  process.stdout.write('bare app started\n');
  process.once('SIGTERM', () => process.exit(0));
} else {
  await startOnline();
}

async function startOnline(): Promise<void> {
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
}
