
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'memidx' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'memidx'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'memidx' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('index', 'index', [CompletionResultType]::ParameterValue, 'Build or update the index of a folder (written to DIR/.memidx)')
            [CompletionResult]::new('search', 'search', [CompletionResultType]::ParameterValue, 'Search the index and print the best chunks')
            [CompletionResult]::new('get', 'get', [CompletionResultType]::ParameterValue, 'Print a chunk by id (`path#n`: heading path, lines, text from the index) or lines of an indexed file (`PATH`, `PATH:FROM`, `PATH:FROM-TO`)')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Show how every result''s score was made: each list''s rank, raw score, weight and contribution, or why a list did not contribute')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Serve the index to AI agents over stdio as a Model Context Protocol server (tools: search, get, explain, status, reindex, remember)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show what is indexed: files, chunks, model, settings, sizes, and which files changed since (--verify also checks every index file''s checksum)')
            [CompletionResult]::new('remember', 'remember', [CompletionResultType]::ParameterValue, 'Write a new dated note into the indexed folder (memories/ by default) and index it at once; prints its chunk ids')
            [CompletionResult]::new('eval', 'eval', [CompletionResultType]::ParameterValue, 'Measure retrieval quality on labelled queries (nDCG@10, Recall, MRR per mode)')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Show what the entity graph holds: entities, communities (with their extractive summaries), an entity''s neighbors')
            [CompletionResult]::new('push', 'push', [CompletionResultType]::ParameterValue, 'Send the index to a Milvus collection (created if missing; a second push sends only what changed), for search --backend')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script to stdout')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print a man page (roff) to stdout: memidx(1), or one subcommand''s')
            break
        }
        'memidx;index' {
            [CompletionResult]::new('--max-file-size', '--max-file-size', [CompletionResultType]::ParameterName, 'Skip files larger than this (bytes; K, M, G suffixes allowed)')
            [CompletionResult]::new('--chunk-tokens', '--chunk-tokens', [CompletionResultType]::ParameterName, 'Target chunk size in estimated tokens; longer sections split at block boundaries [default: what the index was built with, else 200]')
            [CompletionResult]::new('--include', '--include', [CompletionResultType]::ParameterName, 'Index only files whose path (relative to DIR) matches GLOB (repeatable)')
            [CompletionResult]::new('--exclude', '--exclude', [CompletionResultType]::ParameterName, 'Skip files and folders whose path (relative to DIR) matches GLOB (repeatable)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'Embed with this sentence-transformers model folder (config.json, tokenizer.json, model.safetensors) instead of the bundled model; later runs keep embedding with it until --bundled-model')
            [CompletionResult]::new('--embed-url', '--embed-url', [CompletionResultType]::ParameterName, 'Embed with a model an OpenAI-compatible server runs (POST URL/embeddings), e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1; searches ask it for their queries, and later runs keep it until --model or --bundled-model')
            [CompletionResult]::new('--embed-model', '--embed-model', [CompletionResultType]::ParameterName, 'The model --embed-url''s server is asked for, e.g. text-embedding-3-small or nomic-embed-text')
            [CompletionResult]::new('--embed-key-file', '--embed-key-file', [CompletionResultType]::ParameterName, 'Read --embed-url''s API key from FILE (else from MEMIDX_EMBED_KEY); the index records the file''s path for its searches, never the key')
            [CompletionResult]::new('--dense-index', '--dense-index', [CompletionResultType]::ParameterName, 'When to write the dense list''s sign codes, which searches scan before scoring their best rows exactly, instead of every vector: auto writes them from 10,000 chunks and searches use them over 100,000 (an index alone or several together); later runs keep the setting [default: the index''s, else auto]')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'Where to write the index [default: DIR/.memidx]; keeps it out of read-only or shared folders')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--full', '--full', [CompletionResultType]::ParameterName, 'Re-read every file instead of reusing unchanged ones')
            [CompletionResult]::new('--compact', '--compact', [CompletionResultType]::ParameterName, 'Write the whole index anew, folding in the delta that runs append for small changes (unchanged chunks are carried, not re-read); runs do it on their own once the delta grows')
            [CompletionResult]::new('--no-ignore', '--no-ignore', [CompletionResultType]::ParameterName, 'Index files that .gitignore or .memidxignore rules exclude. This, --include and --exclude are kept by the next run unless it gives any of them (then its own replace all three)')
            [CompletionResult]::new('--bundled-model', '--bundled-model', [CompletionResultType]::ParameterName, 'Go back to the bundled model (an index built with --model or --embed-url keeps its model otherwise); the bundled vectors of an earlier run are reused')
            [CompletionResult]::new('--graph', '--graph', [CompletionResultType]::ParameterName, 'Also build the entity graph (the `graph` list and `memidx graph`); later runs keep building it until --no-graph. It costs about as much time as the rest of indexing and a quarter more disk')
            [CompletionResult]::new('--no-graph', '--no-graph', [CompletionResultType]::ParameterName, 'Stop building the entity graph (drops it from the index)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no progress bar and no summary (warnings are still printed)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no progress bar and no summary (warnings are still printed)')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'After indexing, keep watching DIR and re-index incrementally whenever files change (one summary line per run) until Ctrl-C or SIGTERM')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;search' {
            [CompletionResult]::new('--request', '--request', [CompletionResultType]::ParameterName, 'Read a JSON request (query_id, search_text, top_k, hybrid_params, metadata_filter) from FILE, or from stdin with ''-''; answers in JSON')
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Number of results [default: 10; at most 10000]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Number of results [default: 10; at most 10000]')
            [CompletionResult]::new('--max-chars', '--max-chars', [CompletionResultType]::ParameterName, 'Keep results whole, in rank order, while their texts add up to at most N characters (a first result longer than N is cut at a word boundary); the JSON says `truncated` and how many were `omitted`')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one')
            [CompletionResult]::new('--backend', '--backend', [CompletionResultType]::ParameterName, 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index''s files; fused and explained as locally')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)')
            [CompletionResult]::new('--per-file', '--per-file', [CompletionResultType]::ParameterName, 'Show at most N results from one file; its further matches are folded into "N more from this file" [default: 3; 0 shows all]')
            [CompletionResult]::new('--fusion', '--fusion', [CompletionResultType]::ParameterName, 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]')
            [CompletionResult]::new('--rrf-k', '--rrf-k', [CompletionResultType]::ParameterName, 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]')
            [CompletionResult]::new('--sparse-weight', '--sparse-weight', [CompletionResultType]::ParameterName, 'Weight of the sparse (BM25) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--dense-weight', '--dense-weight', [CompletionResultType]::ParameterName, 'Weight of the dense (embedding) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--graph-weight', '--graph-weight', [CompletionResultType]::ParameterName, 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]')
            [CompletionResult]::new('--recency-weight', '--recency-weight', [CompletionResultType]::ParameterName, 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Candidates taken from each list before fusion [default: the index''s, else max(200, 2 × top-k)]')
            [CompletionResult]::new('--dense-feedback', '--dense-feedback', [CompletionResultType]::ParameterName, 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]')
            [CompletionResult]::new('--dense-rescore', '--dense-rescore', [CompletionResultType]::ParameterName, 'Rows the dense list''s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]')
            [CompletionResult]::new('--dense-probe', '--dense-probe', [CompletionResultType]::ParameterName, 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list''s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder''s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document (the response shape) instead of text')
            [CompletionResult]::new('--jsonl', '--jsonl', [CompletionResultType]::ParameterName, 'Print one JSON result per line (no envelope), for very large --top-k')
            [CompletionResult]::new('--no-text', '--no-text', [CompletionResultType]::ParameterName, 'Leave the text out of every result (ids, scores, sources, lines, metadata and ranks only), for callers that `memidx get` what they need')
            [CompletionResult]::new('--keep-all', '--keep-all', [CompletionResultType]::ParameterName, 'Show the closest chunks even when no list matches the query with confidence (no chunk holds its words, and no chunk is closer in meaning than random text); by default such a search prints nothing and exits 1')
            [CompletionResult]::new('--here', '--here', [CompletionResultType]::ParameterName, 'Only chunks from files in the current folder and below')
            [CompletionResult]::new('--recent', '--recent', [CompletionResultType]::ParameterName, 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)')
            [CompletionResult]::new('--exact', '--exact', [CompletionResultType]::ParameterName, 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)')
            [CompletionResult]::new('--skip-missing', '--skip-missing', [CompletionResultType]::ParameterName, 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing')
            [CompletionResult]::new('--no-server', '--no-server', [CompletionResultType]::ParameterName, 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;get' {
            [CompletionResult]::new('--max-chars', '--max-chars', [CompletionResultType]::ParameterName, 'Cut the text to at most N characters, at a word boundary')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder''s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('--skip-missing', '--skip-missing', [CompletionResultType]::ParameterName, 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing')
            [CompletionResult]::new('--no-server', '--no-server', [CompletionResultType]::ParameterName, 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;explain' {
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Number of results to explain [default: 10; at most 10000]')
            [CompletionResult]::new('--top-k', '--top-k', [CompletionResultType]::ParameterName, 'Number of results to explain [default: 10; at most 10000]')
            [CompletionResult]::new('--chunk', '--chunk', [CompletionResultType]::ParameterName, 'Explain only this chunk (an id like `notes/db.md#3`), even when it is not a result')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)')
            [CompletionResult]::new('--filter', '--filter', [CompletionResultType]::ParameterName, 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one')
            [CompletionResult]::new('--backend', '--backend', [CompletionResultType]::ParameterName, 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index''s files; fused and explained as locally')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)')
            [CompletionResult]::new('--until', '--until', [CompletionResultType]::ParameterName, 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)')
            [CompletionResult]::new('--per-file', '--per-file', [CompletionResultType]::ParameterName, 'Show at most N results from one file; its further matches are folded into "N more from this file" [default: 3; 0 shows all]')
            [CompletionResult]::new('--fusion', '--fusion', [CompletionResultType]::ParameterName, 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]')
            [CompletionResult]::new('--rrf-k', '--rrf-k', [CompletionResultType]::ParameterName, 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]')
            [CompletionResult]::new('--sparse-weight', '--sparse-weight', [CompletionResultType]::ParameterName, 'Weight of the sparse (BM25) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--dense-weight', '--dense-weight', [CompletionResultType]::ParameterName, 'Weight of the dense (embedding) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--graph-weight', '--graph-weight', [CompletionResultType]::ParameterName, 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]')
            [CompletionResult]::new('--recency-weight', '--recency-weight', [CompletionResultType]::ParameterName, 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Candidates taken from each list before fusion [default: the index''s, else max(200, 2 × top-k)]')
            [CompletionResult]::new('--dense-feedback', '--dense-feedback', [CompletionResultType]::ParameterName, 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]')
            [CompletionResult]::new('--dense-rescore', '--dense-rescore', [CompletionResultType]::ParameterName, 'Rows the dense list''s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]')
            [CompletionResult]::new('--dense-probe', '--dense-probe', [CompletionResultType]::ParameterName, 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list''s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder''s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of a table')
            [CompletionResult]::new('--here', '--here', [CompletionResultType]::ParameterName, 'Only chunks from files in the current folder and below')
            [CompletionResult]::new('--recent', '--recent', [CompletionResultType]::ParameterName, 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)')
            [CompletionResult]::new('--exact', '--exact', [CompletionResultType]::ParameterName, 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)')
            [CompletionResult]::new('--skip-missing', '--skip-missing', [CompletionResultType]::ParameterName, 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing')
            [CompletionResult]::new('--no-server', '--no-server', [CompletionResultType]::ParameterName, 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;mcp' {
            [CompletionResult]::new('--http', '--http', [CompletionResultType]::ParameterName, 'Serve MCP''s Streamable HTTP transport at http://ADDR/mcp instead of stdio, for many clients at once (e.g. 127.0.0.1:8765; port 0 picks a free one). An address off loopback needs --token-file')
            [CompletionResult]::new('--token-file', '--token-file', [CompletionResultType]::ParameterName, 'With --http: require `Authorization: Bearer TOKEN`, the token being this file''s content (at least 16 characters, no spaces)')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder''s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--read-only', '--read-only', [CompletionResultType]::ParameterName, 'Offer no tool that writes (no `reindex`, no `remember`)')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Keep the index fresh while serving: re-index incrementally whenever the indexed files change (summary lines on stderr), holding the writer lock until the server ends')
            [CompletionResult]::new('--skip-missing', '--skip-missing', [CompletionResultType]::ParameterName, 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;status' {
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('--verify', '--verify', [CompletionResultType]::ParameterName, 'Re-read every index file and check its checksum, and count the chunks longer than the model reads (loads the model)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;remember' {
            [CompletionResult]::new('--title', '--title', [CompletionResultType]::ParameterName, 'The note''s title [default: its first line]')
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'The folder to write to, relative to the indexed folder (created if missing; it must be inside the indexed folder)')
            [CompletionResult]::new('--meta', '--meta', [CompletionResultType]::ParameterName, 'A front matter entry KEY=VALUE (repeatable)')
            [CompletionResult]::new('--max-file-size', '--max-file-size', [CompletionResultType]::ParameterName, 'Refuse a note larger than this (bytes; K, M, G suffixes allowed)')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;eval' {
            [CompletionResult]::new('--queries', '--queries', [CompletionResultType]::ParameterName, 'Queries, JSON Lines: {"id": …, "text": …} per line')
            [CompletionResult]::new('--qrels', '--qrels', [CompletionResultType]::ParameterName, 'Relevance judgments: `query-id doc-id relevance` per line (a header line is allowed); a doc id is a file name without `.md`')
            [CompletionResult]::new('--run-out', '--run-out', [CompletionResultType]::ParameterName, 'Write TREC run files (sparse.trec, dense.trec, hybrid.trec) into DIR')
            [CompletionResult]::new('--fusion', '--fusion', [CompletionResultType]::ParameterName, 'How the lists are fused: relative scores (each list''s score over its best, weighted) or RRF (w / (k + rank)) [default: the index''s]')
            [CompletionResult]::new('--rrf-k', '--rrf-k', [CompletionResultType]::ParameterName, 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index''s, 60]')
            [CompletionResult]::new('--sparse-weight', '--sparse-weight', [CompletionResultType]::ParameterName, 'Weight of the sparse (BM25) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--dense-weight', '--dense-weight', [CompletionResultType]::ParameterName, 'Weight of the dense (embedding) list in the fusion [default: the index''s]')
            [CompletionResult]::new('--graph-weight', '--graph-weight', [CompletionResultType]::ParameterName, 'Weight of the graph (entities and communities) list in the fusion [default: the index''s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]')
            [CompletionResult]::new('--recency-weight', '--recency-weight', [CompletionResultType]::ParameterName, 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]')
            [CompletionResult]::new('--window', '--window', [CompletionResultType]::ParameterName, 'Candidates taken from each list before fusion [default: the index''s, else max(200, 2 × top-k)]')
            [CompletionResult]::new('--dense-feedback', '--dense-feedback', [CompletionResultType]::ParameterName, 'Move the dense list''s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index''s, 3]')
            [CompletionResult]::new('--dense-rescore', '--dense-rescore', [CompletionResultType]::ParameterName, 'Rows the dense list''s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]')
            [CompletionResult]::new('--dense-probe', '--dense-probe', [CompletionResultType]::ParameterName, 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list''s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of a table')
            [CompletionResult]::new('--sweep', '--sweep', [CompletionResultType]::ParameterName, 'Also try a grid of fusions (RRF at several k, relative and adaptive scores), dense weights and windows; tune on half of the queries and report the winner on the other (held-out) half')
            [CompletionResult]::new('--save', '--save', [CompletionResultType]::ParameterName, 'With --sweep: store the winning settings in the index, so later searches use them')
            [CompletionResult]::new('--ignore-identical', '--ignore-identical', [CompletionResultType]::ParameterName, 'Drop a hit whose document id equals the query id (BEIR''s rule for collections whose queries are themselves documents, e.g. ArguAna)')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Refuse qrels that name queries the queries file lacks or relevant documents the index lacks (otherwise a warning, and they are scored as unjudged and as misses)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no progress bar')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no progress bar')
            [CompletionResult]::new('--exact', '--exact', [CompletionResultType]::ParameterName, 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;graph' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('entities', 'entities', [CompletionResultType]::ParameterValue, 'The entities mentioned by the most chunks, with their community')
            [CompletionResult]::new('communities', 'communities', [CompletionResultType]::ParameterValue, 'The communities of one level, largest first, each with its extractive summary (central entities and the chunks covering them)')
            [CompletionResult]::new('neighbors', 'neighbors', [CompletionResultType]::ParameterValue, 'An entity''s strongest relations')
            break
        }
        'memidx;graph;entities' {
            [CompletionResult]::new('--kind', '--kind', [CompletionResultType]::ParameterName, 'Only entities of this kind')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;graph;communities' {
            [CompletionResult]::new('--level', '--level', [CompletionResultType]::ParameterName, 'The level: 0 is the finest; higher levels merge communities')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;graph;neighbors' {
            [CompletionResult]::new('--kind', '--kind', [CompletionResultType]::ParameterName, 'Only the entity of this kind')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'How many rows to show at most')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON document instead of text')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;push' {
            [CompletionResult]::new('--index', '--index', [CompletionResultType]::ParameterName, 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print no progress bars')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print no progress bars')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;completions' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
        'memidx;man' {
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
