import type { Block } from './chat-port.ts';

/** The Home tab as Slack's `views.publish` takes it. */
export interface HomeView {
  type: 'home';
  callback_id: string;
  blocks: Block[];
}

/** Publishes a user's Home tab; the Slack adapter implements it. */
export interface HomePublisher {
  publish(user: string, view: HomeView): Promise<void>;
}
