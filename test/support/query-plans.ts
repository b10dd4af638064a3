// PostgreSQL's plans as the tests read them: EXPLAIN's JSON, its nodes, and what a run read.
import type pg from "pg";

export interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Index Name"?: string;
  "Actual Rows"?: number;
  "Shared Hit Blocks"?: number;
  "Shared Read Blocks"?: number;
  Plans?: PlanNode[];
}

/** The node and every node under it. */
export const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];

/** The plan of `statement` (its text, or `EXECUTE name(...)`), not run. */
export async function explained(db: Pick<pg.ClientBase, "query">, statement: string, values: unknown[] = []): Promise<PlanNode> {
  const { rows } = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (FORMAT JSON) ${statement}`, values);
  return rows[0]!["QUERY PLAN"][0].Plan;
}

/**
 * `statement` run under EXPLAIN ANALYZE: its plan, the indexes it read through, and the buffers it read.
 * It runs for real: a caller explaining a write wraps it in a transaction it rolls back.
 */
export async function explainedRun(
  db: Pick<pg.ClientBase, "query">,
  statement: string,
  values: unknown[] = [],
): Promise<{ plan: PlanNode; indexes: string[]; buffers: number }> {
  const { rows } = await db.query<{ "QUERY PLAN": [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${statement}`, values);
  const plan = rows[0]!["QUERY PLAN"][0].Plan;
  const indexes = planNodes(plan).flatMap((node) => (node["Index Name"] ? [node["Index Name"]] : []));
  return { plan, indexes, buffers: Number(plan["Shared Hit Blocks"]) + Number(plan["Shared Read Blocks"]) };
}
