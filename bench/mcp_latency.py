#!/usr/bin/env python3
"""A warm MCP `search` over stdio and over HTTP against the whole-process CLI search, in one run.

Usage: bench/mcp_latency.py CORPUS_DIR [BINARY] [--runs N] [--mode MODE] [--json OUT]

CORPUS_DIR must already be indexed (`memidx index CORPUS_DIR`, or bench/run.sh). The
script starts `memidx mcp --read-only --index CORPUS_DIR` (raw JSON-RPC lines over its
stdin/stdout) and `memidx mcp --read-only --http 127.0.0.1:0 --index CORPUS_DIR`
(Streamable HTTP: one kept-alive connection, a POST per message) once each, initializes
both, and then, for each query of bench/queries.txt x --runs, times one `search` tool
call round trip on each (request written -> its whole response read) next to one
`memidx search Q --index CORPUS_DIR --mode MODE -k 10 --json --no-server` process
(spawn -> exit, stdout to /dev/null: the baseline) and one without `--no-server`,
which the running servers answer through the index's socket (the resident path),
rotating which goes first, so all see the same load. A first
pass (not timed) checks that the tools and the command rank the same chunks. Prints
median and p90 of each and their ratios (see bench/README.md).

Standard library only. Runs niced (10) like bench/run.sh, from a copy of the binary
(a rebuild during the run changes nothing).
"""
import argparse
import http.client
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from bench import percentile, write_json  # noqa: E402  (bench/bench.py, the run.sh helper)

REPO = os.path.dirname(HERE)
TIMEOUT_S = 60


def die(message):
    print(f"mcp_latency: {message}", file=sys.stderr)
    sys.exit(2)


