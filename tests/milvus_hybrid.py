"""Milvus's own fusion of memidx's two sub-searches, for tests/integration/milvus.rs.

Reads one JSON object on stdin: `server` (milvus://HOST:PORT), `collection`,
`requests` (the sparse and dense lists' requests as `memidx explain --json
--backend` reports them), `window` (hits per sub-search), `limit` (fused
hits) and `rrf_k`. Runs them as one `hybrid_search` with pymilvus's
`RRFRanker(rrf_k)`, and prints the fused hits as a JSON list of
`[chunk id, score]`, best first.
"""

import json
import sys

from pymilvus import AnnSearchRequest, MilvusClient, RRFRanker

METRICS = {"sparse": "BM25", "dense": "IP"}


def main() -> None:
    job = json.load(sys.stdin)
    client = MilvusClient(uri="http://" + job["server"].removeprefix("milvus://"))
    requests = [
        AnnSearchRequest(
            data=[request["query"]],
            anns_field=request["field"],
            param={"metric_type": METRICS[request["field"]]},
            limit=job["window"],
            expr=request["filter"] or None,
        )
        for request in job["requests"]
    ]
    hits = client.hybrid_search(
        job["collection"],
        reqs=requests,
        ranker=RRFRanker(job["rrf_k"]),
        limit=job["limit"],
        output_fields=["id"],
    )[0]
    json.dump([[hit["id"], hit["distance"]] for hit in hits], sys.stdout)


if __name__ == "__main__":
    main()
