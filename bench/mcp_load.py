#!/usr/bin/env python3
"""Many MCP clients at once: one HTTP server against as many stdio servers, in one run.

Usage: bench/mcp_load.py CORPUS_DIR [BINARY] [--clients N] [--calls C] [--json OUT]

CORPUS_DIR must already be indexed. For each transport the script starts what N
clients need, all at once: one `memidx mcp --http 127.0.0.1:0` with N sessions (each
on a kept-alive connection of its own), or N `memidx mcp` processes over stdio, one
client each. Every client makes C tool calls one after another, in turn `search`
(hybrid, k 10, a query of bench/queries.txt), `search`, `get` (the last search's first
chunk), `search` and `status`. Each transport runs twice: alone, then with one more
client calling `reindex` with `full` (the whole index written again) again and again
until the others are done (over stdio a process of its own). It prints, per run, the
wall time, the throughput (calls a second), p50/p95/p99 per tool, and the servers'
peak RSS (summed over the stdio processes, sampled every 50 ms), then HTTP's
throughput over stdio's. Last, the HTTP server's memory after writes: on a copy of
CORPUS_DIR, its RSS after 20 searches, then after each 50 of --remembers `remember`
calls, and the last over the first (issue 68 asks at most 2x).
Raw JSON-RPC (no SDK), as bench/mcp_latency.py.

Standard library only; runs niced (10) from a copy of the binary.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import percentile, write_json  # noqa: E402
from mcp_latency import REPO, HttpClient, Server, die, initialize, start_http  # noqa: E402

TOOLS = ("search", "search", "get", "search", "status")


def call(client, name, arguments):
    """One tool call: (seconds, structured content)."""
    elapsed, message, _ = client.request("tools/call", {"name": name, "arguments": arguments})
    result = message.get("result")
    if result is None or result.get("isError"):
        die(f"{name} {arguments} failed: {json.dumps(message)[:500]}")
    return elapsed, result["structuredContent"]


def drive(client, calls, queries, offset, times):
    """Makes `calls` tool calls on `client`, recording each one's seconds by tool."""
    last = None
    for i in range(calls):
        name = TOOLS[i % len(TOOLS)]
        if name == "search":
            query = queries[(offset + i) % len(queries)]
            elapsed, found = call(client, "search", {"query": query, "top_k": 10})
            last = found["results"][0]["chunk_id"] if found["results"] else last
        elif name == "get" and last:
            elapsed, _ = call(client, "get", {"chunk_id": last})
        else:
            name = "status"
            elapsed, _ = call(client, "status", {})
        times.setdefault(name, []).append(elapsed)


