// Counting fronts for what a service sends over the wire: a TCP front for PostgreSQL that counts the
// statements run (a simple Query, or an extended-protocol Sync) and the round trips (statements sent while
// none before them waits for its answer: a session that pipelines sends several in one), labelled by
// statement, and the statements parsed (a named prepared statement once per session, an unnamed one at
// every call), and an HTTP front for a JSON-RPC node that counts HTTP requests and the calls in them by
// method. Used to measure what one trade costs in round trips (test/orders/trade-round-trips.test.ts),
// where a CPU profile only shows socket writes. The PostgreSQL front can also fail one round trip on purpose, the two
// ways a connection lost at a commit looks the same to its caller: a commit PostgreSQL ran but whose
// answer never came back (`loseAnswer`; test/indexer/indexer.test.ts, test/http/idempotency.test.ts), and
// a commit that never reached it (`cutBefore`; test/indexer/indexer.test.ts).
import http from "node:http";
import net from "node:net";
import { serverAddress } from "./database.ts";

export interface Tally {
  total: number;
  by: Map<string, number>;
}

const tally = (): Tally => ({ total: 0, by: new Map() });
const add = (t: Tally, label: string, n = 1) => {
  t.total += n;
  t.by.set(label, (t.by.get(label) ?? 0) + n);
};

