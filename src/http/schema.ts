import { Ajv, type ErrorObject, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";
import { Money } from "../domain/money.ts";
import { ValidationError } from "../domain/errors.ts";
import { MAX_PAGE_LIMIT } from "../db/filters.ts";

// ajv-formats is published as CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type JsonSchema = Record<string, unknown>;

function withKeywords(ajv: Ajv): Ajv {
  addFormats(ajv);
  // Decimal places of a JSON number as written by the client (USDC has 6, feePercent 2): checked on the
  // shortest decimal form, not with float `multipleOf`, which misjudges values like 0.29.
  ajv.addKeyword({
    keyword: "x-maxDecimals",
    type: "number",
    schemaType: "number",
    validate: (max: number, value: number) => Number.isFinite(value) && new Money(value).decimalPlaces() <= max,
    error: { message: (cxt) => `must have at most ${String(cxt.schema)} decimal places` },
  });
  return ajv;
}

const bodyAjv = withKeywords(new Ajv({ allErrors: false, strict: true, strictRequired: false }));
// Query strings arrive as text: numbers and booleans are coerced before validation.
const queryAjv = withKeywords(new Ajv({ allErrors: false, strict: true, coerceTypes: true, useDefaults: true }));

function describe(error: ErrorObject, where: string): string {
  const pointer = error.instancePath ? error.instancePath.slice(1).replaceAll("/", ".") : "";
  if (error.keyword === "additionalProperties") {
    const field = (error.params as { additionalProperty: string }).additionalProperty;
    return `${where} has an unknown field "${pointer ? `${pointer}.` : ""}${field}"`;
  }
  if (error.keyword === "required") {
    const field = (error.params as { missingProperty: string }).missingProperty;
    return `${where} is missing the required field "${pointer ? `${pointer}.` : ""}${field}"`;
  }
  if (error.keyword === "enum") {
    const allowed = (error.params as { allowedValues: unknown[] }).allowedValues.map(String).join(", ");
    return `"${pointer}" must be one of ${allowed}`;
  }
  return pointer ? `"${pointer}" ${error.message ?? "is invalid"}` : `${where} ${error.message ?? "is invalid"}`;
}

export interface Validator<T> {
  (value: unknown): T;
  schema: JsonSchema;
}

function compile<T>(ajv: Ajv, schema: JsonSchema, where: string): Validator<T> {
  const validate: ValidateFunction = ajv.compile(schema);
  const validator = (value: unknown): T => {
    if (!validate(value)) throw new ValidationError(describe(validate.errors![0]!, where));
    return value as T;
  };
  return Object.assign(validator, { schema });
}

export function bodyValidator<T>(schema: JsonSchema): Validator<T> {
  return compile<T>(bodyAjv, schema, "The request body");
}

export function queryValidator<T>(schema: JsonSchema): Validator<T> {
  const validate = compile<T>(queryAjv, schema, "The query");
  // Coercion turns a value of 309 digits or more into Infinity, which ajv then passes as an integer
  // under any maximum (found by npm run fuzz: Infinity reached PostgreSQL and answered 500).
  const validator = (value: unknown): T => {
    const result = validate(value);
    for (const [name, item] of Object.entries(result as Record<string, unknown>)) {
      if (typeof item === "number" && !Number.isFinite(item)) throw new ValidationError(`"${name}" must be a finite number`);
    }
    return result;
  };
  return Object.assign(validator, { schema });
}

// Shared pieces of schemas.
export const isoTimestamp = { type: "string", format: "date-time" } as const;
export const pagination = {
  limit: { type: "integer", minimum: 1, maximum: MAX_PAGE_LIMIT, default: 20 },
  // Capped where a JavaScript number is still an exact integer: beyond, it prints as 1e+21, which
  // PostgreSQL's bigint OFFSET refuses (a 500 found by npm run fuzz).
  offset: { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER, default: 0 },
} as const;
export const errorBodySchema = {
  type: "object",
  required: ["error", "message"],
  properties: { error: { type: "string" }, message: { type: "string" } },
} as const;

/** The schema of a page envelope (db/filters.ts pageOf) whose items under `key` follow `items`. */
export function pageSchema(key: string, items: JsonSchema) {
  return {
    type: "object",
    required: [key, "total", "limit", "offset", "hasMore"],
    properties: {
      [key]: { type: "array", items },
      total: { type: "integer" },
      limit: { type: "integer" },
      offset: { type: "integer" },
      hasMore: { type: "boolean" },
    },
  } as const;
}