def rss_kib(pids):
    """The summed resident memory of `pids`, in KiB."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status", encoding="utf-8") as status:
                total += next(int(l.split()[1]) for l in status if l.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def run(transport, binary, corpus, clients, calls, queries, reindex):
    """One run: its figures."""
    procs = []
    if transport == "http":
        proc, host, port = start_http(binary, corpus, read_only=False)
        procs.append(proc)
        sessions = [initialize(HttpClient(host, port)) for _ in range(clients + reindex)]
    else:
        sessions = [initialize(Server(binary, corpus, read_only=False))
                    for _ in range(clients + reindex)]
        procs = [s.proc for s in sessions]
    pids = [p.pid for p in procs]
    peak = [rss_kib(pids)]
    done = threading.Event()

    def sample():
        while not done.wait(0.05):
            peak[0] = max(peak[0], rss_kib(pids))

    reindexes = []

    def rewrite(client):
        while not done.is_set():
            elapsed, _ = call(client, "reindex", {"full": True})
            reindexes.append(elapsed)

    times = [{} for _ in range(clients)]
    workers = [threading.Thread(target=drive, args=(sessions[i], calls, queries, i * 7, times[i]))
               for i in range(clients)]
    helpers = [threading.Thread(target=sample)]
    if reindex:
        helpers.append(threading.Thread(target=rewrite, args=(sessions[-1],)))
    started = time.perf_counter()
    for thread in helpers + workers:
        thread.start()
    for thread in workers:
        thread.join()
    wall = time.perf_counter() - started
    done.set()
    for thread in helpers:
        thread.join()
    for session in sessions:
        session.close()
    if transport == "http":
        procs[0].terminate()
        procs[0].wait(timeout=60)
    by_tool = {}
    for per_client in times:
        for name, seconds in per_client.items():
            by_tool.setdefault(name, []).extend(seconds)
    return {
        "transport": transport, "reindex": bool(reindex), "clients": clients,
        "calls": clients * calls, "wall_s": wall, "calls_per_s": clients * calls / wall,
        "reindexes": len(reindexes), "peak_rss_kib": peak[0],
        "tools": {name: {p: percentile(s, p) for p in (50, 95, 99)} for name, s in by_tool.items()},
    }


def remember_memory(binary, corpus, count):
    """RSS in KiB of one HTTP server on a copy of `corpus`: read-only (after 20
    searches), then after every 50 `remember` calls and the last: [(calls, KiB)]."""
    with tempfile.TemporaryDirectory(prefix="memidx-mcp-remember.") as tmp:
        copy = os.path.join(tmp, "corpus")
        shutil.copytree(corpus, copy, symlinks=True)
        proc, host, port = start_http(binary, copy, read_only=False)
        try:
            client = initialize(HttpClient(host, port))
            for _ in range(20):
                call(client, "search", {"query": "replication lag"})
            figures = [(0, rss_kib([proc.pid]))]
            for i in range(1, count + 1):
                call(client, "remember", {"text": f"Note {i}: the okapi{i} feeding schedule moved."})
                if i % 50 == 0 or i == count:
                    figures.append((i, rss_kib([proc.pid])))
            client.close()
        finally:
            proc.terminate()
            proc.wait(timeout=60)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("binary", nargs="?", default=os.path.join(REPO, "target/release/memidx"))
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=250, help="calls per client (default 250)")
    parser.add_argument("--remembers", type=int, default=200,
                        help="remember calls in the memory run (default 200)")
    parser.add_argument("--json", dest="json_out", help="also write the figures as JSON here")
    args = parser.parse_args()
    corpus = os.path.realpath(args.corpus)
    if not os.path.isfile(os.path.join(corpus, ".memidx", "meta.json")):
        die(f"no index in {corpus}: run 'memidx index {corpus}' first")
    with open(os.path.join(HERE, "queries.txt"), encoding="utf-8") as f:
        queries = [line.rstrip("\n") for line in f if line.strip()]
    if os.nice(0) < 10:
        os.nice(10 - os.nice(0))
    tmp = tempfile.mkdtemp(prefix="memidx-mcp-load.")
    try:
        binary = os.path.join(tmp, "memidx")
        shutil.copy2(args.binary, binary)
        runs = [run(t, binary, corpus, args.clients, args.calls, queries, r)
                for r in (0, 1) for t in ("stdio", "http")]
        remembered = remember_memory(binary, corpus, args.remembers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    ms = lambda s: f"{s * 1e3:.1f}"  # noqa: E731
    print(f"{args.clients} clients x {args.calls} calls ({', '.join(TOOLS)}), {corpus}")
    print()
    print("| transport | beside a full reindex | wall | calls/s | search p50 / p95 / p99 ms "
          "| get p50 / p95 / p99 ms | status p50 / p95 / p99 ms | peak RSS |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in runs:
        cells = [" / ".join(ms(r["tools"][t][p]) for p in (50, 95, 99)) if t in r["tools"] else "-"
                 for t in ("search", "get", "status")]
        beside = f"yes ({r['reindexes']} runs)" if r["reindex"] else "no"
        print(f"| {r['transport']} ({args.clients} {'sessions' if r['transport'] == 'http' else 'servers'}) "
              f"| {beside} | {r['wall_s']:.1f} s | {r['calls_per_s']:.0f} | {' | '.join(cells)} "
              f"| {r['peak_rss_kib'] / 1024:.0f} MiB |")
    for reindex in (False, True):
        stdio, http = (next(r for r in runs if r["transport"] == t and r["reindex"] == reindex)
                       for t in ("stdio", "http"))
        print(f"HTTP / stdio throughput{' beside a reindex' if reindex else ''}: "
              f"{http['calls_per_s'] / stdio['calls_per_s']:.2f}")
    print()
    print("| `remember` calls | " + " | ".join(str(n) for n, _ in remembered) + " |")
    print("| --- " * (len(remembered) + 1) + "|")
    print("| HTTP server RSS | " + " | ".join(f"{k / 1024:.0f} MiB" for _, k in remembered) + " |")
    print(f"RSS after {remembered[-1][0]} remembers / read-only: "
          f"{remembered[-1][1] / remembered[0][1]:.2f}")
    if args.json_out:
        write_json(args.json_out, {"runs": runs, "remember_rss_kib": remembered})


if __name__ == "__main__":
    main()
