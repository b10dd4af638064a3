// KYC billing months are calendar months in America/Mexico_City (decisions sections 3 and 4), named "YYYY-MM".
import { mexicoPeriodStart } from "../domain/periods.ts";

const ZONE = "America/Mexico_City";
export const MONTH_PATTERN = "^[0-9]{4}-(0[1-9]|1[0-2])$";

/** The Mexico City calendar month an instant falls in, as "YYYY-MM". */
export function mexicoMonth(at: Date): string {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: ZONE, year: "numeric", month: "2-digit" }).formatToParts(at);
  const get = (type: string) => parts.find((part) => part.type === type)!.value;
  return `${get("year")}-${get("month")}`;
}

/** The instants a "YYYY-MM" Mexico City month starts (inclusive) and ends (exclusive). */
export function mexicoMonthRange(month: string): { from: Date; to: Date } {
  if (!new RegExp(MONTH_PATTERN).test(month)) throw new TypeError(`not a YYYY-MM month: ${month}`);
  const [year, monthNumber] = month.split("-").map(Number) as [number, number];
  // The middle of a month is inside it in every time zone; mexicoPeriodStart finds that month's start.
  const from = mexicoPeriodStart("month", new Date(Date.UTC(year, monthNumber - 1, 15)));
  const to = mexicoPeriodStart("month", new Date(Date.UTC(year, monthNumber, 15)));
  return { from, to };
}
