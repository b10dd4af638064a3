// Values from JSON schemas (the subset the service's ajv schemas use: type, const, enum, min/max,
// lengths, pattern, format, required, additionalProperties, items, the x-maxDecimals extension), and the
// strings that break things: unicode edge cases, boundaries, wrong types.
import type { Rng } from "./rng.ts";

export type Schema = Record<string, unknown>;

/** Unicode that has broken services: RTL overrides, NUL, combining marks, emoji, BOM, lone surrogates. */
export const UNICODE_SAMPLES: readonly string[] = [
  "\u202Egnp.exe",
  "مرحبا بالعالم",
  "שלום",
  "a\u0000b",
  "\u0000",
  "e\u0301\u0301\u0301\u0301",
  "Z\u0351\u0352\u0353\u0354\u0355\u0356\u0357",
  "💸🇲🇽👩‍👩‍👧‍👦",
  "\uFEFFbom",
  "\uD800",
  "\uDFFFx",
  "x\uD83D",
  "\u2028\u2029",
  "ＡＰＩ",
  "İıſK",
  "\u0007\u001b[31m",
  "' OR 1=1 --",
  "${jndi:ldap://x}",
  "<script>alert(1)</script>",
  "%00%2e%2e%2f",
  "../../etc/passwd",
  "\\",
  "  ",
];

const WRONG_TYPE_VALUES: readonly unknown[] = [null, true, false, 0, -1, 1.5, 1e308, "", "x", "1", [], [1], {}, { a: 1 }];

function typeOf(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

function allowedTypes(schema: Schema): string[] | undefined {
  if (schema.type === undefined) return undefined;
  return Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
}

/** A value of a JSON type the schema does not allow (undefined when it allows every type). */
export function wrongTypeValue(schema: Schema, rng: Rng): unknown {
  const types = allowedTypes(schema);
  const candidates = WRONG_TYPE_VALUES.filter((value) => {
    const type = typeOf(value);
    if ("const" in schema) return value !== schema.const;
    if (Array.isArray(schema.enum)) return !(schema.enum as unknown[]).includes(value);
    if (!types) return false;
    if (types.includes(type)) return false;
    if (type === "integer" && types.includes("number")) return false;
    return true;
  });
  return candidates.length ? rng.pick(candidates) : undefined;
}

// --- a small generator for the regular expressions of schemas ---

interface Atom {
  chars?: string[];
  group?: Atom[][];
  min: number;
  max: number;
}

const DIGITS = [..."0123456789"];

function expandClass(body: string): string[] {
  const chars: string[] = [];
  for (let i = 0; i < body.length; i += 1) {
    const c = body[i]!;
    if (c === "\\") {
      const next = body[++i]!;
      if (next === "d") chars.push(...DIGITS);
      else chars.push(next);
      continue;
    }
    if (body[i + 1] === "-" && i + 2 < body.length) {
      const end = body[i + 2]!;
      for (let code = c.charCodeAt(0); code <= end.charCodeAt(0); code += 1) chars.push(String.fromCharCode(code));
      i += 2;
      continue;
    }
    chars.push(c);
  }
  return chars;
}

function parseSequence(pattern: string, start: number): { alternatives: Atom[][]; end: number } {
  const alternatives: Atom[][] = [[]];
  let i = start;
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === ")") break;
    if (c === "|") {
      alternatives.push([]);
      i += 1;
      continue;
    }
    if (c === "^" || c === "$") {
      i += 1;
      continue;
    }
    let atom: Atom;
    if (c === "(") {
      const inner = parseSequence(pattern, i + (pattern.startsWith("(?:", i) ? 3 : 1));
      atom = { group: inner.alternatives, min: 1, max: 1 };
      i = inner.end + 1;
    } else if (c === "[") {
      const close = pattern.indexOf("]", i + 1);
      atom = { chars: expandClass(pattern.slice(i + 1, close)), min: 1, max: 1 };
      i = close + 1;
    } else if (c === "\\") {
      const next = pattern[i + 1]!;
      atom = { chars: next === "d" ? DIGITS : next === "w" ? [..."abcXYZ019_"] : [next], min: 1, max: 1 };
      i += 2;
    } else if (c === ".") {
      atom = { chars: [..."abc123"], min: 1, max: 1 };
      i += 1;
    } else {
      atom = { chars: [c], min: 1, max: 1 };
      i += 1;
    }
    const q = pattern[i];
    if (q === "{") {
      const close = pattern.indexOf("}", i);
      const [lo, hi] = pattern.slice(i + 1, close).split(",");
      atom.min = Number(lo);
      atom.max = hi === undefined ? atom.min : hi === "" ? atom.min + 8 : Number(hi);
      i = close + 1;
    } else if (q === "?") {
      atom.min = 0;
      atom.max = 1;
      i += 1;
    } else if (q === "*" || q === "+") {
      atom.min = q === "*" ? 0 : 1;
      atom.max = atom.min + 8;
      i += 1;
    }
    alternatives[alternatives.length - 1]!.push(atom);
  }
  return { alternatives, end: i };
}

