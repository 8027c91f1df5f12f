// Many official TypeScript SDK clients at once on `memidx mcp --http`, for
// tests/integration/mcp_ts.rs.
//
// Usage: node many.mjs URL CLIENTS CALLS
//
// URL is a running server's endpoint (http://127.0.0.1:PORT/mcp, no token).
// The script opens CLIENTS sessions at once, the SDK's two generations in
// turn, each on a client (and connections) of its own, and makes CALLS tool
// calls in each, one after another: `search`, `get` of the search's first
// chunk, `status`, in turn. One more client calls `reindex` again and again
// until the others are done. It prints one JSON document: the calls
// answered, those that failed (an error result or an exception) with the
// first few messages, the re-indexes run, and the seconds it took.

import { GENERATIONS } from "./sdk.mjs";

const [url, clients, calls] = [process.argv[2], Number(process.argv[3]), Number(process.argv[4])];
const QUERIES = ["replication lag", "INC-2023-Q4-011", "billing timeouts", "canary deploys"];
const report = { answered: 0, failed: 0, errors: [], reindexes: 0 };

function failed(who, err) {
  report.failed += 1;
  if (report.errors.length < 5) report.errors.push(`${who}: ${err}`);
}

/** A connected client of generation `generation`. */
async function connect(generation, number) {
  const sdk = GENERATIONS[generation]();
  const client = new sdk.Client({ name: `memidx-many-${number}`, version: "1.0.0" }, sdk.options);
  await client.connect(new sdk.Http(new URL(url)));
  return client;
}

/** One tool call; its structured content, or a thrown error. */
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) throw new Error(`${name}: ${JSON.stringify(result.content)}`);
  return result.structuredContent;
}

async function drive(number) {
  const who = `client ${number}`;
  let client;
  try {
    client = await connect(number % 2 ? "v2" : "v1", number);
  } catch (err) {
    failed(who, err);
    return;
  }
  let last = null;
  for (let i = 0; i < calls; i++) {
    try {
      const kind = i % 3;
      if (kind === 0 || (kind === 1 && last === null)) {
        const found = await call(client, "search", { query: QUERIES[(number + i) % QUERIES.length] });
        last = found.results.length ? found.results[0].chunk_id : null;
      } else if (kind === 1) {
        await call(client, "get", { chunk_id: last });
      } else {
        await call(client, "status", {});
      }
      report.answered += 1;
    } catch (err) {
      failed(who, err);
    }
  }
  await client.close();
}

async function rewrite(done) {
  const client = await connect("v2", clients);
  while (!done.value) {
    try {
      await call(client, "reindex", { full: true });
      report.reindexes += 1;
    } catch (err) {
      failed("reindexer", err);
    }
  }
  await client.close();
}

const started = performance.now();
const done = { value: false };
const rewriting = rewrite(done);
await Promise.all(Array.from({ length: clients }, (_, n) => drive(n)));
done.value = true;
await rewriting;
report.seconds = (performance.now() - started) / 1000;
process.stdout.write(JSON.stringify(report) + "\n");
