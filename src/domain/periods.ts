// Every period of the service is a calendar day or month in America/Mexico_City: volume limits
// (decisions section 3), KYC billing and revenue months ("YYYY-MM", sections 3 and 4), payment dates.
export const MEXICO_CITY_ZONE = "America/Mexico_City";
const ZONE = MEXICO_CITY_ZONE;

// Made once: building an Intl.DateTimeFormat (time zone data, locale) costs far more than formatting with one.
const DAY_FORMAT = new Intl.DateTimeFormat("en-CA", { timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit" });
const OFFSET_FORMAT = new Intl.DateTimeFormat("en-US", { timeZone: ZONE, timeZoneName: "longOffset" });

function zonedParts(date: Date): { year: number; month: number; day: number } {
  const parts = DAY_FORMAT.formatToParts(date);
  const get = (type: string) => Number(parts.find((part) => part.type === type)!.value);
  return { year: get("year"), month: get("month"), day: get("day") };
}

/** UTC offset of the zone at an instant, in minutes (Mexico City has had no DST since 2022, but the tz data decides). */
function offsetMinutes(at: Date): number {
  const name = OFFSET_FORMAT.formatToParts(at).find((part) => part.type === "timeZoneName")!.value;
  const match = /GMT([+-])(\d{2}):?(\d{2})?/.exec(name);
  if (!match) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3] ?? 0);
  return match[1] === "-" ? -minutes : minutes;
}

function periodStartAt(period: "day" | "month", now: Date): number {
  const { year, month, day } = zonedParts(now);
  const localMidnightAsUtc = Date.UTC(year, month - 1, period === "month" ? 1 : day);
  const guess = new Date(localMidnightAsUtc - offsetMinutes(new Date(localMidnightAsUtc)) * 60_000);
  return localMidnightAsUtc - offsetMinutes(guess) * 60_000;
}

/** Past a period's start, an instant certainly inside the next period: days last 23 to 25 hours, months 28 to 31 days. */
const INTO_NEXT_MS = { day: 30 * 3_600_000, month: 33 * 86_400_000 };

/**
 * The latest day and month computed, as [start, next start): orders and quotes ask for the current ones
 * on every request, so the `Intl` work is done once a period, not once a request.
 */
const latest: Record<"day" | "month", { from: number; to: number } | undefined> = { day: undefined, month: undefined };

/** The instant the Mexico City day or month holding `now` began. */
export function mexicoPeriodStart(period: "day" | "month", now = new Date()): Date {
  const at = now.getTime();
  const known = latest[period];
  if (known && at >= known.from && at < known.to) return new Date(known.from);
  const from = periodStartAt(period, now);
  latest[period] = { from, to: periodStartAt(period, new Date(from + INTO_NEXT_MS[period])) };
  return new Date(from);
}

export const MONTH_PATTERN = "^[0-9]{4}-(0[1-9]|1[0-2])$";

/** The Mexico City calendar month an instant falls in, as "YYYY-MM". */
export function mexicoMonth(at: Date): string {
  const { year, month } = zonedParts(at);
  return `${year}-${String(month).padStart(2, "0")}`;
}

/** The Mexico City calendar day an instant falls in, as "YYYY-MM-DD". */
export function mexicoDay(at: Date): string {
  const { year, month, day } = zonedParts(at);
  return `${year}-${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}`;
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
