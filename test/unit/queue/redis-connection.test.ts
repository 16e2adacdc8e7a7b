import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { redisOptions } from '../../../src/queue/redis-connection.ts';

/** What ioredis makes of a REDIS_URL with the bot's options, without connecting. */
function connectionOptions(url: string) {
  const redis = new Redis(url, { ...redisOptions(url), lazyConnect: true });
  try {
    const { host, port, username, password, db, tls, maxRetriesPerRequest } = redis.options;
    return { host, port, username, password, db, tls, maxRetriesPerRequest };
  } finally {
    redis.disconnect();
  }
}

describe('the Redis connection options', () => {
  it('connect in plain TCP for redis://, with the password and database of the URL', () => {
    expect(connectionOptions('redis://:s3cret@redis:6379/2')).toEqual({
      host: 'redis',
      port: 6379,
      username: '',
      password: 's3cret',
      db: 2,
      tls: undefined,
      maxRetriesPerRequest: null,
    });
  });

  it('connect over TLS for rediss://, with the host name as SNI and an ACL user', () => {
    expect(connectionOptions('rediss://talos-chatops:s%40cret@redis.example.org:6380')).toEqual({
      host: 'redis.example.org',
      port: 6380,
      username: 'talos-chatops',
      password: 's@cret',
      db: 0,
      tls: { servername: 'redis.example.org' },
      maxRetriesPerRequest: null,
    });
  });

  it('connect over TLS to an address without sending it as SNI, which must be a host name', () => {
    expect(connectionOptions('rediss://:pw@10.0.40.5:6380').tls).toEqual({});
    expect(connectionOptions('rediss://:pw@[fd00::5]:6380').tls).toEqual({});
  });

  it("never give up on a command, as BullMQ's workers need", () => {
    expect(redisOptions('redis://127.0.0.1:6379').maxRetriesPerRequest).toBeNull();
    expect(redisOptions('rediss://127.0.0.1:6379').maxRetriesPerRequest).toBeNull();
  });
});