class Server:
    """`memidx mcp` over pipes: one request at a time, answers read line by line."""
    name = "stdio"

    def __init__(self, binary, corpus, read_only=True):
        self.proc = subprocess.Popen(
            [binary, "mcp", *(["--read-only"] if read_only else []), "--index", corpus],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        self.next_id = 1

    def send(self, message):
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        """(seconds from writing the request to having read its response line, response)."""
        rid = self.next_id
        self.next_id += 1
        line = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        started = time.perf_counter_ns()
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()
        while True:
            answer = self.proc.stdout.readline()
            elapsed = (time.perf_counter_ns() - started) / 1e9
            if not answer:
                die(f"the server closed its output; stderr:\n{self.proc.stderr.read().decode()}")
            message = json.loads(answer)
            if message.get("id") == rid:
                return elapsed, message, len(answer)

    def close(self):
        self.proc.stdin.close()
        code = self.proc.wait(timeout=TIMEOUT_S)
        if code != 0:
            die(f"the server exited {code}; stderr:\n{self.proc.stderr.read().decode()}")


def start_http(binary, corpus, read_only=True):
    """`memidx mcp --http` on a free loopback port: (process, host, port)."""
    proc = subprocess.Popen(
        [binary, "mcp", *(["--read-only"] if read_only else []), "--http", "127.0.0.1:0",
         "--index", corpus],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    line = proc.stderr.readline().decode()
    url = next((w for w in line.split() if w.startswith("http://")), None)
    if url is None:
        die(f"memidx mcp --http printed no URL: {line!r}")
    host, port = url[len("http://"):].split("/")[0].rsplit(":", 1)
    return proc, host, int(port)


class HttpClient:
    """One MCP session over Streamable HTTP: one request at a time, each a POST on one
    kept-alive connection; the answer is JSON or an event stream."""
    name = "http"

    def __init__(self, host, port):
        self.conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
        self.session = None
        self.next_id = 1

    def post(self, message):
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json, text/event-stream"}
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        self.conn.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        if response.status >= 300:
            die(f"HTTP {response.status} for {message.get('method')}: {body[:300]!r}")
        self.session = response.getheader("Mcp-Session-Id") or self.session
        return response.getheader("Content-Type") or "", body

    def send(self, message):
        self.post(message)

    def request(self, method, params):
        """(seconds from sending the request to having read its response, response)."""
        rid = self.next_id
        self.next_id += 1
        started = time.perf_counter_ns()
        kind, body = self.post({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        elapsed = (time.perf_counter_ns() - started) / 1e9
        lines = body.decode().splitlines()
        if kind.startswith("text/event-stream"):
            lines = [l[len("data:"):].strip() for l in lines if l.startswith("data:")]
        for line in filter(None, lines):
            message = json.loads(line)
            if message.get("id") == rid:
                return elapsed, message, len(body)
        die(f"no answer to {method} in {body[:300]!r}")

    def close(self):
        self.conn.close()


class HttpServer(HttpClient):
    """`memidx mcp --http` on a free loopback port, with one session of its own."""

    def __init__(self, binary, corpus, read_only=True):
        self.proc, host, port = start_http(binary, corpus, read_only)
        super().__init__(host, port)

    def close(self):
        super().close()
        self.proc.terminate()
        code = self.proc.wait(timeout=TIMEOUT_S)
        if code != 0:
            die(f"the HTTP server exited {code}; stderr:\n{self.proc.stderr.read().decode()}")


def mcp_search(server, query, mode):
    """One `search` tool call: (seconds, chunk ids, omitted, response bytes)."""
    elapsed, message, size = server.request(
        "tools/call", {"name": "search", "arguments": {"query": query, "top_k": 10, "mode": mode}})
    result = message.get("result")
    if result is None or result.get("isError"):
        die(f"search {query!r} failed: {json.dumps(message)[:500]}")
    found = result["structuredContent"]
    return elapsed, [r["chunk_id"] for r in found["results"]], found["omitted"], size


def cli_search(binary, corpus, query, mode, capture=False, served=False):
    """One `memidx search` process, answered by itself or (`served`) by a running
    server: (seconds, chunk ids or None)."""
    argv = [binary, "search", query, "--index", corpus, "--mode", mode, "-k", "10", "--json"]
    if not served:
        argv.append("--no-server")
    started = time.perf_counter_ns()
    done = subprocess.run(argv, stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                          stderr=subprocess.PIPE, timeout=TIMEOUT_S)
    elapsed = (time.perf_counter_ns() - started) / 1e9
    if done.returncode not in (0, 1):
        die(f"memidx search {query!r} exited {done.returncode}: {done.stderr.decode()[-500:]}")
    ids = None
    if capture:
        ids = [r["chunk_id"] for r in json.loads(done.stdout)["results"]] if done.returncode == 0 else []
    return elapsed, ids


def summary(times):
    return {"runs": len(times), "median_s": statistics.median(times), "p90_s": percentile(times, 90)}


def ms(seconds):
    return f"{seconds * 1e3:.2f} ms"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("corpus")
    parser.add_argument("binary", nargs="?", default=os.path.join(REPO, "target/release/memidx"))
    parser.add_argument("--runs", type=int, default=3, help="timed runs per query (default 3)")
    parser.add_argument("--mode", default="hybrid", help="lists to search (default hybrid)")
    parser.add_argument("--json", dest="json_out", help="also write the figures as JSON here")
    args = parser.parse_args()
    if args.runs < 1:
        die("--runs must be at least 1")
    corpus = os.path.realpath(args.corpus)
    if not os.path.isfile(os.path.join(corpus, ".memidx", "meta.json")):
        die(f"no index in {corpus}: run 'memidx index {corpus}' (or bench/run.sh) first")
    if not os.access(args.binary, os.X_OK):
        die(f"no binary {args.binary}: run 'cargo build --release' first")
    with open(os.path.join(HERE, "queries.txt"), encoding="utf-8") as f:
        queries = [line.rstrip("\n") for line in f if line.strip()]

    if os.nice(0) < 10:  # the machines are shared; bench/run.sh runs at nice 10 too
        os.nice(10 - os.nice(0))
    tmp = tempfile.mkdtemp(prefix="memidx-mcp-bench.")
    try:
        binary = os.path.join(tmp, "memidx")
        shutil.copy2(args.binary, binary)
        run(args, corpus, binary, queries)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def initialize(server):
    """Opens the MCP session of `server` (a Server, an HttpServer or an HttpClient)."""
    _, init, _ = server.request("initialize", {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "memidx-bench", "version": "0"}})
    if "result" not in init:
        die(f"initialize failed over {server.name}: {init}")
    server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    return server


def start(kind, binary, corpus):
    """A started and initialized server, and the seconds that took."""
    started = time.perf_counter_ns()
    server = initialize(kind(binary, corpus))
    return server, (time.perf_counter_ns() - started) / 1e9


def run(args, corpus, binary, queries):
    load_start = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"]
    servers, startup = [], {}
    for kind in (Server, HttpServer):
        server, startup[kind.name] = start(kind, binary, corpus)
        servers.append(server)

    # Untimed first pass: warms all, and checks they rank the same chunks
    # (the tool's default max_chars may leave the last results out).
    for q in queries:
        _, cli_ids = cli_search(binary, corpus, q, args.mode, capture=True)
        _, served_ids = cli_search(binary, corpus, q, args.mode, capture=True, served=True)
        if served_ids != cli_ids:
            die(f"the command answered by a server and alone disagree on {q!r}")
        for server in servers:
            _, mcp_ids, omitted, _ = mcp_search(server, q, args.mode)
            if mcp_ids != cli_ids[:len(mcp_ids)] or len(mcp_ids) + omitted != len(cli_ids):
                die(f"the tool over {server.name} and the command disagree on {q!r}:\n"
                    f"  mcp {mcp_ids}\n  cli {cli_ids}")

    times = {"stdio": [], "http": [], "cli": [], "served": []}
    sizes = []
    kinds = list(times)
    for r in range(args.runs):
        for i, q in enumerate(queries):
            turn = (r + i) % len(kinds)
            for which in (kinds * 2)[turn:turn + len(kinds)]:
                if which in ("cli", "served"):
                    times[which].append(
                        cli_search(binary, corpus, q, args.mode, served=which == "served")[0])
                    continue
                server = servers[0] if which == "stdio" else servers[1]
                t, _, _, size = mcp_search(server, q, args.mode)
                times[which].append(t)
                if which == "stdio":
                    sizes.append(size)
    for server in servers:
        server.close()
    load_end = open("/proc/loadavg").read().split()[:3] if os.path.exists("/proc/loadavg") else ["?"]

    mcp, http_, cli = summary(times["stdio"]), summary(times["http"]), summary(times["cli"])
    served = summary(times["served"])
    version = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout.strip()
    rev = subprocess.run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip() or "?"
    report = {
        "machine": {"nproc": os.cpu_count(), "kernel": platform.release(), "nice": os.nice(0),
                    "load_start": load_start, "load_end": load_end},
        "memidx": version, "repo_rev": rev, "corpus": corpus, "mode": args.mode,
        "queries": len(queries), "server_start_s": startup["stdio"],
        "http_server_start_s": startup["http"],
        "mcp": mcp, "http": http_, "cli": cli, "cli_served": served,
        "served_ratio_median": served["median_s"] / cli["median_s"],
        "mcp_response_bytes_median": statistics.median(sizes),
        "ratio_median": mcp["median_s"] / cli["median_s"],
        "ratio_p90": mcp["p90_s"] / cli["p90_s"],
        "http_minus_stdio_median_s": http_["median_s"] - mcp["median_s"],
        "http_minus_stdio_p90_s": http_["p90_s"] - mcp["p90_s"],
    }
    print(f"== {os.cpu_count()} cores, nice {os.nice(0)}, load {' '.join(load_start)} -> "
          f"{' '.join(load_end)}; {version} (repo {rev}); {corpus}")
    print(f"== server start to initialize answered: stdio {ms(startup['stdio'])}, "
          f"http {ms(startup['http'])}; median MCP response "
          f"{report['mcp_response_bytes_median'] / 1024:.1f} KiB")
    print()
    print(f"| search, {args.mode}, k 10 ({len(queries)} queries x {args.runs}) | median | p90 |")
    print("| --- | --- | --- |")
    print(f"| MCP `search` round trip, warm server, stdio | {ms(mcp['median_s'])} | {ms(mcp['p90_s'])} |")
    print(f"| MCP `search` round trip, warm server, HTTP | {ms(http_['median_s'])} | {ms(http_['p90_s'])} |")
    print(f"| `memidx search --json --no-server`, whole process (the baseline) | "
          f"{ms(cli['median_s'])} | {ms(cli['p90_s'])} |")
    print(f"| `memidx search --json` answered by the server, whole process | "
          f"{ms(served['median_s'])} | {ms(served['p90_s'])} |")
    print(f"| HTTP − stdio | {ms(report['http_minus_stdio_median_s'])} | "
          f"{ms(report['http_minus_stdio_p90_s'])} |")
    print(f"| MCP (stdio) / CLI | {report['ratio_median']:.3f} | {report['ratio_p90']:.3f} |")
    print(f"| CLI answered by the server / CLI | {report['served_ratio_median']:.3f} | "
          f"{served['p90_s'] / cli['p90_s']:.3f} |")
    if args.json_out:
        write_json(args.json_out, report)


if __name__ == "__main__":
    main()
