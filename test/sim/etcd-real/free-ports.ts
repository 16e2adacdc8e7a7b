/**
 * Loopback ports nobody listens on, found by asking the kernel for them (port 0). Every member gets
 * its own pair so that test files running in parallel never meet on a fixed port. The listeners are
 * all held open until every port is known, so one call never hands out the same port twice.
 */
import { createServer, type Server } from 'node:net';

export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('a loopback listener has no port');
      ports.push(address.port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}
