import type { Queryable } from "../db/pool.ts";
import { pruneExpiredInvitations } from "./members.ts";
import { pruneSessionsAndFailures } from "./sessions.ts";

/**
 * The dashboard's hourly clean-up: sessions past their 12 hours, sign-in failure windows over, and
 * invitations expired more than EXPIRED_INVITATION_DAYS ago (until then they answer 410).
 */
export async function pruneDashboard(db: Queryable): Promise<number> {
  return (await pruneSessionsAndFailures(db)) + (await pruneExpiredInvitations(db));
}
