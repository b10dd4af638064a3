import net from "node:net";

/**
 * A TCP port free on 127.0.0.1 now: `preferred` if it is, else one the system picks. (Free when asked; the
 * caller binds it soon after, the usual race of this check accepted for local stacks and tests.)
 */
export async function freePort(preferred = 0): Promise<number> {
  const tryPort = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => {
        const { port: chosen } = server.address() as net.AddressInfo;
        server.close(() => resolve(chosen));
      });
    });
  return preferred === 0 ? tryPort(0) : tryPort(preferred).catch(() => tryPort(0));
}
