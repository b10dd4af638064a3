import { withTransaction, type Pool, type Queryable } from "../db/pool.ts";
import { ForbiddenError, InvitationExpiredError, LastOwnerError, MemberExistsError, NotFoundError, UnauthorizedError } from "../domain/errors.ts";
import { newId } from "../domain/ids.ts";
import { recordAudit, type AuditContext } from "../partners/audit.ts";
import { generateToken, hashPassword, hashToken } from "./credentials.ts";

// A partner's dashboard members (decisions section 18): invited by operators (admin API) or by the
// partner's owners, each invitation valid 72 hours and spent when accepted; emails unique across the
// service; at least one OWNER stays.

export const ROLES = ["OWNER", "DEVELOPER", "VIEWER"] as const;
export type Role = (typeof ROLES)[number];
export const INVITATION_HOURS = 72;

export interface Member {
  id: string;
  partnerId: string;
  email: string;
  role: Role;
  status: "INVITED" | "ACTIVE";
  createdAt: Date;
  acceptedAt: Date | null;
}

export interface MemberWithPassword extends Member {
  passwordHash: string | null;
}

interface MemberRow {
  id: string;
  partner_id: string;
  email: string;
  role: Role;
  password_hash: string | null;
  invite_expires_at: Date | null;
  accepted_at: Date | null;
  created_at: Date;
}

function fromRow(row: MemberRow): MemberWithPassword {
  return {
    id: row.id,
    partnerId: row.partner_id,
    email: row.email,
    role: row.role,
    status: row.password_hash === null ? "INVITED" : "ACTIVE",
    createdAt: row.created_at,
    acceptedAt: row.accepted_at,
    passwordHash: row.password_hash,
  };
}

/** A member as the dashboard and the admin API show it (never a password hash or token). */
export function memberView(member: Member) {
  return {
    id: member.id,
    email: member.email,
    role: member.role,
    status: member.status,
    createdAt: member.createdAt.toISOString(),
    acceptedAt: member.acceptedAt?.toISOString() ?? null,
  };
}

const UNIQUE_VIOLATION = "23505";

/** Normalised for storage and lookup; uniqueness is also enforced on lower(email) in the database. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

async function insertMember(
  tx: Queryable,
  input: { partnerId: string; email: string; role: Role; passwordHash: string | null; inviteTokenHash: Buffer | null; inviteExpiresAt: Date | null },
): Promise<MemberWithPassword> {
  try {
    const { rows } = await tx.query<MemberRow>(
      `INSERT INTO dashboard_members (id, partner_id, email, role, password_hash, invite_token_hash, invite_expires_at, accepted_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, CASE WHEN $5::text IS NULL THEN NULL ELSE now() END) RETURNING *`,
      [newId("mbr"), input.partnerId, normaliseEmail(input.email), input.role, input.passwordHash, input.inviteTokenHash, input.inviteExpiresAt],
    );
    return fromRow(rows[0]!);
  } catch (error) {
    if ((error as { code?: string }).code === UNIQUE_VIOLATION) throw new MemberExistsError(`A member with email ${normaliseEmail(input.email)} already exists`);
    throw error;
  }
}

/**
 * Invites a member: the returned token is the invitation (only its hash is stored), shown this once in
 * the invitation URL. Unknown partner: NOT_FOUND; an email already in use anywhere: MEMBER_EXISTS.
 */
export async function inviteMember(pool: Pool, input: { partnerId: string; email: string; role: Role }, audit: AuditContext): Promise<{ member: Member; token: string }> {
  const token = generateToken();
  const member = await withTransaction(pool, async (tx) => {
    await lockMembersFor(tx, input.partnerId, audit);
    const created = await insertMember(tx, {
      ...input,
      passwordHash: null,
      inviteTokenHash: hashToken(token),
      inviteExpiresAt: new Date(Date.now() + INVITATION_HOURS * 3600_000),
    });
    await recordAudit(tx, input.partnerId, "member.invited", audit, { memberId: created.id, email: created.email, role: created.role });
    return created;
  });
  return { member, token };
}

/** An active member with a password at once (the sandbox's demo owner). */
export async function createActiveMember(pool: Pool, input: { partnerId: string; email: string; role: Role; password: string }): Promise<Member> {
  const passwordHash = await hashPassword(input.password);
  return withTransaction(pool, (tx) => insertMember(tx, { ...input, passwordHash, inviteTokenHash: null, inviteExpiresAt: null }));
}

/** Unknown or already used: NOT_FOUND; past 72 hours: INVITATION_EXPIRED. */
function invitationProblem(row: MemberRow | undefined, now: number): Error | undefined {
  if (!row || row.password_hash !== null) return new NotFoundError("The invitation does not exist or was already used");
  if (!row.invite_expires_at || row.invite_expires_at.getTime() <= now) return new InvitationExpiredError();
  return undefined;
}

/**
 * Accepts an invitation: sets the password and spends the token. The invitation is looked up first and
 * `judge` told what is wrong with it (undefined when nothing): it throws to stop (the throttle counts
 * the failure, or refuses). Only then is the password hashed, so a made-up or stale token costs no hash.
 * Unknown or already used (also when spent meanwhile): NOT_FOUND; past 72 hours: INVITATION_EXPIRED.
 */
