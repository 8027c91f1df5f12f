"""A real MCP client session against `memidx mcp` serving two indexes, for
tests/integration/several_mcp.rs.

Usage: python mcp_several.py MEMIDX_BINARY DIR [URL]

DIR holds two indexed folders, `notes` and `work`. The official Python SDK
(the `mcp` package from PyPI) drives `memidx mcp --index notes=DIR/notes
--index work=DIR/work`: over stdio, spawning it, or, given URL, over
Streamable HTTP to such a server already listening. Every structured result
is validated against its tool's output schema under draft-07 and 2020-12.
It prints one JSON document of what it saw; the Rust test asserts on it.
"""

import asyncio
import json
import os
import sys

import jsonschema
from mcp import ClientSession

from mcp_client import connect, dump


async def session(memidx, root, url):
    out = {}
    indexes = [f"{name}={os.path.join(root, name)}" for name in ("notes", "work")]
    async with connect(memidx, root, url, indexes) as (read, write):
        async with ClientSession(read, write) as client:
            await client.initialize()
            tools = {t["name"]: t for t in dump(await client.list_tools())["tools"]}
            out["search_index_names"] = tools["search"]["inputSchema"]["properties"]["indexes"]["items"]["enum"]

            async def call(name, arguments):
                result = dump(await client.call_tool(name, arguments))
                if result.get("isError"):
                    return {"error": result["content"][0]["text"]}
                schema = tools[name]["outputSchema"]
                for draft in (jsonschema.Draft7Validator, jsonschema.Draft202012Validator):
                    draft.check_schema(schema)
                    draft(schema).validate(result["structuredContent"])
                return result["structuredContent"]

            both = await call("search", {"query": "database failover replication", "top_k": 10})
            out["both_ids"] = [r["chunk_id"] for r in both["results"]]
            one = await call("search", {"query": "database failover replication", "top_k": 10,
                                        "indexes": ["work"]})
            out["work_ids"] = [r["chunk_id"] for r in one["results"]]
            out["unknown_index"] = (await call("search", {"query": "x", "indexes": ["nope"]}))["error"]
            first = both["results"][0]
            got = await call("get", {"chunk_id": first["chunk_id"]})
            out["get_same_text"] = got["text"] == first["text"]
            out["get_id"] = got["chunk_id"]
            lines = await call("get", {"path": first["source"], "from": 1, "to": 2})
            out["get_lines"] = lines["lines"]
            explained = await call("explain", {"query": "database failover", "top_k": 3,
                                               "indexes": ["notes", "work"]})
            out["explain_ids"] = [r["chunk_id"] for r in explained["results"]]
            status = await call("status", {})
            out["status_names"] = [s["name"] for s in status["indexes"]]
            out["status_files"] = [s["status"]["counts"]["files"] for s in status["indexes"]]
            remembered = await call("remember", {"text": "The zebra-crossing drill happens on Fridays.",
                                                 "title": "Zebra drill", "into": "work"})
            out["remembered_ids"] = remembered["chunk_ids"]
            found = await call("search", {"query": "zebra-crossing drill", "top_k": 3})
            out["found_after_remember"] = [r["chunk_id"] for r in found["results"]]
            reindexed = await call("reindex", {"index": "notes"})
            out["reindex_up_to_date"] = reindexed["up_to_date"]
    return out


def main():
    memidx, root = sys.argv[1], sys.argv[2]
    url = sys.argv[3] if len(sys.argv) > 3 else None
    print(json.dumps(asyncio.run(session(memidx, root, url))))


if __name__ == "__main__":
    main()
