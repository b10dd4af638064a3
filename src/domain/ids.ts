import { randomBytes } from "node:crypto";

/** Opaque ids with a type prefix (decisions section 2). */
export type IdPrefix = "ptn" | "usr" | "qt" | "ord" | "whd" | "evt" | "kyc" | "mbr" | "aud";

export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBytes(12).toString("hex")}`;
}
