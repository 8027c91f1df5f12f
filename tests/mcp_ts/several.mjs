// A real MCP client session against `memidx mcp` serving two indexes, for
// tests/integration/several_mcp.rs: the official TypeScript SDK, either
// generation on npm (whose clients validate every structured result
// against the tool's outputSchema with ajv), spawns
// `memidx mcp --index notes=DIR/notes --index work=DIR/work` on stdio, calls
// every tool and prints one JSON document of what it saw.
//
// Usage: node several.mjs v1|v2 MEMIDX_BINARY DIR
//
// The packages are loaded as sdk.mjs says.

import { join } from "node:path";

import { GENERATIONS } from "./sdk.mjs";

async function session(generation, memidx, dir) {
  const sdk = GENERATIONS[generation]();
  const args = ["mcp", "--index", `notes=${join(dir, "notes")}`, "--index", `work=${join(dir, "work")}`];
  const transport = new sdk.Stdio({ command: memidx, args, cwd: dir });
  const client = new sdk.Client({ name: "memidx-test", version: "0" }, sdk.options);
  await client.connect(transport);
  const out = { generation };
  /** A tools/call through the SDK (which validates the structured result
   *  against the outputSchema); an error result becomes `{ error }`. */
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) return { error: result.content[0]?.text };
    return result.structuredContent;
  };
  const { tools } = await client.listTools();
  const search = tools.find((t) => t.name === "search");
  out.search_index_names = search.inputSchema.properties.indexes.items.enum;
  const both = await call("search", { query: "database failover replication", top_k: 10 });
  out.both_ids = both.results.map((r) => r.chunk_id);
  const work = await call("search", { query: "database failover replication", top_k: 10, indexes: ["work"] });
  out.work_ids = work.results.map((r) => r.chunk_id);
  out.unknown_index = (await call("search", { query: "x", indexes: ["nope"] })).error ?? null;
  const first = both.results[0];
  const got = await call("get", { chunk_id: first.chunk_id });
  out.get_same_text = got.text === first.text;
  out.get_id = got.chunk_id;
  const lines = await call("get", { path: first.source, from: 1, to: 2 });
  out.get_lines = lines.lines;
  const explained = await call("explain", { query: "database failover", top_k: 3, indexes: ["notes", "work"] });
  out.explain_ids = explained.results.map((r) => r.chunk_id);
  const status = await call("status", {});
  out.status_names = status.indexes.map((s) => s.name);
  out.status_files = status.indexes.map((s) => s.status.counts.files);
  const remembered = await call("remember", {
    text: "The zebra-crossing drill happens on Fridays.",
    title: "Zebra drill",
    into: "work",
  });
  out.remembered_ids = remembered.chunk_ids;
  const found = await call("search", { query: "zebra-crossing drill", top_k: 3 });
  out.found_after_remember = found.results.map((r) => r.chunk_id);
  const reindexed = await call("reindex", { index: "notes" });
  out.reindex_up_to_date = reindexed.up_to_date;
  await client.close();
  return out;
}

const [generation, memidx, dir] = process.argv.slice(2);
process.stdout.write(`${JSON.stringify(await session(generation, memidx, dir))}\n`);