function emit(alternatives: Atom[][], rng: Rng, extreme: "min" | "max" | "random"): string {
  const sequence = rng.pick(alternatives);
  let out = "";
  for (const atom of sequence) {
    const count = extreme === "min" ? atom.min : extreme === "max" ? atom.max : rng.int(atom.min, atom.max);
    for (let n = 0; n < count; n += 1) out += atom.group ? emit(atom.group, rng, extreme) : rng.pick(atom.chars!);
  }
  return out;
}

/** A string matching `pattern` (the subset of regular expressions schemas use), checked before use. */
export function stringForPattern(pattern: string, rng: Rng, extreme: "min" | "max" | "random" = "random"): string | undefined {
  try {
    const value = emit(parseSequence(pattern, 0).alternatives, rng, extreme);
    return new RegExp(pattern, "u").test(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

function isoInPast(rng: Rng): string {
  return new Date(Date.UTC(2025, rng.int(0, 11), rng.int(1, 28), rng.int(0, 23), rng.int(0, 59), rng.int(0, 59), rng.int(0, 999))).toISOString();
}

function stringForFormat(format: string, rng: Rng): string | undefined {
  switch (format) {
    case "date-time":
      return isoInPast(rng);
    case "date":
      return isoInPast(rng).slice(0, 10);
    case "email":
      return `fuzz${rng.int(0, 9999)}@example.com`;
    case "uri":
      return `https://example.com/${rng.hex(6)}`;
    default:
      return undefined;
  }
}

export interface ValueOptions {
  /** Boundary values (lengths and numbers at their limits) instead of ordinary ones. */
  boundary?: boolean;
  /** Unicode edge cases in free strings. */
  unicode?: boolean;
  /** Also fill optional properties (else about half). */
  allOptional?: boolean;
}

function stringValue(schema: Schema, rng: Rng, options: ValueOptions): string {
  const minLength = (schema.minLength as number | undefined) ?? 0;
  const maxLength = Math.min((schema.maxLength as number | undefined) ?? 40, 100_000);
  if (typeof schema.pattern === "string") {
    const extreme = options.boundary ? rng.pick(["min", "max"] as const) : "random";
    const value = stringForPattern(schema.pattern, rng, extreme);
    if (value !== undefined) return value;
  }
  if (typeof schema.format === "string") {
    const value = stringForFormat(schema.format, rng);
    if (value !== undefined) return value;
  }
  if (options.boundary) {
    const length = rng.pick([minLength, maxLength, Math.max(minLength, 1)]);
    return "x".repeat(length);
  }
  if (options.unicode) {
    let value = rng.pick(UNICODE_SAMPLES);
    while (value.length < minLength) value += rng.pick(UNICODE_SAMPLES);
    return value.slice(0, maxLength) || "x".repeat(minLength);
  }
  const length = rng.int(Math.max(minLength, 1), Math.max(minLength, Math.min(maxLength, 16)));
  let out = "";
  for (let i = 0; i < length; i += 1) out += rng.pick([..."abcdefghijklmnopqrstuvwxyz0123456789-_"]);
  return out;
}

function decimals(value: number, places: number): number {
  return Number(value.toFixed(places));
}

function numberValue(schema: Schema, integer: boolean, rng: Rng, options: ValueOptions): number {
  const exclusiveMinimum = schema.exclusiveMinimum as number | undefined;
  const minimum = (schema.minimum as number | undefined) ?? (exclusiveMinimum !== undefined ? exclusiveMinimum : -1000);
  const maximum = (schema.maximum as number | undefined) ?? (schema.exclusiveMaximum as number | undefined) ?? minimum + 1000;
  const places = integer ? 0 : ((schema["x-maxDecimals"] as number | undefined) ?? 2);
  const step = integer ? 1 : 10 ** -places;
  const low = exclusiveMinimum !== undefined ? exclusiveMinimum + step : minimum;
  const high = schema.exclusiveMaximum !== undefined ? maximum - step : maximum;
  if (options.boundary) return decimals(rng.pick([low, high, low + step, high - step].filter((v) => v >= low && v <= high)), places);
  // Mostly small values: big amounts only hit volume limits.
  const top = Math.min(high, low + rng.pick([10, 100, 1000]));
  const value = low + rng.next() * (top - low);
  return integer ? Math.round(value) : decimals(value, rng.int(0, places));
}

/** A value valid for `schema`, with `fill(name)` supplying values for properties that need real ones. */
export function validValue(schema: Schema, rng: Rng, options: ValueOptions = {}, fill?: (name: string, schema: Schema) => unknown): unknown {
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum)) return rng.pick((schema.enum as unknown[]).filter((v) => v !== null).length ? (schema.enum as unknown[]).filter((v) => v !== null) : (schema.enum as unknown[]));
  const types = (allowedTypes(schema) ?? ["string"]).filter((t) => t !== "null");
  const type = types.length ? rng.pick(types) : "null";
  switch (type) {
    case "null":
      return null;
    case "string":
      return stringValue(schema, rng, options);
    case "integer":
      return numberValue(schema, true, rng, options);
    case "number":
      return numberValue(schema, false, rng, options);
    case "boolean":
      return rng.bool();
    case "array": {
      const items = (schema.items as Schema | undefined) ?? { type: "string" };
      const max = Math.min((schema.maxItems as number | undefined) ?? 3, 3);
      const count = rng.int((schema.minItems as number | undefined) ?? 0, max);
      return Array.from({ length: count }, () => validValue(items, rng, options, fill));
    }
    case "object": {
      const properties = (schema.properties as Record<string, Schema> | undefined) ?? {};
      const required = new Set((schema.required as string[] | undefined) ?? []);
      const out: Record<string, unknown> = {};
      for (const [name, property] of Object.entries(properties)) {
        if (!required.has(name) && !options.allOptional && rng.bool(0.5)) continue;
        const supplied = fill?.(name, property);
        out[name] = supplied !== undefined ? supplied : validValue(property, rng, options, fill);
      }
      const minProperties = (schema.minProperties as number | undefined) ?? 0;
      const names = Object.keys(properties);
      while (Object.keys(out).length < minProperties && names.length) {
        const name = rng.pick(names);
        const supplied = fill?.(name, properties[name]!);
        out[name] = supplied !== undefined ? supplied : validValue(properties[name]!, rng, options, fill);
      }
      return out;
    }
    default:
      return null;
  }
}

/** A value that breaks one constraint of `schema` (other than its type), or undefined if it has none. */
export function outOfRangeValue(schema: Schema, rng: Rng): unknown {
  const choices: (() => unknown)[] = [];
  if ("const" in schema) choices.push(() => `${String(schema.const)}x`, () => String(schema.const).toLowerCase());
  if (Array.isArray(schema.enum)) choices.push(() => "NOT_IN_ENUM", () => String(schema.enum && (schema.enum as unknown[])[0]).toLowerCase() + " ");
  if (typeof schema.maxLength === "number" && schema.maxLength < 70_000) choices.push(() => "y".repeat((schema.maxLength as number) + 1));
  if (typeof schema.minLength === "number" && schema.minLength > 0) choices.push(() => "");
  if (typeof schema.pattern === "string") choices.push(() => "not matching pattern \u00e9");
  if (schema.format === "date-time") choices.push(() => "2026-13-45T99:99:99Z", () => "yesterday");
  if (schema.format === "email") choices.push(() => "not-an-email");
  if (schema.format === "uri") choices.push(() => "not a uri");
  if (typeof schema.maximum === "number") choices.push(() => (schema.maximum as number) + 1, () => 1e308);
  if (typeof schema.minimum === "number") choices.push(() => (schema.minimum as number) - 1, () => -1e308);
  if (typeof schema.exclusiveMinimum === "number") choices.push(() => schema.exclusiveMinimum, () => -0.000001);
  // One decimal place too many; past 15 places a double cannot hold it (1 + 1e-19 is 1, a valid value).
  if (typeof schema["x-maxDecimals"] === "number" && schema["x-maxDecimals"] < 15) choices.push(() => 1 + 10 ** -((schema["x-maxDecimals"] as number) + 1));
  const types = allowedTypes(schema) ?? [];
  if (types.includes("integer")) choices.push(() => 1.5);
  if (typeof schema.maxItems === "number") choices.push(() => Array.from({ length: (schema.maxItems as number) + 1 }, () => "x"));
  return choices.length ? rng.pick(choices)() : undefined;
}
