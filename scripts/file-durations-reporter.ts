// A node:test reporter beside the spec reporter (scripts/test-service.ts): records how long each test
// file took, from its start to its end in its own process, and writes them as JSON ({ file: ms }, paths
// relative to the working directory, the repository under test-service.ts) to the destination given with it.
import path from "node:path";

interface FileEvent {
  type: string;
  data: { nesting: number; name: string; file?: string; details?: { duration_ms?: number } };
}

export default async function* fileDurations(source: AsyncIterable<FileEvent>): AsyncGenerator<string> {
  const durations: Record<string, number> = {};
  for await (const event of source) {
    const { data } = event;
    // A file's own entry: at the top, named after the file itself.
    if (event.type === "test:complete" && data.nesting === 0 && data.file !== undefined && path.resolve(data.name) === data.file) {
      durations[path.relative(process.cwd(), data.file)] = Math.round(data.details?.duration_ms ?? 0);
    }
  }
  yield `${JSON.stringify(durations, null, 2)}\n`;
}
