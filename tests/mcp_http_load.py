"""Load on `memidx mcp --http` from real MCP clients, for tests/integration/mcp_http.rs.

Usage: python mcp_http_load.py URL TOKEN MEMIDX_BINARY CORPUS_DIR

URL is a running server's endpoint (http://127.0.0.1:PORT/mcp) over the
indexed CORPUS_DIR, TOKEN its bearer token. The script opens SESSIONS
sessions with the official Python SDK's Streamable HTTP client (the `mcp`
package from PyPI, 2.x) and makes CALLS_PER_SESSION mixed tool calls in
each, all sessions at once, while beside the server it re-indexes the folder
REINDEXES times with `memidx index DIR --quiet`, each run after changing a
file so that it makes a new generation.

The calls, in turn in every session:
  0. search with a metadata filter ({"environment": "production"} or
     "staging"): every result must carry that environment;
  1. get: by turns, a chunk id from the last filtered search (its text and
     lines must equal the search's: those files never change), or the
     marker chunk (below);
  2. explain of the last search's first chunk: it must explain that chunk,
     at the lines search gave;
  3. the marker search (below);
  4. status: its generation.

Generation consistency. One file, MARKER_PATH, changes with every re-index:
run i (1..REINDEXES) appends the word MARKERS[i-1] to it and sets its front
matter `markers: "i"`. Before any session starts the script writes it with
no word and `markers: "0"` and indexes once, so generation G0 holds i = 0;
after each run it asks `memidx status --json` for the generation and
requires G0 + i (one run, one generation). A generation is therefore known
by its marker count i, and every answer that shows the marker chunk carries
three independent witnesses of the generation that answered:

  - the chunk's text (the chunk store): exactly MARKERS[:i], in order;
  - its metadata `markers` (the metadata store): i;
  - for the marker search — query MARKERS[k-1] for some k in 1..REINDEXES,
    lists sparse and dense, filtered to MARKER_PATH and with keep_all (a
    marker not yet written is a word nothing matches) so that the dense list
    always returns the one chunk — whether the sparse list (the BM25 index)
    matched: it must match exactly when k <= i.

An answer mixing two generations (say the BM25 index of one and the chunk
store or metadata of the one before) breaks one of these equalities; each
answer is checked on its own, so the check does not depend on timing.
Across answers, with level = G0 + i (or status's generation):

  - in one session calls are made one after another, and the server never
    goes back to an older generation, so a session's levels never decrease;
  - a call started after an index run exited (and its generation was
    checked) must be answered from that generation or a newer one: the
    server checks before every call that what it opened is still live.

Phases: when CHECKPOINT calls have been answered, every session pauses
before its next call, the calls in flight finish, and the script prints
`checkpoint after-CHECKPOINT` and waits for a line on stdin (the Rust side
reads the server's RSS then); when all calls are answered it prints
`checkpoint end` and waits again, the sessions still open. Then it closes
them and prints its report as one JSON line: counts, the first failures and
inconsistencies, levels seen, and timings.
"""

import asyncio
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import httpx2
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

SESSIONS = 8
CALLS_PER_SESSION = 250
REINDEXES = 10
CHECKPOINT = 100
# Re-index i starts once this many calls (plus i - 1 times the step) are
# answered: all of them after the first checkpoint, with calls after the last.
REINDEX_FIRST = 250
REINDEX_STEP = 150

MARKER_PATH = "notes/zz-load-marker.md"
MARKER_CHUNK = MARKER_PATH + "#1"
MARKERS = [
    "zqmarkalpha", "zqmarkbravo", "zqmarkcharlie", "zqmarkdelta", "zqmarkecho",
    "zqmarkfoxtrot", "zqmarkgolf", "zqmarkhotel", "zqmarkindia", "zqmarkjuliet",
]
QUERIES = [
    "connection pool exhausted",
    "certificate rotation",
    "rollback procedure",
    "webhook backlog",
    "database failover",
    "timeouts during month-end invoicing",
    "max_connections",
    "on-call escalation",
]


def marker_text(count):
    words = " ".join(MARKERS[:count])
    return (
        f'---\ntitle: Load marker\nmarkers: "{count}"\n---\n'
        "# Load marker\n\nThe words below mark index generations.\n\n"
        f"{words}\n"
    )


def dump(model):
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