/** A statement's label: its verb and the table it names first (`INSERT order_timeline`). */
export function statementLabel(sql: string): string {
  const text = sql.replace(/\s+/g, " ").trim();
  const verb = (/^\w+/.exec(text)?.[0] ?? "?").toUpperCase();
  const table = /\b(?:FROM|INTO|UPDATE|JOIN)\s+("?[\w.]+"?(?:\.[\w"]+)?)/i.exec(text)?.[1]?.replace(/"/g, "");
  return table ? `${verb} ${table}` : text.slice(0, 40);
}

/** The first whole typed message of `buffer` (a type byte, then a length that counts itself), and what follows it. */
function takeMessage(buffer: Buffer): { type: string; body: Buffer; rest: Buffer } | undefined {
  if (buffer.length < 5) return undefined;
  const length = buffer.readInt32BE(1);
  if (buffer.length < 1 + length) return undefined;
  return { type: String.fromCharCode(buffer[0]!), body: buffer.subarray(5, 1 + length), rest: buffer.subarray(1 + length) };
}

/** Whether a fault fires at a round trip, given its statement and the statements of its connection's transaction before it. */
type StatementMatch = (statement: string, transaction: readonly string[]) => boolean;

export interface PgFront {
  /** Connection string of the front (the upstream's with its host and port replaced). */
  url: string;
  /** Statements run: a `Q` message or a `S`ync, labelled by the last statement parsed or bound on that connection. */
  statements: Tally;
  /**
   * Round trips: the statements sent while every statement before them on their connection had its answer
   * (its ReadyForQuery), so that the client waited for PostgreSQL before each; a statement pipelined behind
   * one still unanswered is not counted.
   */
  roundTrips: Tally;
  /** Statements parsed (`P` messages), labelled by their text. */
  parses: Tally;
  reset(): void;
  /**
   * Arms one fault: the next round trip for which `matches` holds (given its statement and the statements
   * of its connection's transaction before it) reaches PostgreSQL and runs there, but its answer is
   * withheld and the connection cut once PostgreSQL is ready again, so the caller cannot tell whether it
   * ran. Resolves with the statement when it has fired.
   */
  loseAnswer(matches: StatementMatch): Promise<string>;
  /**
   * Arms one fault: the next round trip for which `matches` holds never reaches PostgreSQL; the connection
   * is cut before it is sent, so PostgreSQL rolls back the connection's open transaction. Resolves with
   * the statement when it has fired.
   */
  cutBefore(matches: StatementMatch): Promise<string>;
  close(): Promise<void>;
}

/** A TCP front for the PostgreSQL of `databaseUrl` (no TLS, as the local test server runs). */
export async function startPgFront(databaseUrl: string): Promise<PgFront> {
  const upstream = serverAddress(databaseUrl);
  const front: PgFront = {
    url: "",
    statements: tally(),
    roundTrips: tally(),
    parses: tally(),
    reset: () => {
      front.statements = tally();
      front.roundTrips = tally();
      front.parses = tally();
    },
    loseAnswer: (matches) => new Promise((resolve) => (armed = { kind: "lose-answer", matches, fired: resolve })),
    cutBefore: (matches) => new Promise((resolve) => (armed = { kind: "cut-before", matches, fired: resolve })),
    close: async () => undefined,
  };
  let armed: { kind: "lose-answer" | "cut-before"; matches: StatementMatch; fired(statement: string): void } | undefined;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const server = net.connect(upstream);
    sockets.add(client).add(server);
    const drop = () => {
      client.destroy();
      server.destroy();
    };
    client.on("error", drop).on("close", drop);
    server.on("error", drop).on("close", drop);
    server.pipe(client);
    let buffered: Buffer = Buffer.alloc(0);
    let started = false;
    let lastStatement = "?";
    // This connection's named prepared statements: a Bind of one without a Parse runs that text.
    const named = new Map<string, string>();
    // The statements of its open transaction (none outside one), for the faults.
    let transaction: string[] | undefined;
    // Statements sent and not yet answered (a ReadyForQuery each).
    let unanswered = 0;
    // PostgreSQL's answers, read for their ReadyForQuery; the first (after authentication) answers no statement.
    let sslAnswerPending = false;
    let answers: Buffer = Buffer.alloc(0);
    server.on("data", (chunk: Buffer) => {
      if (sslAnswerPending) {
        // The one-byte answer to an SSL request ('N': go on in plain text).
        sslAnswerPending = false;
        chunk = chunk.subarray(1);
      }
      answers = answers.length === 0 ? chunk : Buffer.concat([answers, chunk]);
      for (let message = takeMessage(answers); message; message = takeMessage(answers)) {
        answers = message.rest;
        if (message.type === "Z" && unanswered > 0) unanswered -= 1;
      }
    });
    /** Counts a statement (and a round trip) and fires an armed fault it matches; true when the connection is to be cut before it is sent. */
    const statementSent = (statement: string): boolean => {
      add(front.statements, statementLabel(statement));
      if (unanswered === 0) add(front.roundTrips, statementLabel(statement));
      unanswered += 1;
      if (armed?.matches(statement, transaction ?? [])) {
        const { kind, fired } = armed;
        armed = undefined;
        if (kind === "cut-before") {
          drop();
          fired(statement);
          return true;
        }
        cutAfterAnswer(() => fired(statement));
      }
      if (/^\s*begin\b/i.test(statement)) transaction = [];
      else if (/^\s*(commit|rollback)\s*;?\s*$/i.test(statement)) transaction = undefined;
      else transaction?.push(statement);
      return false;
    };
    // Reads PostgreSQL's answer without passing it on, and cuts both sides at its ReadyForQuery ('Z').
    const cutAfterAnswer = (done: () => void) => {
      server.unpipe(client);
      let answer: Buffer = Buffer.alloc(0);
      server.on("data", (chunk: Buffer) => {
        answer = Buffer.concat([answer, chunk]);
        for (let message = takeMessage(answer); message; message = takeMessage(answer)) {
          answer = message.rest;
          if (message.type === "Z") {
            drop();
            done();
            return;
          }
        }
      });
      server.resume(); // unpipe paused it
    };
    /** Reads the whole messages buffered so far; true when a fault cut the connection before the last chunk went on. */
    const readMessages = (): boolean => {
      for (;;) {
        if (!started) {
          // The startup message (and an SSL request before it) has a length but no type byte.
          if (buffered.length < 4) return false;
          const length = buffered.readInt32BE(0);
          if (buffered.length < length) return false;
          const code = buffered.readInt32BE(4);
          buffered = buffered.subarray(length);
          if (code !== 80877103) started = true;
          else sslAnswerPending = true;
          continue;
        }
        const message = takeMessage(buffered);
        if (!message) return false;
        const { type, body } = message;
        buffered = message.rest;
        if (type === "Q") {
          if (statementSent(body.toString("utf8").replace(/\0$/, ""))) return true;
        } else if (type === "P") {
          const nameEnd = body.indexOf(0);
          lastStatement = body.subarray(nameEnd + 1, body.indexOf(0, nameEnd + 1)).toString("utf8");
          if (nameEnd > 0) named.set(body.subarray(0, nameEnd).toString("utf8"), lastStatement);
          add(front.parses, statementLabel(lastStatement));
        } else if (type === "B") {
          const portalEnd = body.indexOf(0);
          const name = body.subarray(portalEnd + 1, body.indexOf(0, portalEnd + 1)).toString("utf8");
          lastStatement = named.get(name) ?? lastStatement;
        } else if (type === "S" && statementSent(lastStatement)) return true;
      }
    };
    // Read before passed on, so a cut-before fault keeps its round trip from PostgreSQL (which runs a
    // message only once the whole of it has arrived).
    client.on("data", (chunk: Buffer) => {
      buffered = Buffer.concat([buffered, chunk]);
      if (!readMessages()) server.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  front.url = url.toString();
  front.close = async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return front;
}

export interface RpcFront {
  url: string;
  /** HTTP requests to the node. */
  requests: number;
  /** JSON-RPC calls, by method (a batch counts each of its calls). */
  calls: Tally;
  reset(): void;
  close(): Promise<void>;
}

/** An HTTP front for the JSON-RPC node at `nodeUrl`. */
export async function startRpcFront(nodeUrl: string): Promise<RpcFront> {
  const front: RpcFront = {
    url: "",
    requests: 0,
    calls: tally(),
    reset: () => {
      front.requests = 0;
      front.calls = tally();
    },
    close: async () => undefined,
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      front.requests += 1;
      try {
        const parsed = JSON.parse(body.toString("utf8")) as { method: string } | { method: string }[];
        for (const call of Array.isArray(parsed) ? parsed : [parsed]) add(front.calls, call.method);
      } catch {
        add(front.calls, "(unparsed)");
      }
      fetch(nodeUrl, { method: "POST", headers: { "content-type": "application/json" }, body }).then(
        async (answer) => {
          response.writeHead(answer.status, { "content-type": "application/json" });
          response.end(Buffer.from(await answer.arrayBuffer()));
        },
        () => {
          response.writeHead(502);
          response.end();
        },
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  front.url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  front.close = async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return front;
}
