import { clabe as clabeValidator } from "clabe-validator";
import { InvalidClabeError } from "./errors.ts";
import { findParticipantByClabePrefix, type SpeiParticipant } from "./spei-participants.ts";

export interface ClabeDetails {
  clabe: string;
  bankCode: string;
  bankName: string;
  participant: SpeiParticipant;
}

// Format and check digit (weights 3,7,1 over the first 17 digits) come from clabe-validator; the bank
// comes from the central bank's SPEI participant catalogue, which is the list that decides who can
// receive a SPEI transfer (the library's own bank and city tables are not consulted).
const FORMAT_ERRORS = new Set(["invalid-length", "invalid-characters", "invalid-checksum"]);

/** Validates a CLABE (decisions section 6) or throws INVALID_CLABE with the reason. */
export function parseClabe(value: string): ClabeDetails {
  if (!/^\d{18}$/.test(value)) throw new InvalidClabeError("A CLABE is exactly 18 digits");
  const check = clabeValidator.validate(value);
  if (check.error !== null && FORMAT_ERRORS.has(check.error)) {
    throw new InvalidClabeError(check.error === "invalid-checksum" ? "The CLABE check digit is wrong" : `The CLABE is malformed: ${check.message}`);
  }
  const participant = findParticipantByClabePrefix(value.slice(0, 3));
  if (!participant) throw new InvalidClabeError(`No SPEI participant has the bank prefix ${value.slice(0, 3)}`);
  return { clabe: value, bankCode: participant.clabePrefix, bankName: participant.name, participant };
}

/** A valid CLABE from its first 17 digits: the sandbox makes them for simulated accounts. */
export function withCheckDigit(first17: string): string {
  const digit = clabeValidator.computeChecksum(first17);
  if (digit === null) throw new InvalidClabeError("Expected 17 digits");
  return `${first17}${digit}`;
}
