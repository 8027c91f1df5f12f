"""Many official-SDK clients at once on `memidx mcp --http`, for tests/integration/mcp_http.rs.

Usage: python mcp_many.py URL CLIENTS CALLS

URL is a running server's endpoint (http://127.0.0.1:PORT/mcp, no token).
With the official Python SDK (the `mcp` package from PyPI) the script opens
CLIENTS sessions at once, each on a client (and connections) of its own, and
makes CALLS tool calls in each, one after another: `search`, `get` of the
search's first chunk, `status`, in turn. It prints one JSON document: the
calls answered, those that failed (an error result or an exception) with
the first few messages, and the seconds it took.
"""

import asyncio
import json
import sys
import time

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

def dump(model):
    """A result of the SDK as the JSON the server sent (camelCase keys)."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


QUERIES = ["replication lag", "INC-2023-Q4-011", "billing timeouts", "canary deploys"]


async def client(url, number, calls, report):
    http = httpx2.AsyncClient(timeout=httpx2.Timeout(120.0))
    async with http, streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            last = None
            for i in range(calls):
                kind = i % 3
                try:
                    if kind == 0 or (kind == 1 and last is None):
                        name, arguments = "search", {"query": QUERIES[(number + i) % len(QUERIES)]}
                    elif kind == 1:
                        name, arguments = "get", {"chunk_id": last}
                    else:
                        name, arguments = "status", {}
                    result = dump(await session.call_tool(name, arguments))
                    if result.get("isError"):
                        raise RuntimeError(f"{name}: {result['content']}")
                    if name == "search":
                        found = result["structuredContent"]["results"]
                        last = found[0]["chunk_id"] if found else None
                    report["answered"] += 1
                except Exception as err:  # noqa: BLE001 (counted and reported)
                    report["failed"] += 1
                    if len(report["errors"]) < 5:
                        report["errors"].append(f"client {number}: {err!r}")


async def main(url, clients, calls):
    report = {"answered": 0, "failed": 0, "errors": []}
    started = time.monotonic()
    await asyncio.gather(*(client(url, n, calls, report) for n in range(clients)))
    report["seconds"] = time.monotonic() - started
    print(json.dumps(report))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
