
use builtin;
use str;

set edit:completion:arg-completer[memidx] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'memidx'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'memidx'= {
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand index 'Build or update the index of a folder (written to DIR/.memidx)'
            cand search 'Search the index and print the best chunks'
            cand get 'Print a chunk by id (`path#n`: heading path, lines, text from the index) or lines of an indexed file (`PATH`, `PATH:FROM`, `PATH:FROM-TO`)'
            cand explain 'Show how every result''s score was made: each list''s rank, raw score, weight and contribution, or why a list did not contribute'
            cand mcp 'Serve the index to AI agents over stdio as a Model Context Protocol server (tools: search, get, explain, status, reindex, remember)'
            cand status 'Show what is indexed: files, chunks, model, settings, sizes, and which files changed since (--verify also checks every index file''s checksum)'
            cand remember 'Write a new dated note into the indexed folder (memories/ by default) and index it at once; prints its chunk ids'
            cand eval 'Measure retrieval quality on labelled queries (nDCG@10, Recall, MRR per mode)'
            cand graph 'Show what the entity graph holds: entities, communities (with their extractive summaries), an entity''s neighbors'
            cand push 'Send the index to a Milvus collection (created if missing; a second push sends only what changed), for search --backend'
            cand completions 'Print a shell completion script to stdout'
            cand man 'Print a man page (roff) to stdout: memidx(1), or one subcommand''s'
        }
        &'memidx;index'= {
            cand --max-file-size 'Skip files larger than this (bytes; K, M, G suffixes allowed)'
            cand --chunk-tokens 'Target chunk size in estimated tokens; longer sections split at block boundaries [default: what the index was built with, else 400]'
            cand --include 'Index only files whose path (relative to DIR) matches GLOB (repeatable)'
            cand --exclude 'Skip files and folders whose path (relative to DIR) matches GLOB (repeatable)'
            cand --model 'Embed with this sentence-transformers model folder (config.json, tokenizer.json, model.safetensors) instead of the bundled model'
            cand --index 'Where to write the index [default: DIR/.memidx]; keeps it out of read-only or shared folders'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --full 'Re-read every file instead of reusing unchanged ones'
            cand --no-ignore 'Index files that .gitignore or .memidxignore rules exclude. This, --include and --exclude are kept by the next run unless it gives any of them (then its own replace all three)'
            cand --graph 'Also build the entity graph (the `graph` list and `memidx graph`); later runs keep building it until --no-graph. It costs about as much time as the rest of indexing and a quarter more disk'
            cand --no-graph 'Stop building the entity graph (drops it from the index)'
            cand -q 'Print no progress bar and no summary (warnings are still printed)'
            cand --quiet 'Print no progress bar and no summary (warnings are still printed)'
            cand --watch 'After indexing, keep watching DIR and re-index incrementally whenever files change (one summary line per run) until Ctrl-C or SIGTERM'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;search'= {
            cand --request 'Read a JSON request (query_id, search_text, top_k, hybrid_params, metadata_filter) from FILE, or from stdin with ''-''; answers in JSON'
            cand -k 'Number of results [default: 10; at most 10000]'
            cand --top-k 'Number of results [default: 10; at most 10000]'
            cand --max-chars 'Keep results whole, in rank order, while their texts add up to at most N characters (a first result longer than N is cut at a word boundary); the JSON says `truncated` and how many were `omitted`'
            cand -f 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)'
            cand --filter 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)'
            cand --mode 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one'
            cand --backend 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index''s files; fused and explained as locally'
            cand --since 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)'
            cand --until 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)'
            cand --fusion 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]'
            cand --rrf-k 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]'
            cand --sparse-weight 'Weight of the sparse (BM25) list in the fusion [default: the index''s]'
            cand --dense-weight 'Weight of the dense (embedding) list in the fusion [default: the index''s]'
            cand --graph-weight 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]'
            cand --recency-weight 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]'
            cand --window 'Candidates taken from each list before fusion [default: the index''s, else max(50, 2 × top-k)]'
            cand --dense-feedback 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document (the response shape) instead of text'
            cand --jsonl 'Print one JSON result per line (no envelope), for very large --top-k'
            cand --no-text 'Leave the text out of every result (ids, scores, sources, lines, metadata and ranks only), for callers that `memidx get` what they need'
            cand --here 'Only chunks from files in the current folder and below'
            cand --recent 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;get'= {
            cand --max-chars 'Cut the text to at most N characters, at a word boundary'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;explain'= {
            cand -k 'Number of results to explain'
            cand --top-k 'Number of results to explain'
            cand --chunk 'Explain only this chunk (an id like `notes/db.md#3`), even when it is not a result'
            cand -f 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)'
            cand --filter 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)'
            cand --mode 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one'
            cand --backend 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index''s files; fused and explained as locally'
            cand --since 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)'
            cand --until 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)'
            cand --fusion 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]'
            cand --rrf-k 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]'
            cand --sparse-weight 'Weight of the sparse (BM25) list in the fusion [default: the index''s]'
            cand --dense-weight 'Weight of the dense (embedding) list in the fusion [default: the index''s]'
            cand --graph-weight 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]'
            cand --recency-weight 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]'
            cand --window 'Candidates taken from each list before fusion [default: the index''s, else max(50, 2 × top-k)]'
            cand --dense-feedback 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of a table'
            cand --here 'Only chunks from files in the current folder and below'
            cand --recent 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;mcp'= {
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --read-only 'Offer no tool that writes (no `reindex`, no `remember`)'
            cand --watch 'Keep the index fresh while serving: re-index incrementally whenever the indexed files change (summary lines on stderr), holding the writer lock until the server ends'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;status'= {
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand --verify 'Re-read every index file and check its checksum'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;remember'= {
            cand --title 'The note''s title [default: its first line]'
            cand --dir 'The folder to write to, relative to the indexed folder (created if missing; it must be inside the indexed folder)'
            cand --meta 'A front matter entry KEY=VALUE (repeatable)'
            cand --max-file-size 'Refuse a note larger than this (bytes; K, M, G suffixes allowed)'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;eval'= {
            cand --queries 'Queries, JSON Lines: {"id": …, "text": …} per line'
            cand --qrels 'Relevance judgments: `query-id doc-id relevance` per line (a header line is allowed); a doc id is a file name without `.md`'
            cand --run-out 'Write TREC run files (sparse.trec, dense.trec, hybrid.trec) into DIR'
            cand --fusion 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]'
            cand --rrf-k 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]'
            cand --sparse-weight 'Weight of the sparse (BM25) list in the fusion [default: the index''s]'
            cand --dense-weight 'Weight of the dense (embedding) list in the fusion [default: the index''s]'
            cand --graph-weight 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]'
            cand --recency-weight 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]'
            cand --window 'Candidates taken from each list before fusion [default: the index''s, else max(50, 2 × top-k)]'
            cand --dense-feedback 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of a table'
            cand --sweep 'Also try a grid of k, dense weights and windows; tune on half of the queries and report the winner on the other (held-out) half'
            cand --save 'With --sweep: store the winning settings in the index, so later searches use them'
            cand --ignore-identical 'Drop a hit whose document id equals the query id (BEIR''s rule for collections whose queries are themselves documents, e.g. ArguAna)'
            cand -q 'Print no progress bar'
            cand --quiet 'Print no progress bar'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;graph'= {
            cand -n 'How many rows to show at most'
            cand --limit 'How many rows to show at most'
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand entities 'The entities mentioned by the most chunks, with their community'
            cand communities 'The communities of one level, largest first, each with its extractive summary (central entities and the chunks covering them)'
            cand neighbors 'An entity''s strongest relations'
        }
        &'memidx;graph;entities'= {
            cand --kind 'Only entities of this kind'
            cand -n 'How many rows to show at most'
            cand --limit 'How many rows to show at most'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;graph;communities'= {
            cand --level 'The level: 0 is the finest; higher levels merge communities'
            cand -n 'How many rows to show at most'
            cand --limit 'How many rows to show at most'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;graph;neighbors'= {
            cand --kind 'Only the entity of this kind'
            cand -n 'How many rows to show at most'
            cand --limit 'How many rows to show at most'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand --json 'Print one JSON document instead of text'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;push'= {
            cand --index 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]'
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand -q 'Print no progress bars'
            cand --quiet 'Print no progress bars'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;completions'= {
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
        &'memidx;man'= {
            cand --color 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected'
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
