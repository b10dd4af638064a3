import pg from "pg";

const RETRY_MS = 1_000;

export interface ChannelListenerOptions {
  /** Where the listener connects: LISTEN needs a session of its own, not a pooled one. */
  databaseUrl: string;
  channel: string;
  applicationName: string;
  onNotification(payload: string): void;
  /** LISTEN took effect, at start and after every reconnection: what was notified before it was not heard. */
  onListening(): void;
  /** The session was lost: notifications may be missed until onListening. */
  onLost?(): void;
  logger?: { warn(details: object, message: string): void };
}

export interface ChannelListener {
  /** Resolves once the listener is listening (or has failed once and is retrying). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

/**
 * LISTEN on one channel over a session of its own, connected again a second after it is lost (PostgreSQL
 * restarted, the network dropped) for as long as the listener runs.
 */
export function listenTo(options: ChannelListenerOptions): ChannelListener {
  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  async function listen(): Promise<void> {
    const session = new pg.Client({ connectionString: options.databaseUrl, application_name: options.applicationName });
    const lost = (error?: unknown) => {
      if (client !== session) return;
      client = undefined;
      options.onLost?.();
      if (!stopped) {
        options.logger?.warn({ err: error, channel: options.channel }, "notification listener lost; retrying");
        retry = setTimeout(() => void listen(), RETRY_MS);
        retry.unref();
      }
      session.end().catch(() => undefined);
    };
    client = session;
    session.on("notification", (message) => {
      if (message.channel === options.channel) options.onNotification(message.payload ?? "");
    });
    session.on("error", lost);
    session.on("end", () => lost());
    try {
      await session.connect();
      await session.query(`LISTEN ${pg.escapeIdentifier(options.channel)}`);
      options.onListening();
    } catch (error) {
      lost(error);
    }
    markReady();
  }
  void listen();

  return {
    ready,
    async stop() {
      stopped = true;
      clearTimeout(retry);
      const session = client;
      client = undefined;
      await session?.end().catch(() => undefined);
    },
  };
}
