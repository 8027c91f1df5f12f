// A real MCP client session against `memidx mcp`, for
// tests/integration/mcp_ts.rs: the official TypeScript SDK, either
// generation on npm, drives the server and the script prints one JSON
// document of what it saw; the Rust test asserts on its exact values.
//
// Usage: node client.mjs v1|v2 stdio MEMIDX_BINARY CORPUS_DIR
//        node client.mjs v1|v2 http URL MEMIDX_BINARY CORPUS_DIR
//
// v1 is `@modelcontextprotocol/sdk`, v2 `@modelcontextprotocol/client`
// (asked to negotiate the newest protocol it can); both clients validate
// every structured result against the tool's outputSchema with ajv. With
// `stdio` the client spawns `memidx mcp` itself; with `http` the server is
// already listening at URL (sent $MEMIDX_MCP_TOKEN as a bearer token when
// that is set) and MEMIDX_BINARY only runs the side `memidx index`.
// CORPUS_DIR is a temporary, already indexed copy of fixtures/corpus (the
// script edits it). The packages are loaded as sdk.mjs says.

import { execFileSync } from "node:child_process";
import { appendFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { GENERATIONS } from "./sdk.mjs";

const INCIDENT = "incidents/2023/q4/billing-month-end-timeouts.md";

/** An error as the report shows it: its JSON-RPC code (if any) and message. */
function describe(err) {
  return { code: err?.code ?? null, message: String(err?.message ?? err) };
}

/** The methods the client sends, and the protocol version an `initialize`
 *  answer names: seen on the transport, as v1 keeps neither. */
function spy(transport) {
  const wire = { sent: new Set(), initialized: null };
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    if (message.method) wire.sent.add(message.method);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, "onmessage", {
    get: () => handler,
    set: (next) => {
      handler = next && ((message, extra) => {
        wire.initialized ??= message.result?.protocolVersion ?? null;
        return next(message, extra);
      });
    },
  });
  return wire;
}

/** The `Authorization` header for $MEMIDX_MCP_TOKEN, if set. */
function bearer() {
  const token = process.env.MEMIDX_MCP_TOKEN;
  return token ? { Authorization: `Bearer ${token}` } : {};
}

