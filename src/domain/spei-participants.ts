/**
 * Catalogue of SPEI participants: the 3-digit CLABE bank prefix, the participant code the central
 * bank uses (the `emisor` / `receptor` values of the CEP portal form, and `ClaveSPEI` in a CEP), and
 * the participant's short name as the CEP portal lists it.
 *
 * Codes are 5 digits: 40xxx commercial banks (banca múltiple), 37xxx development banks, 90xxx other
 * participants (brokers, SOFIPOs, payment institutions...), where xxx is the CLABE prefix. The one
 * exception is the central bank itself, whose code is "2001".
 *
 * Sources (data in ./data/spei-participants.json):
 * - cuenca-mx/clabe-python `clabe/banks.py` (BANKS: CLABE prefix -> participant code; BANK_NAMES:
 *   "descargado de http://www.banxico.org.mx/cep/"), the same table the cepmex client uses;
 * - newer participants and renamed ones (UALA for ABC Capital, BANCO COVALTO for Finterra, BaBien for
 *   Bansefi, CITI MEXICO, HEY BANCO, KLAR, FONDEADORA, MERCADO PAGO W, CUENCA, SPIN BY OXXO, ...) from
 *   recent public snapshots of the portal's institution list
 *   (https://www.banxico.org.mx/cep-scl/listaInstituciones.do) found in public repositories;
 * - legal names from the clabe-validator npm package (center-key/clabe-validator, `banksMap`).
 * Institutions that have left SPEI (e.g. Banco Famsa) are kept so that historical CLABEs still resolve;
 * whether a CLABE can still receive a transfer is the bank's answer, not this catalogue's.
 * Known ambiguity: prefix 638 (Nu México) is listed as 90638; one recent source lists 40638 after its
 * banking licence. Refresh from the portal's list when in doubt.
 */
import data from "./data/spei-participants.json" with { type: "json" };

export type SpeiParticipant = {
  /** 3-digit CLABE bank prefix, e.g. "012". */
  readonly clabePrefix: string;
  /** Participant code used by SPEI and the CEP portal, e.g. "40012" (5 digits; "2001" for Banxico). */
  readonly code: string;
  /** Short name as the CEP portal lists it, e.g. "BBVA MEXICO". */
  readonly name: string;
  /** Legal or long name, when known. */
  readonly legalName?: string;
};

export const participants: readonly SpeiParticipant[] = Object.freeze(
  data.participants.map((p: SpeiParticipant) => Object.freeze({ ...p })),
);

const byPrefix = new Map<string, SpeiParticipant>(participants.map((p) => [p.clabePrefix, p]));
const byCode = new Map<string, SpeiParticipant>(participants.map((p) => [p.code, p]));

/** The participant whose CLABE prefix is `prefix` (3 digits, e.g. "012"); undefined when unknown. */
export function findParticipantByClabePrefix(prefix: string): SpeiParticipant | undefined {
  return byPrefix.get(prefix);
}

/** The participant with SPEI code `code` (e.g. "40012"); undefined when unknown. */
export function findParticipantByCode(code: string): SpeiParticipant | undefined {
  return byCode.get(code);
}
