"""A real MCP client session against `memidx mcp`, for tests/integration/mcp.rs.

Usage: python mcp_client.py MEMIDX_BINARY CORPUS_DIR [URL]

CORPUS_DIR is a temporary, already indexed copy of fixtures/corpus (the
script edits it). The script drives the server with the official Python SDK
(the `mcp` package from PyPI): over stdio, spawning `memidx mcp`, or, given
URL, over Streamable HTTP to a `memidx mcp --http` already serving
CORPUS_DIR. Over stdio it then goes once more with raw JSON-RPC lines for
the malformed messages the SDK cannot send. It prints one JSON document of
what it saw; the Rust test asserts on its exact values.
"""

import asyncio
import contextlib
import json
import subprocess
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

INCIDENT = "incidents/2023/q4/billing-month-end-timeouts.md"


def dump(model):
    """A result of the SDK as the JSON the server sent (camelCase keys),
    whatever the SDK's attribute names are (they changed in mcp 2)."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def structured(result):
    """The structured content of a successful tool result."""
    assert not result.get("isError"), result["content"]
    return result["structuredContent"]


def error_text(result):
    """The message of a tool error."""
    assert result.get("isError"), result
    return result["content"][0]["text"]


@contextlib.asynccontextmanager
async def connect(memidx, corpus, url, indexes=None):
    """The SDK's read and write streams: to the server at URL, or to a
    `memidx mcp` it spawns on stdio in CORPUS, serving `indexes` (the
    `--index` values; CORPUS alone by default)."""
    if url:
        async with streamable_http_client(url) as streams:
            yield streams[0], streams[1]
    else:
        args = ["mcp"]
        for index in indexes or [corpus]:
            args += ["--index", index]
        params = StdioServerParameters(command=memidx, args=args, cwd=corpus)
        async with stdio_client(params) as (read, write):
            yield read, write


async def session_checks(memidx, corpus, url):
    out = {}
    async with connect(memidx, corpus, url) as (read, write):
        async with ClientSession(read, write) as session:
            init = dump(await session.initialize())
            out["protocol_version"] = init["protocolVersion"]
            out["server"] = init["serverInfo"]["name"]
            out["has_instructions"] = bool(init.get("instructions"))

            listed = dump(await session.list_tools())["tools"]
            tools = {t["name"]: t for t in listed}
            out["tools"] = {
                t["name"]: {
                    "annotations": {k: v for k, v in t["annotations"].items() if k != "title"},
                    "required": t["inputSchema"].get("required", []),
                    "has_output_schema": "outputSchema" in t,
                }
                for t in listed
            }
            validated = []

            async def call(name, arguments):
                result = dump(await session.call_tool(name, arguments))
                if not result.get("isError"):
                    # The SDK checks too; this names the tool on failure.
                    # Both drafts clients validate with read the schema alike.
                    schema = tools[name]["outputSchema"]
                    for draft in (jsonschema.Draft7Validator, jsonschema.Draft202012Validator):
                        draft.check_schema(schema)
                        draft(schema).validate(result["structuredContent"])
                    validated.append(name)
                    assert result["content"][0]["type"] == "text" and result["content"][0]["text"]
                return result

            # An exact identifier ranks its chunk first.
            found = structured(await call("search", {"query": "INC-2023-Q4-011", "top_k": 3}))
            out["identifier_ids"] = [r["chunk_id"] for r in found["results"]]
            first = found["results"][0]
            out["search_flags"] = [found["truncated"], found["omitted"]]

            # A filter keeps the other environment out: each result's
            # environments, as the distinct lists seen.
            envs = {}
            for env in ["production", "staging"]:
                filtered = structured(
                    await call(
                        "search",
                        {"query": "connection pool exhausted", "top_k": 20,
                         "filter": {"environment": env}},
                    )
                )
                envs[env] = sorted(
                    {tuple(r["metadata"].get("environment", [])) for r in filtered["results"]}
                )
            out["filtered_environments"] = envs

            # A small budget: whole results while they fit, then truncated.
            small = structured(
                await call("search", {"query": "INC-2023-Q4-011", "top_k": 5, "max_chars": 1000})
            )
            out["budget"] = {
                "ids": [r["chunk_id"] for r in small["results"]],
                "truncated": small["truncated"],
                "omitted": small["omitted"],
                "chars": sum(len(r["text"]) for r in small["results"]),
            }
            bare = structured(
                await call("search", {"query": "INC-2023-Q4-011", "top_k": 2, "include_text": False})
            )
            out["bare_has_text"] = any("text" in r for r in bare["results"])

            # get: the chunk's text equals search's; lines of a file; refusals.
            got = structured(await call("get", {"chunk_id": first["chunk_id"]}))
            out["get_chunk_equals_search"] = got["text"] == first["text"] and got["lines"] == first["lines"]
            lines = structured(await call("get", {"path": INCIDENT, "from": 13, "to": 15}))
            out["get_lines"] = {"lines": lines["lines"], "total_lines": lines["total_lines"],
                                "text": lines["text"]}
            out["get_dotdot"] = error_text(await call("get", {"path": "../" + INCIDENT}))
            out["get_unknown"] = error_text(await call("get", {"chunk_id": INCIDENT + "#99"}))

            explained = structured(await call("explain", {"query": "INC-2023-Q4-011", "top_k": 2}))
            out["explain_ids"] = [r["chunk_id"] for r in explained["results"]]
            one = structured(
                await call("explain", {"query": "HTTP 504", "chunk_id": first["chunk_id"]})
            )
            out["explain_one"] = [r["chunk_id"] for r in one["results"]]

            status = structured(await call("status", {}))
            out["status_before"] = {"generation": status["generation"],
                                    "changed": status["stale"]["changed"]}

            # Wrong argument types are tool errors; the session goes on.
            out["bad_type"] = error_text(await call("search", {"query": "x", "top_k": "3"}))
            out["unknown_field"] = error_text(await call("search", {"query": "x", "colour": 1}))
            try:
                await session.call_tool("nope", {})
                out["unknown_tool"] = None
            except Exception as err:  # McpError
                out["unknown_tool"] = str(err)

            # A file changes and `memidx index` runs beside the server.
            path = f"{corpus}/{INCIDENT}"
            with open(path, "a", encoding="utf-8") as f:
                f.write("\n## Aftermath\n\nThe quokkafrost runbook now covers month-end load.\n")
            subprocess.run([memidx, "index", corpus, "--quiet"], check=True)
            fresh = structured(await call("search", {"query": "quokkafrost", "top_k": 1, "mode": "sparse"}))
            out["after_index"] = {
                "ids": [r["chunk_id"] for r in fresh["results"]],
                "generation": structured(await call("status", {}))["generation"],
            }

            # reindex, in the session itself.
            with open(f"{corpus}/notes/zz-added.md", "w", encoding="utf-8") as f:
                f.write("# Added\n\nThe wombatglass checklist.\n")
            reindexed = structured(await call("reindex", {}))
            again = structured(await call("search", {"query": "wombatglass", "top_k": 1, "mode": "sparse"}))
            out["after_reindex"] = {
                "generation": reindexed["generation"],
                "up_to_date": reindexed["up_to_date"],
                "ids": [r["chunk_id"] for r in again["results"]],
            }
            # Time bounds and the recency list, as the search tool takes them.
            dated = structured(
                await call("search", {"query": "rollback", "top_k": 3, "since": "2024-01-01",
                                      "until": "2024-12-31", "recency_weight": 0.1})
            )
            out["dated"] = sorted({(r["source"], r["date"]["value"]) for r in dated["results"]})
            out["dated_ranks"] = sorted(dated["results"][0]["ranks"])
            out["bad_since"] = error_text(await call("search", {"query": "x", "since": "soon"}))

            # remember: a note written and searchable at once.
            remembered = structured(
                await call("remember", {"text": "The numbat ledger was rotated.", "title": "Numbat rotation",
                                        "meta": {"service": "billing-service"}})
            )
            noted = structured(await call("search", {"query": "numbat", "top_k": 1, "mode": "sparse"}))
            out["remembered"] = {
                "path_tail": remembered["path"].split("-", 3)[-1],
                "ids_match": remembered["chunk_ids"] == [r["chunk_id"] for r in noted["results"]],
                "service": noted["results"][0]["metadata"]["service"],
            }
            out["remember_outside"] = error_text(await call("remember", {"text": "x", "dir": "../out"}))
            out["validated"] = sorted(set(validated))
    return out


def raw_checks(memidx, corpus, protocol_version):
    """Raw JSON-RPC lines: malformed input gets JSON-RPC's errors (a parse
    error for text that is not JSON) and the session goes on; --read-only
    has no reindex; end of input ends it with exit 0."""
    server = subprocess.Popen(
        [memidx, "mcp", "--read-only", "--index", corpus],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )

    def send(line):
        server.stdin.write(line + "\n")
        server.stdin.flush()

    def receive():
        line = server.stdout.readline()
        return json.loads(line)

    out = {}
    send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": protocol_version, "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}}))
    out["initialize_version"] = receive()["result"]["protocolVersion"]
    send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    send("{this is not json")
    parse_error = receive()
    out["parse_error"] = [parse_error["id"], parse_error["error"]["code"]]
    send(json.dumps({"jsonrpc": "2.0", "id": 2, "method": 7}))
    out["invalid_request"] = receive()["error"]["code"]
    send(json.dumps({"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}))
    out["unknown_method"] = receive()["error"]["code"]
    send(json.dumps({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
                     "params": {"name": "reindex", "arguments": {}}}))
    out["read_only_reindex"] = receive()["error"]["code"]
    send(json.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
    out["read_only_tools"] = [t["name"] for t in receive()["result"]["tools"]]
    send(json.dumps({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
                     "params": {"name": "search", "arguments": {"query": "INC-2023-Q4-011", "top_k": 1}}}))
    out["search_after_errors"] = receive()["result"]["structuredContent"]["results"][0]["chunk_id"]
    server.stdin.close()
    out["leftover_stdout"] = server.stdout.read()
    out["exit_code"] = server.wait(timeout=30)
    out["stderr_lines"] = len(server.stderr.read().splitlines())
    return out


def main():
    memidx, corpus = sys.argv[1], sys.argv[2]
    url = sys.argv[3] if len(sys.argv) > 3 else None
    out = asyncio.run(session_checks(memidx, corpus, url))
    if url is None:
        out["raw"] = raw_checks(memidx, corpus, out["protocol_version"])
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    print()


if __name__ == "__main__":
    main()