async function session(generation, transportArgs, memidx, corpus) {
  const sdk = GENERATIONS[generation]();
  const transport =
    transportArgs.kind === "stdio"
      ? new sdk.Stdio({ command: memidx, args: ["mcp", "--index", corpus], cwd: corpus })
      : new sdk.Http(new URL(transportArgs.url), { requestInit: { headers: bearer() } });
  const wire = spy(transport);
  // The SDK's own validator, counting the structured results it checks.
  const ajv = new sdk.Validator();
  let validated = 0;
  const jsonSchemaValidator = {
    getValidator: (schema) => {
      const validate = ajv.getValidator(schema);
      return (input) => (validated++, validate(input));
    },
  };
  const client = new sdk.Client(
    { name: "memidx-test", version: "0" },
    { ...sdk.options, jsonSchemaValidator },
  );
  const out = { generation };
  await client.connect(transport);
  out.protocol_version = client.getNegotiatedProtocolVersion?.() ?? wire.initialized;
  out.era = client.getProtocolEra?.() ?? null;
  out.server = client.getServerVersion()?.name ?? null;
  out.has_instructions = Boolean(client.getInstructions());

  /** Runs one check; its value, or the error it threw, goes to `out[key]`. */
  async function check(key, run) {
    try {
      out[key] = await run();
    } catch (err) {
      out[key] = { error: describe(err) };
    }
  }

  const accepted = new Set();
  let results = 0;
  const rejected = {};
  /** A tools/call through the SDK; a result the client refuses (e.g. one
   *  not matching the outputSchema) is recorded under the tool's name. */
  async function call(name, args) {
    try {
      const result = await client.callTool({ name, arguments: args });
      if (!result.isError) {
        const [first] = result.content;
        if (first?.type !== "text" || !first.text) throw new Error(`${name}: no text content`);
        accepted.add(name);
        results++;
      }
      return result;
    } catch (err) {
      rejected[name] ??= describe(err).message;
      throw err;
    }
  }
  const structured = async (name, args) => {
    const result = await call(name, args);
    if (result.isError) throw new Error(`${name} failed: ${result.content[0]?.text}`);
    return result.structuredContent;
  };
  const errorText = async (name, args) => {
    const result = await call(name, args);
    if (!result.isError) throw new Error(`${name} ${JSON.stringify(args)} succeeded`);
    return result.content[0].text;
  };
  const ids = (found) => found.results.map((r) => r.chunk_id);
  /** The distinct lists of strings among `lists`, sorted. */
  const distinct = (lists) => {
    const byKey = new Map(lists.map((list) => [list.join("\0"), list]));
    return [...byKey.keys()].sort().map((key) => byKey.get(key));
  };

  await check("ping", async () => (await client.ping(), "ok"));
  await check("tools", async () => {
    const { tools } = await client.listTools();
    return Object.fromEntries(
      tools.map((t) => {
        const { title, ...annotations } = t.annotations ?? {};
        const required = t.inputSchema.required ?? [];
        return [t.name, { annotations, required, has_output_schema: "outputSchema" in t }];
      }),
    );
  });

  let first;
  await check("identifier_ids", async () => {
    const found = await structured("search", { query: "INC-2023-Q4-011", top_k: 3 });
    first = found.results[0];
    out.search_flags = [found.truncated, found.omitted];
    return ids(found);
  });
  // Each result's environments, as the distinct lists seen.
  await check("filtered_environments", async () => {
    const found = await structured("search", {
      query: "connection pool exhausted",
      top_k: 20,
      filter: { environment: "production" },
    });
    return distinct(found.results.map((r) => r.metadata.environment ?? []));
  });
  await check("budget", async () => {
    const small = await structured("search", { query: "INC-2023-Q4-011", top_k: 5, max_chars: 1000 });
    return {
      ids: ids(small),
      truncated: small.truncated,
      omitted: small.omitted,
      chars: small.results.reduce((sum, r) => sum + [...r.text].length, 0),
    };
  });
  await check("bare_has_text", async () => {
    const bare = await structured("search", { query: "INC-2023-Q4-011", top_k: 2, include_text: false });
    return bare.results.some((r) => "text" in r);
  });
  await check("dated", async () => {
    const dated = await structured("search", {
      query: "rollback",
      top_k: 3,
      since: "2024-01-01",
      until: "2024-12-31",
      recency_weight: 0.1,
    });
    out.dated_ranks = Object.keys(dated.results[0].ranks).sort();
    return distinct(dated.results.map((r) => [r.source, r.date.value]));
  });

  await check("get_chunk_equals_search", async () => {
    const got = await structured("get", { chunk_id: first.chunk_id });
    return got.text === first.text && JSON.stringify(got.lines) === JSON.stringify(first.lines);
  });
  await check("get_lines", async () => {
    const got = await structured("get", { path: INCIDENT, from: 13, to: 15 });
    return { lines: got.lines, total_lines: got.total_lines, text: got.text };
  });
  await check("explain_ids", async () =>
    ids(await structured("explain", { query: "INC-2023-Q4-011", top_k: 2 })),
  );
  await check("explain_one", async () =>
    ids(await structured("explain", { query: "HTTP 504", chunk_id: first.chunk_id })),
  );
  await check("status_before", async () => {
    const status = await structured("status", {});
    return { generation: status.generation, changed: status.stale.changed };
  });

  // Wrong arguments are tool errors and an unknown tool a protocol error;
  // the session goes on.
  await check("bad_type", () => errorText("search", { query: "x", top_k: "3" }));
  await check("unknown_field", () => errorText("search", { query: "x", colour: 1 }));
  await check("unknown_tool", async () => {
    try {
      await client.callTool({ name: "nope", arguments: {} });
      return null;
    } catch (err) {
      return describe(err);
    }
  });
  await check("after_errors", async () =>
    ids(await structured("search", { query: "INC-2023-Q4-011", top_k: 1 })),
  );

  // A file changes and `memidx index` runs beside the server.
  await check("after_index", async () => {
    const aftermath = "\n## Aftermath\n\nThe quokkafrost runbook now covers month-end load.\n";
    appendFileSync(join(corpus, INCIDENT), aftermath);
    execFileSync(memidx, ["index", corpus, "--quiet"], { stdio: ["ignore", "ignore", "inherit"] });
    const fresh = await structured("search", { query: "quokkafrost", top_k: 1, mode: "sparse" });
    return { ids: ids(fresh), generation: (await structured("status", {})).generation };
  });
  // reindex, in the session itself.
  await check("after_reindex", async () => {
    writeFileSync(join(corpus, "notes/zz-added.md"), "# Added\n\nThe wombatglass checklist.\n");
    const reindexed = await structured("reindex", {});
    const again = await structured("search", { query: "wombatglass", top_k: 1, mode: "sparse" });
    return { generation: reindexed.generation, up_to_date: reindexed.up_to_date, ids: ids(again) };
  });
  // remember: a note written and searchable at once.
  await check("remembered", async () => {
    const remembered = await structured("remember", {
      text: "The numbat ledger was rotated.",
      title: "Numbat rotation",
      meta: { service: "billing-service" },
    });
    const noted = await structured("search", { query: "numbat", top_k: 1, mode: "sparse" });
    return {
      path_tail: remembered.path.split("-").slice(3).join("-"),
      ids_match: JSON.stringify(remembered.chunk_ids) === JSON.stringify(ids(noted)),
      service: noted.results[0].metadata.service,
    };
  });

  // The lists memidx need not offer: what each client makes of them.
  for (const [key, list] of [
    ["resources", () => client.listResources()],
    ["prompts", () => client.listPrompts()],
  ]) {
    await check(key, async () => {
      const listed = await list();
      return { listed: listed[key].length, sent: wire.sent.has(`${key}/list`) };
    });
  }

  out.accepted = [...accepted].sort();
  out.rejected = rejected;
  out.validation = { results, validated };
  out.methods_sent = [...wire.sent].sort();
  await client.close();
  return out;
}

const [generation, kind, ...rest] = process.argv.slice(2);
const transportArgs = kind === "http" ? { kind, url: rest.shift() } : { kind };
const [memidx, corpus] = rest;
if (!GENERATIONS[generation] || !["stdio", "http"].includes(kind) || !corpus) {
  console.error("usage: node client.mjs v1|v2 stdio|http [URL] MEMIDX_BINARY CORPUS_DIR");
  process.exit(2);
}
const report = await session(generation, transportArgs, memidx, corpus);
process.stdout.write(JSON.stringify(report, null, 1) + "\n");
