// Volume periods are calendar days and months in America/Mexico_City (decisions section 3).
const ZONE = "America/Mexico_City";

function zonedParts(date: Date): { year: number; month: number; day: number } {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: ZONE, year: "numeric", month: "2-digit", day: "2-digit" }).formatToParts(date);
  const get = (type: string) => Number(parts.find((part) => part.type === type)!.value);
  return { year: get("year"), month: get("month"), day: get("day") };
}

/** UTC offset of the zone at an instant, in minutes (Mexico City has had no DST since 2022, but the tz data decides). */
function offsetMinutes(at: Date): number {
  const name = new Intl.DateTimeFormat("en-US", { timeZone: ZONE, timeZoneName: "longOffset" })
    .formatToParts(at)
    .find((part) => part.type === "timeZoneName")!.value;
  const match = /GMT([+-])(\d{2}):?(\d{2})?/.exec(name);
  if (!match) return 0;
  const minutes = Number(match[2]) * 60 + Number(match[3] ?? 0);
  return match[1] === "-" ? -minutes : minutes;
}

/** The instant the current Mexico City day or month began. */
export function mexicoPeriodStart(period: "day" | "month", now = new Date()): Date {
  const { year, month, day } = zonedParts(now);
  const localMidnightAsUtc = Date.UTC(year, month - 1, period === "month" ? 1 : day);
  const guess = new Date(localMidnightAsUtc - offsetMinutes(new Date(localMidnightAsUtc)) * 60_000);
  return new Date(localMidnightAsUtc - offsetMinutes(guess) * 60_000);
}
