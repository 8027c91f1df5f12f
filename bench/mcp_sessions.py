#!/usr/bin/env python3
"""Many sessions opened on one `memidx mcp --http`: its memory while they live and after.

Usage: bench/mcp_sessions.py CORPUS_DIR [BINARY] [--sessions N] [--minutes M]

CORPUS_DIR must already be indexed. The script starts `memidx mcp --read-only --http
127.0.0.1:0` on it and sends N `initialize` requests (default 24,000), 8 at once, each
on a connection of its own and never used again: a client opening sessions in a loop.
It prints the server's RSS at the start, its peak meanwhile, how many sessions were
opened (the rest were refused: memidx caps them at 1,000), then its RSS every minute
for M minutes (default 7: the SDK ends a session idle 5 minutes), and whether one more
session opens at the end. Issue 68 asks at most 150 MiB, and near the start after the
sessions expire.

Standard library only.
"""
import argparse
import http.client
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from mcp_latency import REPO, die, start_http  # noqa: E402

INITIALIZE = json.dumps({
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "mcp_sessions", "version": "1"}},
}).encode()


def rss_mib(pid):
    with open(f"/proc/{pid}/status", encoding="utf-8") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmRSS:")) / 1024


def open_session(host, port):
    """Whether an `initialize` on a new connection opened a session."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    try:
        conn.request("POST", "/mcp", body=INITIALIZE, headers={
            "Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        response = conn.getresponse()
        response.read()
        return response.status == 200
    except OSError:
        return False
    finally:
        conn.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("binary", nargs="?", default=os.path.join(REPO, "target/release/memidx"))
    parser.add_argument("--sessions", type=int, default=24000)
    parser.add_argument("--minutes", type=int, default=7)
    args = parser.parse_args()
    corpus = os.path.realpath(args.corpus)
    if not os.path.isfile(os.path.join(corpus, ".memidx", "meta.json")):
        die(f"no index in {corpus}: run 'memidx index {corpus}' first")
    proc, host, port = start_http(args.binary, corpus, read_only=True)
    try:
        start = rss_mib(proc.pid)
        peak, opened = start, 0
        with ThreadPoolExecutor(8) as pool:
            for i, ok in enumerate(pool.map(lambda _: open_session(host, port), range(args.sessions))):
                opened += ok
                if i % 1000 == 0:
                    peak = max(peak, rss_mib(proc.pid))
        peak = max(peak, rss_mib(proc.pid))
        print(f"{args.sessions} initialize calls: {opened} sessions opened, "
              f"{args.sessions - opened} refused")
        print()
        print("| when | RSS |")
        print("| --- | --- |")
        print(f"| start | {start:.0f} MiB |")
        print(f"| peak while opening | {peak:.0f} MiB |")
        for minute in range(1, args.minutes + 1):
            time.sleep(60)
            print(f"| {minute} min after | {rss_mib(proc.pid):.0f} MiB |", flush=True)
        print()
        print(f"one more session opens: {open_session(host, port)}")
    finally:
        proc.terminate()
        proc.wait(timeout=60)


if __name__ == "__main__":
    main()