export async function acceptInvitation(
  pool: Pool,
  input: { token: string; password: string; address: string },
  judge: (problem: Error | undefined) => Promise<void>,
): Promise<Member> {
  const tokenHash = hashToken(input.token);
  const { rows: found } = await pool.query<MemberRow>("SELECT * FROM dashboard_members WHERE invite_token_hash = $1", [tokenHash]);
  await judge(invitationProblem(found[0], Date.now()));
  const passwordHash = await hashPassword(input.password);
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<MemberRow>("SELECT * FROM dashboard_members WHERE invite_token_hash = $1 FOR UPDATE", [tokenHash]);
    const problem = invitationProblem(rows[0], Date.now());
    if (problem) throw problem;
    const { rows: updated } = await tx.query<MemberRow>(
      "UPDATE dashboard_members SET password_hash = $2, accepted_at = now(), invite_token_hash = NULL, invite_expires_at = NULL WHERE id = $1 RETURNING *",
      [rows[0]!.id, passwordHash],
    );
    const member = fromRow(updated[0]!);
    await recordAudit(tx, member.partnerId, "member.joined", { actor: { type: "MEMBER", id: member.id, email: member.email }, address: input.address }, { memberId: member.id, role: member.role });
    return member;
  });
}

/** Days an expired invitation is kept (answering 410 INVITATION_EXPIRED) before it is removed and its email is free again. */
export const EXPIRED_INVITATION_DAYS = 7;

/** Removes invitations expired more than EXPIRED_INVITATION_DAYS ago (a periodic maintenance task). */
export async function pruneExpiredInvitations(db: Queryable): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM dashboard_members WHERE password_hash IS NULL AND invite_expires_at < now() - make_interval(days => $1)`,
    [EXPIRED_INVITATION_DAYS],
  );
  return rowCount ?? 0;
}

export async function findMemberByEmail(db: Queryable, email: string): Promise<MemberWithPassword | undefined> {
  const { rows } = await db.query<MemberRow>("SELECT * FROM dashboard_members WHERE lower(email) = $1", [normaliseEmail(email)]);
  return rows[0] ? fromRow(rows[0]) : undefined;
}

export async function listMembers(db: Queryable, partnerId: string): Promise<Member[]> {
  const { rows } = await db.query<MemberRow>("SELECT * FROM dashboard_members WHERE partner_id = $1 ORDER BY created_at, id", [partnerId]);
  return rows.map(fromRow);
}

/**
 * Locks the partner's members (through the partner row, so concurrent member changes queue) and, when a
 * member acts, reads it again under that lock: an owner removed (401 UNAUTHORIZED) or demoted (403
 * FORBIDDEN) while its request waited changes nothing, so it cannot race its own removal to remove
 * the others or invite an accomplice. An unknown partner: NOT_FOUND.
 */
async function lockMembersFor(tx: Queryable, partnerId: string, audit: AuditContext): Promise<void> {
  const { rowCount } = await tx.query("SELECT 1 FROM partners WHERE id = $1 FOR NO KEY UPDATE", [partnerId]);
  if (!rowCount) throw new NotFoundError(`Partner ${partnerId} does not exist`);
  if (audit.actor.type !== "MEMBER") return;
  const { rows } = await tx.query<{ role: Role }>("SELECT role FROM dashboard_members WHERE id = $1 AND partner_id = $2 AND password_hash IS NOT NULL", [
    audit.actor.id,
    partnerId,
  ]);
  if (!rows[0]) throw new UnauthorizedError("A valid dashboard session is required: sign in");
  if (rows[0].role !== "OWNER") throw new ForbiddenError("This needs the OWNER role");
}

/**
 * Locks the partner's members (`lockMembersFor`) and returns the one changed; another partner's member
 * is NOT_FOUND. Then refuses to leave the partner without an active
 * OWNER (LAST_OWNER) when `leavesOwner` says the change takes `member` out of the owners.
 */
async function lockedMember(
  tx: Queryable,
  partnerId: string,
  memberId: string,
  audit: AuditContext,
  removesOwner: (member: MemberWithPassword) => boolean,
): Promise<MemberWithPassword> {
  await lockMembersFor(tx, partnerId, audit);
  const { rows } = await tx.query<MemberRow>("SELECT * FROM dashboard_members WHERE id = $1 AND partner_id = $2", [memberId, partnerId]);
  if (!rows[0]) throw new NotFoundError(`No member ${memberId}`);
  const member = fromRow(rows[0]);
  if (member.role === "OWNER" && member.status === "ACTIVE" && removesOwner(member)) {
    const { rows: owners } = await tx.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM dashboard_members WHERE partner_id = $1 AND role = 'OWNER' AND password_hash IS NOT NULL AND id <> $2",
      [partnerId, memberId],
    );
    if (owners[0]!.n === 0) throw new LastOwnerError();
  }
  return member;
}

export async function changeRole(pool: Pool, partnerId: string, memberId: string, role: Role, audit: AuditContext): Promise<Member> {
  return withTransaction(pool, async (tx) => {
    const before = await lockedMember(tx, partnerId, memberId, audit, () => role !== "OWNER");
    const { rows } = await tx.query<MemberRow>("UPDATE dashboard_members SET role = $2 WHERE id = $1 RETURNING *", [memberId, role]);
    await recordAudit(tx, partnerId, "member.role_changed", audit, { memberId, email: before.email, from: before.role, to: role });
    return fromRow(rows[0]!);
  });
}

/** Removes a member; its sessions end with it. */
export async function removeMember(pool: Pool, partnerId: string, memberId: string, audit: AuditContext): Promise<void> {
  await withTransaction(pool, async (tx) => {
    const member = await lockedMember(tx, partnerId, memberId, audit, () => true);
    await tx.query("DELETE FROM dashboard_members WHERE id = $1", [memberId]);
    await recordAudit(tx, partnerId, "member.removed", audit, { memberId, email: member.email, role: member.role });
  });
}
