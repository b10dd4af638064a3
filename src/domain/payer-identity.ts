// Who paid (decisions 8): the CEP's ordering party (ordenante) must be the buyer who locked the order.
// Pure rules: the verification job (src/payments/verification.ts) feeds them the receipt and the buyer's
// verified identity (buyers.verified_*), and holds the order for review when they say "someone else".

/** The identity the KYC provider verified for a buyer: the name, and at FULL the CURP and the RFC. */
export interface VerifiedIdentity {
  name: string | null;
  curp: string | null;
  rfc: string | null;
}

/** The ordering party as the CEP names it: `RFC` holds an RFC, a CURP, or a placeholder such as "ND". */
export interface PayerOnReceipt {
  name: string;
  rfcOrCurp: string;
}

/** RFC of a person (4 letters, date, 3-character homoclave) or of a company (3 letters). */
const RFC = /^[A-ZÑ&]{3,4}\d{6}[A-Z0-9]{3}$/;
/** CURP: 4 letters, date, sex, state, 3 consonants, a check character and digit. */
const CURP = /^[A-Z]{4}\d{6}[HMX][A-Z]{5}[A-Z0-9]\d$/;

/** An identity number written without spaces or dashes, in capitals. */
export function normaliseTaxId(value: string | null | undefined): string | null {
  if (!value) return null;
  const squeezed = value.replace(/[\s-]/g, "").toUpperCase();
  return squeezed === "" ? null : squeezed;
}

export function isRfc(value: string): boolean {
  return RFC.test(value);
}

export function isCurp(value: string): boolean {
  return CURP.test(value);
}

/**
 * A name as compared: letters and digits only, without accents or letter case, its words sorted, so
 * "Pérez Gómez, José" and "JOSE PEREZ GOMEZ" are the same name (Ñ becomes N: banks write NUÑEZ and
 * NUNEZ alike in SPEI).
 */
export function normaliseName(name: string): string {
  return name
    .normalize("NFD")
    .replace(/\p{M}/gu, "")
    .toUpperCase()
    .split(/[^A-Z0-9]+/)
    .filter((word) => word !== "")
    .sort()
    .join(" ");
}

export type PayerMatch =
  | { match: true; by: "RFC" | "CURP" | "NAME" }
  | { match: false; by: "RFC" | "CURP" | "NAME" | "NO_VERIFIED_IDENTITY" };

/**
 * Whether the payer is the buyer. An RFC or a CURP on both sides decides (the CEP's RFC field holds either);
 * otherwise the names, compared by normaliseName. A buyer with no verified identity on record cannot be
 * matched: the payment goes to an operator rather than be released on no evidence.
 */
export function comparePayer(buyer: VerifiedIdentity, payer: PayerOnReceipt): PayerMatch {
  const id = normaliseTaxId(payer.rfcOrCurp);
  const rfc = normaliseTaxId(buyer.rfc);
  const curp = normaliseTaxId(buyer.curp);
  if (id && isRfc(id) && rfc) return { match: id === rfc, by: "RFC" };
  if (id && isCurp(id) && curp) return { match: id === curp, by: "CURP" };
  if (!buyer.name || normaliseName(buyer.name) === "") return { match: false, by: "NO_VERIFIED_IDENTITY" };
  return { match: normaliseName(buyer.name) === normaliseName(payer.name), by: "NAME" };
}

const LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const GIVEN = ["MARIA", "JOSE", "ANA", "LUIS", "SOFIA", "CARLOS", "LUCIA", "JORGE"];
const SURNAMES = ["HERNANDEZ", "GARCIA", "MARTINEZ", "LOPEZ", "GONZALEZ", "PEREZ", "RODRIGUEZ", "SANCHEZ", "RAMIREZ", "TORRES"];

/**
 * A made-up but well-formed identity derived from `seed` (sandbox only: the simulated provider's answer
 * when a test names none, and the sandbox wallets' buyers). The same seed gives the same identity.
 */
export function syntheticIdentity(seed: string): { name: string; curp: string; rfc: string } {
  let hash = 2166136261;
  for (const char of seed) hash = Math.imul(hash ^ char.charCodeAt(0), 16777619) >>> 0;
  const pick = <T>(list: readonly T[], shift: number) => list[(hash >>> shift) % list.length]!;
  const given = pick(GIVEN, 0);
  const first = pick(SURNAMES, 5);
  const second = pick(SURNAMES, 11);
  const year = 60 + ((hash >>> 3) % 40);
  const month = 1 + ((hash >>> 7) % 12);
  const day = 1 + ((hash >>> 13) % 28);
  const date = `${year}${String(month).padStart(2, "0")}${String(day).padStart(2, "0")}`;
  const vowel = first.slice(1).match(/[AEIOU]/)?.[0] ?? "X";
  const stem = `${first[0]}${vowel}${second[0]}${given[0]}${date}`;
  const tail = (n: number, shift: number) => LETTERS[(hash >>> shift) % 26]! + String(n % 10);
  return {
    name: `${given} ${first} ${second}`,
    curp: `${stem}${hash % 2 ? "H" : "M"}DF${"RLT"[hash % 3]}${"NRS"[(hash >>> 2) % 3]}${"ZPM"[(hash >>> 4) % 3]}${tail(hash >>> 9, 17)}`,
    rfc: `${stem}${tail(hash >>> 19, 21)}${(hash >>> 23) % 10}`,
  };
}
