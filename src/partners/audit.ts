import type { Queryable } from "../db/pool.ts";
import { newId } from "../domain/ids.ts";
import { pageOf } from "../db/filters.ts";

// The audit log of every change to a partner (decisions section 18): by its members through the
// dashboard or by operators through the admin API. Entries are written by the functions that make the
// change (src/partners/partners.ts, src/webhooks/deliveries.ts, the member store), in the same statement
// or transaction, whichever route called them. `details` never holds a key or a secret.

export interface AuditActor {
  type: "MEMBER" | "OPERATOR";
  id: string;
  email: string | null;
}

/** Who makes a change and from which address: given by the route to the function that makes it. */
export interface AuditContext {
  actor: AuditActor;
  address: string | null;
}

/** Operators share one admin token: they are one actor. */
export const OPERATOR: AuditActor = { type: "OPERATOR", id: "admin", email: null };

export function operatorAudit(address: string): AuditContext {
  return { actor: OPERATOR, address };
}

export interface AuditEntry {
  id: string;
  action: string;
  actor: AuditActor;
  at: string;
  address: string | null;
  details: Record<string, unknown>;
}

/** Field names that may never be written into `details`, whatever a caller passes. */
const SECRET_FIELDS = new Set(["apiKey", "webhookSecret", "password", "token", "csrfToken", "inviteUrl", "apiKeyHash"]);

function scrub(details: Record<string, unknown>): Record<string, unknown> {
  const clean: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(details)) {
    if (SECRET_FIELDS.has(name)) continue;
    clean[name] = value !== null && typeof value === "object" && !Array.isArray(value) ? scrub(value as Record<string, unknown>) : value;
  }
  return clean;
}

export async function recordAudit(db: Queryable, partnerId: string, action: string, audit: AuditContext, details: Record<string, unknown> = {}): Promise<void> {
  await db.query(
    `INSERT INTO partner_audit_log (id, partner_id, action, actor_type, actor_id, actor_email, address, details)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    [newId("aud"), partnerId, action, audit.actor.type, audit.actor.id, audit.actor.email, audit.address, JSON.stringify(scrub(details))],
  );
}

/**
 * Makes a partner change and its audit entry one statement: `sql` is an `UPDATE partners ... RETURNING *`
 * (or an INSERT) over `values`; with `audit`, it runs inside a CTE that also inserts the entry for the
 * row it returned, so the change and its entry commit together or not at all, and an unknown partner
 * (no row) records nothing.
 */
export function withAudit(
  sql: string,
  values: unknown[],
  audit: AuditContext | undefined,
  action: string,
  details: Record<string, unknown> = {},
): { sql: string; values: unknown[] } {
  if (!audit) return { sql, values };
  const n = values.length;
  return {
    sql: `WITH changed AS (${sql}),
          logged AS (
            INSERT INTO partner_audit_log (id, partner_id, action, actor_type, actor_id, actor_email, address, details)
            SELECT $${n + 1}, changed.id, $${n + 2}, $${n + 3}, $${n + 4}, $${n + 5}, $${n + 6}, $${n + 7} FROM changed
          )
          SELECT * FROM changed`,
    values: [...values, newId("aud"), action, audit.actor.type, audit.actor.id, audit.actor.email, audit.address, JSON.stringify(scrub(details))],
  };
}

interface AuditRow {
  id: string;
  action: string;
  actor_type: "MEMBER" | "OPERATOR";
  actor_id: string;
  actor_email: string | null;
  address: string | null;
  details: Record<string, unknown>;
  at: Date;
  total: number;
}

/** A partner's audit log, newest first, as a page envelope of `entries`. */
export async function listAudit(db: Queryable, partnerId: string, page: { limit: number; offset: number }) {
  const { rows } = await db.query<AuditRow>(
    `SELECT *, (count(*) OVER ())::int AS total FROM partner_audit_log WHERE partner_id = $1
      ORDER BY at DESC, id DESC LIMIT $2 OFFSET $3`,
    [partnerId, page.limit, page.offset],
  );
  const total =
    rows[0]?.total ?? (await db.query<{ n: number }>("SELECT count(*)::int AS n FROM partner_audit_log WHERE partner_id = $1", [partnerId])).rows[0]!.n;
  const entries: AuditEntry[] = rows.map((row) => ({
    id: row.id,
    action: row.action,
    actor: { type: row.actor_type, id: row.actor_id, email: row.actor_email },
    at: row.at.toISOString(),
    address: row.address,
    details: row.details,
  }));
  return pageOf("entries", entries, total, page);
}
