// A stand-in for the service process in the orphan test: starts the indexer with the options in the
// INDEXER_OPTIONS environment variable (JSON), prints Ponder's pid once it is ready, then idles until
// it is killed.
import { startIndexer } from "../../src/stack/indexer-process.ts";
import type { IndexerOptions } from "../../src/stack/indexer-process.ts";

const options = JSON.parse(process.env.INDEXER_OPTIONS ?? "{}") as IndexerOptions;
const indexer = await startIndexer(options);
process.stdout.write(`${JSON.stringify({ ponderPid: indexer.process.pid, url: indexer.url })}\n`);
setInterval(() => {}, 60_000);
