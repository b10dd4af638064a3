// The operations of an OpenAPI 3.1 document, as the generator needs them.
import type { ApiTarget } from "./targets.ts";
import type { Schema } from "./values.ts";

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required: boolean;
  schema: Schema;
}

export interface Operation {
  target: ApiTarget;
  method: string;
  /** Template relative to the target's prefix: /users/{ref}. */
  path: string;
  parameters: Parameter[];
  body?: Schema;
  idempotent: boolean;
  /** Error codes the document declares for it, with their status. */
  errorCodes: Map<string, number>;
  /** Every method the document has for this path. */
  pathMethods: string[];
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { parameters?: Parameter[]; requestBody?: { content?: Record<string, { schema?: Schema }> }; responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }>>;
}

const METHODS = ["get", "post", "put", "patch", "delete"];

export function operationsOf(target: ApiTarget, document: OpenApiDocument): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    const pathMethods = Object.keys(item).filter((method) => METHODS.includes(method));
    for (const method of pathMethods) {
      const op = item[method]!;
      const errorCodes = new Map<string, number>();
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const schema = response.content?.["application/json"]?.schema as { properties?: { error?: { enum?: string[] } } } | undefined;
        for (const code of schema?.properties?.error?.enum ?? []) errorCodes.set(code, Number(status));
      }
      const parameters = (op.parameters ?? []).map((p) => ({ ...p, required: Boolean(p.required), schema: p.schema ?? { type: "string" } }));
      operations.push({
        target,
        method,
        path,
        parameters,
        body: op.requestBody?.content?.["application/json"]?.schema,
        idempotent: parameters.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"),
        errorCodes,
        pathMethods,
      });
    }
  }
  return operations;
}

/** Codes declared with two different statuses, across the documents: a document error. */
export function codeTable(base: Record<string, number>, operations: Operation[]): { codes: Record<string, number>; conflicts: string[] } {
  const codes = { ...base };
  const conflicts: string[] = [];
  for (const op of operations) {
    for (const [code, status] of op.errorCodes) {
      if (codes[code] === undefined) codes[code] = status;
      else if (codes[code] !== status) conflicts.push(`${op.target.name} ${op.method.toUpperCase()} ${op.path}: ${code} declared ${status}, the spec says ${codes[code]}`);
    }
  }
  return { codes, conflicts };
}
