"""Searches beside a re-index on `memidx mcp --http`, for tests/integration/mcp_http.rs.

Usage: python mcp_concurrent.py URL TOKEN QUERY

URL is a running server's endpoint (http://127.0.0.1:PORT/mcp, bearer TOKEN)
over an indexed folder. With the official Python SDK (the `mcp` package from
PyPI) the script opens two sessions: the writer calls `reindex` with `full`
(the whole index written again), and while that call is in flight the reader
calls `search` for QUERY, then `status`, again and again until the
`reindex` answer arrives, and then once more each. Then the reader makes
REMEMBERS `remember` calls at once, each a note with a word of its own, and
searches each word. It prints one JSON document: the generation before, what
`reindex` answered, the searches answered while it ran and their result
counts, the generations `status` gave meanwhile, the failures, those after
it, and how many notes were indexed and found. The Rust test asserts on
them.
"""

import asyncio
import json
import sys

import httpx2

REMEMBERS = 50
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


def dump(model):
    """A result of the SDK as the JSON the server sent (camelCase keys)."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


async def call(session, name, arguments):
    """The structured content of a tool call; raises on an error result."""
    result = dump(await session.call_tool(name, arguments))
    if result.get("isError"):
        raise RuntimeError(f"{name}: {result['content']}")
    return result["structuredContent"]


async def main(url, token, query):
    report = {"during": [], "statuses": [], "failures": []}

    def client():
        return httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)
        )

    async with client() as w, streamable_http_client(url, http_client=w) as (wr, ww), \
            client() as r, streamable_http_client(url, http_client=r) as (rr, rw):
        async with ClientSession(wr, ww) as writer, ClientSession(rr, rw) as reader:
            await writer.initialize()
            await reader.initialize()
            report["before"] = (await call(reader, "status", {}))["generation"]
            reindex = asyncio.create_task(call(writer, "reindex", {"full": True}))
            # Give the write its start before the first read.
            await asyncio.sleep(0.2)
            while not reindex.done():
                try:
                    found = await call(reader, "search", {"query": query, "top_k": 5})
                    if not reindex.done():
                        report["during"].append(len(found["results"]))
                    status = await call(reader, "status", {})
                    if not reindex.done():
                        report["statuses"].append(status["generation"])
                except Exception as err:  # noqa: BLE001 (reported, not raised)
                    report["failures"].append(str(err))
            report["reindex"] = (await reindex)["generation"]
            found = await call(reader, "search", {"query": query, "top_k": 5})
            report["after"] = {
                "results": len(found["results"]),
                "generation": (await call(reader, "status", {}))["generation"],
            }
            notes = await asyncio.gather(*(
                call(reader, "remember", {"text": f"Note {i} of many at once, marker MCPNOTE{i}X."})
                for i in range(REMEMBERS)))
            report["remembered"] = sum(1 for note in notes if note["indexed"])
            found = 0
            for i in range(REMEMBERS):
                hits = await call(reader, "search", {"query": f"MCPNOTE{i}X", "mode": "sparse"})
                found += len(hits["results"])
            report["found"] = found
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
