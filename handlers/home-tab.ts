import type { App } from '@slack/bolt';
import type { HomeTab } from '../src/home/home-tab.ts';

/**
 * `app_home_opened`: a user opened the bot's Home tab; it is drawn for them from what the bot
 * recorded (Redis), never by asking a cluster. Bolt acks events before listeners run.
 */
export function registerHomeTab(app: App, home: HomeTab): void {
  app.event('app_home_opened', async ({ event }) => {
    if (event.tab !== 'home') return;
    await home.opened(event.user);
  });
}