class Run:
    def __init__(self, url, token, memidx, corpus):
        self.url = url
        self.token = token
        self.memidx = memidx
        self.corpus = Path(corpus)
        self.calls = 0
        self.in_flight = 0
        self.failures = []
        self.failed = 0
        self.inconsistencies = []
        self.inconsistent = 0
        self.levels = set()
        self.marker_hits = 0
        self.marker_misses = 0
        self.generations = []
        self.published = 0  # the newest generation whose index run exited
        self.running = asyncio.Event()
        self.running.set()
        self.progress = asyncio.Condition()
        self.checkpoint_taken = False
        self.checkpoint_task = None
        self.reindex_ms = []

    # --- bookkeeping -------------------------------------------------

    def fail(self, what):
        self.failed += 1
        if len(self.failures) < 10:
            self.failures.append(what)

    def inconsistent_answer(self, what):
        self.inconsistent += 1
        if len(self.inconsistencies) < 10:
            self.inconsistencies.append(what)

    async def wait_for_calls(self, n):
        async with self.progress:
            await self.progress.wait_for(lambda: self.calls >= n)

    async def pause(self, label):
        """Waits for the calls in flight, says `checkpoint LABEL`, waits for stdin."""
        while self.in_flight:
            await asyncio.sleep(0.005)
        print(f"checkpoint {label}", flush=True)
        await asyncio.to_thread(sys.stdin.readline)

    async def checkpoint(self):
        await self.pause(f"after-{CHECKPOINT}")
        self.running.set()

    # --- the index runs beside the server ----------------------------

    def index_once(self, count):
        (self.corpus / MARKER_PATH).write_text(marker_text(count))
        started = time.monotonic()
        subprocess.run(
            [self.memidx, "index", str(self.corpus), "--quiet"], check=True, cwd=self.corpus
        )
        self.reindex_ms.append(round((time.monotonic() - started) * 1e3, 1))
        status = subprocess.run(
            [self.memidx, "status", "--json"],
            check=True, cwd=self.corpus, capture_output=True, text=True,
        )
        return json.loads(status.stdout)["generation"]

    async def reindexer(self):
        for i in range(1, REINDEXES + 1):
            await self.wait_for_calls(REINDEX_FIRST + (i - 1) * REINDEX_STEP)
            await self.running.wait()
            generation = await asyncio.to_thread(self.index_once, i)
            if generation != self.generations[0] + i:
                raise SystemExit(
                    f"index run {i} made generation {generation}, not "
                    f"{self.generations[0] + i}: the consistency check needs one per run"
                )
            self.generations.append(generation)
            self.published = generation

    # --- one session -------------------------------------------------

    def level_of_marker(self, chunk, where):
        """The generation a marker chunk (text and metadata) comes from,
        or None when its two witnesses disagree."""
        words = [w for w in chunk["text"].split() if w.startswith("zqmark")]
        count = int(chunk["metadata"]["markers"][0])
        if words != MARKERS[:count]:
            self.inconsistent_answer(
                f"{where}: metadata says markers={count}, text has {words}"
            )
            return None
        return self.generations[0] + count

    async def session(self, number):
        rng = random.Random(number)
        client = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {self.token}"}, timeout=httpx2.Timeout(60.0)
        )
        async with client, streamable_http_client(self.url, http_client=client) as (read, write):
            async with ClientSession(read, write) as session:
                init = dump(await session.initialize())
                assert init["serverInfo"]["name"] == "memidx", init
                last = None  # (query, filter, results) of the last filtered search
                level = 0  # the newest generation this session has seen
                for j in range(CALLS_PER_SESSION):
                    await self.running.wait()
                    kind = j % 5
                    env = "production" if (j // 5) % 2 == 0 else "staging"
                    query = QUERIES[rng.randrange(len(QUERIES))]
                    k = rng.randrange(1, REINDEXES + 1)
                    if kind == 0:
                        name, args = "search", {
                            "query": query, "top_k": 5, "filter": {"environment": env}}
                    elif kind == 1 and (j // 5) % 2 == 0 and last and last[2]:
                        pick = last[2][rng.randrange(len(last[2]))]
                        name, args = "get", {"chunk_id": pick["chunk_id"]}
                    elif kind == 1:
                        pick = None
                        name, args = "get", {"chunk_id": MARKER_CHUNK}
                    elif kind == 2 and last and last[2]:
                        first = last[2][0]
                        name, args = "explain", {
                            "query": last[0], "filter": last[1], "chunk_id": first["chunk_id"]}
                    elif kind == 2:
                        name, args = "explain", {"query": query, "top_k": 3}
                    elif kind == 3:
                        name, args = "search", {
                            "query": MARKERS[k - 1], "mode": "sparse,dense", "top_k": 1,
                            "filter": {"path": MARKER_PATH}, "keep_all": True}
                    else:
                        name, args = "status", {}
                    where = f"session {number} call {j} {name} {json.dumps(args)}"
                    floor = self.published
                    self.in_flight += 1
                    try:
                        result = dump(await session.call_tool(name, args))
                    except Exception as err:  # noqa: BLE001 - every failure counts
                        result = None
                        self.fail(f"{where}: {type(err).__name__}: {err}")
                    finally:
                        self.in_flight -= 1
                    if result is not None and result.get("isError"):
                        self.fail(f"{where}: tool error {result['content'][0]['text']}")
                        result = None
                    seen = None
                    if result is not None:
                        out = result["structuredContent"]
                        if kind == 0:
                            results = out["results"]
                            wrong = [r["chunk_id"] for r in results
                                     if env not in r["metadata"].get("environment", [])]
                            if wrong or not results:
                                self.inconsistent_answer(f"{where}: not {env} or none: {wrong}")
                            last = (query, {"environment": env}, results)
                        elif kind == 1 and pick is not None:
                            if out["text"] != pick["text"] or out["lines"] != pick["lines"]:
                                self.inconsistent_answer(
                                    f"{where}: get differs from search: {out['lines']} vs {pick['lines']}")
                        elif kind == 1:
                            seen = self.level_of_marker(out, where)
                        elif kind == 2 and "chunk_id" in args:
                            explained = out["results"]
                            if (len(explained) != 1 or explained[0]["chunk_id"] != args["chunk_id"]
                                    or explained[0]["lines"] != last[2][0]["lines"]):
                                self.inconsistent_answer(f"{where}: explained {explained}")
                        elif kind == 2:
                            if not out["results"]:
                                self.inconsistent_answer(f"{where}: nothing explained")
                        elif kind == 3:
                            results = out["results"]
                            if [r["chunk_id"] for r in results] != [MARKER_CHUNK]:
                                self.inconsistent_answer(f"{where}: results {results}")
                            else:
                                chunk = results[0]
                                seen = self.level_of_marker(chunk, where)
                                if seen is not None:
                                    count = seen - self.generations[0]
                                    sparse = (chunk.get("ranks") or {}).get("sparse") is not None
                                    if sparse != (k <= count):
                                        self.inconsistent_answer(
                                            f"{where}: BM25 {'matched' if sparse else 'missed'} "
                                            f"{MARKERS[k - 1]} in a chunk with markers={count}")
                                    if sparse:
                                        self.marker_hits += 1
                                    else:
                                        self.marker_misses += 1
                        else:
                            seen = out["generation"]
                    if seen is not None:
                        self.levels.add(seen)
                        if seen < level:
                            self.inconsistent_answer(
                                f"{where}: generation {seen} after this session saw {level}")
                        if seen < floor:
                            self.inconsistent_answer(
                                f"{where}: generation {seen} answered a call made after "
                                f"generation {floor} was live")
                        level = max(level, seen)
                    async with self.progress:
                        self.calls += 1
                        self.progress.notify_all()
                    if self.calls >= CHECKPOINT and not self.checkpoint_taken:
                        self.checkpoint_taken = True
                        self.running.clear()
                        self.checkpoint_task = asyncio.create_task(self.checkpoint())
                await self.all_done.wait()

    async def main(self):
        self.generations.append(await asyncio.to_thread(self.index_once, 0))
        self.published = self.generations[0]
        self.all_done = asyncio.Event()
        started = time.monotonic()
        sessions = [asyncio.create_task(self.session(n)) for n in range(SESSIONS)]
        reindexer = asyncio.create_task(self.reindexer())
        answered = asyncio.create_task(self.wait_for_calls(SESSIONS * CALLS_PER_SESSION))
        # Until every call is answered and every index run made, a session
        # or the re-indexer that stops early (an exception) stops the run.
        pending = {answered, reindexer, *sessions}
        while not (answered.done() and reindexer.done()):
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                if task.exception() is not None:
                    raise task.exception()
        elapsed = time.monotonic() - started
        await self.pause("end")
        self.all_done.set()
        await asyncio.gather(*sessions)
        return {
            "sessions": SESSIONS,
            "calls": self.calls,
            "failed": self.failed,
            "failures": self.failures,
            "inconsistent": self.inconsistent,
            "inconsistencies": self.inconsistencies,
            "generations": self.generations,
            "levels_seen": sorted(self.levels),
            "marker_hits": self.marker_hits,
            "marker_misses": self.marker_misses,
            "reindex_ms": self.reindex_ms,
            "elapsed_s": round(elapsed, 2),
            "calls_per_s": round(self.calls / elapsed, 1),
        }


def main():
    url, token, memidx, corpus = sys.argv[1:5]
    report = asyncio.run(Run(url, token, memidx, corpus).main())
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
