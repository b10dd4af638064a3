// A TCP front that passes connections through to an upstream address and can fail them the two ways a
// long-lived connection dies in the world: `stall` leaves its connections open but carries nothing more either
// way (a NAT entry or a proxy gone silent, nothing to tell either end), `drop` cuts them. Connections made
// after either pass as before. Used for the indexer's WebSocket to the node (test/indexer/indexer.test.ts).
import net from "node:net";

export interface TcpFront {
  /** `ws://` (or any scheme's) URL of the front: the upstream URL with the front's host and port. */
  url: string;
  /** Connections made so far. */
  connections(): number;
  stall(): void;
  drop(): void;
  close(): Promise<void>;
}

export async function startTcpFront(upstreamUrl: string): Promise<TcpFront> {
  const url = new URL(upstreamUrl);
  const [upstreamHost, upstreamPort] = [url.hostname, Number(url.port)];
  const open = new Set<{ client: net.Socket; server: net.Socket; stalled: boolean }>();
  let made = 0;
  const front = net.createServer((client) => {
    made += 1;
    const server = net.connect(upstreamPort, upstreamHost);
    const pair = { client, server, stalled: false };
    open.add(pair);
    client.on("data", (chunk) => pair.stalled || server.write(chunk));
    server.on("data", (chunk) => pair.stalled || client.write(chunk));
    const end = () => {
      open.delete(pair);
      client.destroy();
      server.destroy();
    };
    for (const socket of [client, server]) {
      socket.on("close", end);
      socket.on("error", end);
    }
  });
  await new Promise<void>((resolve) => front.listen(0, "127.0.0.1", resolve));
  url.host = `127.0.0.1:${(front.address() as net.AddressInfo).port}`;
  return {
    url: url.toString().replace(/\/$/, ""),
    connections: () => made,
    stall: () => {
      for (const pair of open) pair.stalled = true;
    },
    drop: () => {
      for (const pair of open) pair.client.destroy();
    },
    close: async () => {
      for (const pair of open) pair.client.destroy();
      await new Promise<void>((resolve) => front.close(() => resolve()));
    },
  };
}
