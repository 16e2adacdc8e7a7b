// The Home tab's publisher on Slack's Web API: `views.publish` needs no scope beyond the bot
// token, only the app's Home tab (features.app_home.home_tab_enabled in the manifest).
import type { WebClient } from '@slack/web-api';
import type { HomePublisher } from '../port/home-publisher.ts';
import { scrubValues, type SecretScrubber } from '../log/secret-scrubber.ts';

export function createHomePublisher(client: WebClient, scrubber: SecretScrubber): HomePublisher {
  return {
    async publish(user, view) {
      // Stop reasons quote cluster output: everything that leaves for Slack passes the scrubber.
      const blocks = scrubValues(view.blocks, (s) => scrubber.scrub(s)) as unknown as Parameters<
        WebClient['views']['publish']
      >[0]['view']['blocks'];
      await client.views.publish({ user_id: user, view: { type: 'home', callback_id: view.callback_id, blocks } });
    },
  };
}
