import { prepared, type Queryable } from "../db/pool.ts";
import type { VerifiedIdentity } from "../domain/payer-identity.ts";

/**
 * The identity the KYC provider verified for a wallet's buyer (buyers.verified_*; each part null when
 * unknown, as for a wallet that never signed in): what a payment's ordering party is compared with
 * (decisions 8), and who the sandbox's simulated transfer is sent as. Read for every payment, so planned
 * once a session.
 */
export async function verifiedIdentity(db: Queryable, wallet: string | null): Promise<VerifiedIdentity> {
  const { rows } = await db.query<{ verified_name: string | null; verified_curp: string | null; verified_rfc: string | null }>(
    prepared("SELECT verified_name, verified_curp, verified_rfc FROM buyers WHERE wallet = lower($1)", [wallet ?? ""]),
  );
  return { name: rows[0]?.verified_name ?? null, curp: rows[0]?.verified_curp ?? null, rfc: rows[0]?.verified_rfc ?? null };
}
