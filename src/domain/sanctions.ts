import { readFile } from "node:fs/promises";
import { parse } from "csv-parse/sync";

// Wallet screening against a list in the OFAC SDN format (sdn.csv: ent_num, SDN_Name, SDN_Type, Program,
// Title, Call_Sign, Vess_type, Tonnage, GRT, Vess_flag, Vess_owner, Remarks). Crypto addresses are
// published in the Remarks column as "Digital Currency Address - <ASSET> <address>;".
const ADDRESS_IN_REMARKS = /Digital Currency Address - [A-Z0-9]+ (0x[0-9a-fA-F]{40})/g;

export interface SanctionsList {
  isSanctioned(address: string): boolean;
  /** The SDN entry (name) listing the address, for the audit trail. */
  entryFor(address: string): string | undefined;
  size: number;
}

export function parseSdnCsv(text: string): Map<string, string> {
  const records = parse(text, { relaxColumnCount: true, skipEmptyLines: true, trim: true }) as string[][];
  const addresses = new Map<string, string>();
  for (const record of records) {
    const name = record[1] ?? "";
    const remarks = record[11] ?? "";
    for (const match of remarks.matchAll(ADDRESS_IN_REMARKS)) addresses.set(match[1]!.toLowerCase(), name);
  }
  return addresses;
}

export async function loadSanctionsList(files: string[]): Promise<SanctionsList> {
  const addresses = new Map<string, string>();
  for (const file of files) {
    for (const [address, name] of parseSdnCsv(await readFile(file, "utf8"))) addresses.set(address, name);
  }
  return {
    isSanctioned: (address) => addresses.has(address.toLowerCase()),
    entryFor: (address) => addresses.get(address.toLowerCase()),
    size: addresses.size,
  };
}
