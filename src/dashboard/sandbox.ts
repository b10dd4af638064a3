import { randomBytes } from "node:crypto";
import type { Pool } from "../db/pool.ts";
import { hashPassword, verifyPassword } from "./credentials.ts";
import { createActiveMember, findMemberByEmail } from "./members.ts";

export interface DemoOwner {
  email: string;
  password: string;
}

/**
 * The sandbox demo partner's OWNER (decisions section 18): the one kept in sandbox.json while it still
 * signs in to that partner, else one with a new generated password (first start, wiped database, a new
 * demo partner, or a lost sandbox.json). Sandbox only: `npm start` prints its email and password.
 */
export async function ensureDemoOwner(pool: Pool, partnerId: string, stored: DemoOwner | undefined): Promise<DemoOwner> {
  if (stored !== undefined) {
    const member = await findMemberByEmail(pool, stored.email);
    if (member?.partnerId === partnerId && member.passwordHash && (await verifyPassword(stored.password, member.passwordHash))) return stored;
  }
  // The email names the partner, so a new demo partner never collides with an earlier one's owner.
  const owner = { email: `owner-${partnerId.slice(4, 12)}@demo-partner.example`, password: randomBytes(12).toString("base64url") };
  const existing = await findMemberByEmail(pool, owner.email);
  if (existing === undefined) {
    await createActiveMember(pool, { partnerId, email: owner.email, role: "OWNER", password: owner.password });
  } else {
    await pool.query("UPDATE dashboard_members SET password_hash = $2, role = 'OWNER', accepted_at = coalesce(accepted_at, now()) WHERE id = $1", [
      existing.id,
      await hashPassword(owner.password),
    ]);
  }
  return owner;
}
