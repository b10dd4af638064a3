import pg from "pg";
import type { Queryable } from "../db/pool.ts";
import { findPartnerByKeyHash, type PartnerWithSecrets } from "./partners.ts";

/** The channel the `partners` trigger notifies, with the changed partner's id, in the changing transaction. */
export const PARTNER_CHANGED_CHANNEL = "partner_changed";

/**
 * How long a cached partner is trusted without hearing of a change: the floor when the listener is down
 * or a notification is lost (docs/security.md, "Credential cache and rate limits").
 */
export const CREDENTIAL_TTL_MS = 5_000;

const LISTENER_RETRY_MS = 1_000;

export interface PartnerCredentials {
  /**
   * The partner holding the key of this digest (`apiKeyDigest`), undefined for an unknown key: at once when
   * it is in memory (no promise to wait for on the partner API's every request), else once read.
   */
  find(keyDigest: string): PartnerWithSecrets | undefined | Promise<PartnerWithSecrets | undefined>;
  /** Drops what is cached of a partner: called by this instance's writers right after a change commits. */
  forget(partnerId: string): void;
  /** Resolves once the listener is listening (or has failed once and is retrying). */
  ready: Promise<void>;
  stop(): Promise<void>;
}

export interface PartnerCredentialOptions {
  db: Queryable;
  /** Where the listener connects (its own session: LISTEN needs one that is not shared). */
  databaseUrl: string;
  ttlMs?: number;
  now?: () => number;
  logger?: { warn(details: object, message: string): void };
}

interface Entry {
  partnerId: string;
  loadedAt: number;
  partner: PartnerWithSecrets;
}

/**
 * Partners by API key hash, in memory. A change to a partner (key rotation, status, KYB, allow-list,
 * limits, tier, anything in its row) is forgotten at once in the instance that made it (`forget`), and in
 * every instance through PostgreSQL LISTEN/NOTIFY: a trigger on `partners` notifies in the changing
 * transaction, so every writer (admin API, dashboard, CLI, psql) is covered. If the listener's session
 * drops, everything cached is forgotten and entries older than the TTL are read again.
 *
 * Only keys that belong to a partner are kept (at most one per partner: a rotated key's entry is dropped);
 * an unknown key is looked up every time and cached never, so guessing keys cannot grow memory, and such
 * requests are limited per client address before they reach here often.
 */
export function createPartnerCredentials(options: PartnerCredentialOptions): PartnerCredentials {
  const ttlMs = options.ttlMs ?? CREDENTIAL_TTL_MS;
  const now = options.now ?? Date.now;
  const byKey = new Map<string, Entry>();
  const keyOf = new Map<string, string>();
  /** Lookups in flight, shared by concurrent requests with the same key. */
  const loading = new Map<string, Promise<PartnerWithSecrets | undefined>>();
  /** Bumped by every invalidation: a lookup that started before one does not cache what it read. */
  let generation = 0;

  function forget(partnerId: string): void {
    generation += 1;
    const key = keyOf.get(partnerId);
    if (key !== undefined) byKey.delete(key);
    keyOf.delete(partnerId);
    // A request arriving from now on must not join a lookup that may have read the row before the change.
    loading.clear();
  }

  function forgetAll(): void {
    generation += 1;
    byKey.clear();
    keyOf.clear();
    loading.clear();
  }

  async function load(key: string): Promise<PartnerWithSecrets | undefined> {
    const startedAt = generation;
    const partner = await findPartnerByKeyHash(options.db, Buffer.from(key, "hex"));
    if (partner && generation === startedAt) {
      const previous = keyOf.get(partner.id);
      if (previous !== undefined && previous !== key) byKey.delete(previous);
      byKey.set(key, { partnerId: partner.id, loadedAt: now(), partner });
      keyOf.set(partner.id, key);
    }
    return partner;
  }

  let stopped = false;
  let client: pg.Client | undefined;
  let retry: NodeJS.Timeout | undefined;
  let markReady: () => void = () => undefined;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  async function listen(): Promise<void> {
    const session = new pg.Client({ connectionString: options.databaseUrl, application_name: "offramp-partner-changes" });
    const lost = (error?: unknown) => {
      if (client !== session) return;
      client = undefined;
      // Notifications may have been missed while no session listened.
      forgetAll();
      if (!stopped) {
        options.logger?.warn({ err: error }, "partner change listener lost; retrying");
        retry = setTimeout(() => void listen(), LISTENER_RETRY_MS);
        retry.unref();
      }
      session.end().catch(() => undefined);
    };
    client = session;
    session.on("notification", (message) => {
      if (message.channel === PARTNER_CHANGED_CHANNEL && message.payload) forget(message.payload);
    });
    session.on("error", lost);
    session.on("end", () => lost());
    try {
      await session.connect();
      await session.query(`LISTEN ${PARTNER_CHANGED_CHANNEL}`);
      // Changes made before LISTEN took effect were not heard.
      forgetAll();
    } catch (error) {
      lost(error);
    }
    markReady();
  }
  void listen();

  return {
    find(key) {
      const entry = byKey.get(key);
      if (entry && now() - entry.loadedAt < ttlMs) return entry.partner;
      let pending = loading.get(key);
      if (!pending) {
        const started = load(key).finally(() => {
          if (loading.get(key) === started) loading.delete(key);
        });
        loading.set(key, started);
        pending = started;
      }
      return pending;
    },
    forget,
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
