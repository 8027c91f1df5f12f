# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_memidx_global_optspecs
    string join \n color= h/help V/version
end

function __fish_memidx_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_memidx_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_memidx_using_subcommand
    set -l cmd (__fish_memidx_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c memidx -n "__fish_memidx_needs_command" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_needs_command" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_needs_command" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "index" -d 'Build or update the index of a folder (written to DIR/.memidx)'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "search" -d 'Search the index and print the best chunks'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "get" -d 'Print a chunk by id (`path#n`: heading path, lines, text from the index) or lines of an indexed file (`PATH`, `PATH:FROM`, `PATH:FROM-TO`)'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "explain" -d 'Show how every result\'s score was made: each list\'s rank, raw score, weight and contribution, or why a list did not contribute'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "mcp" -d 'Serve the index to AI agents over stdio as a Model Context Protocol server (tools: search, get, explain, status, reindex, remember)'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "status" -d 'Show what is indexed: files, chunks, model, settings, sizes, and which files changed since (--verify also checks every index file\'s checksum)'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "remember" -d 'Write a new dated note into the indexed folder (memories/ by default) and index it at once; prints its chunk ids'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "eval" -d 'Measure retrieval quality on labelled queries (nDCG@10, Recall, MRR per mode)'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "graph" -d 'Show what the entity graph holds: entities, communities (with their extractive summaries), an entity\'s neighbors'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "push" -d 'Send the index to a Milvus collection (created if missing; a second push sends only what changed), for search --backend'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "completions" -d 'Print a shell completion script to stdout'
complete -c memidx -n "__fish_memidx_needs_command" -f -a "man" -d 'Print a man page (roff) to stdout: memidx(1), or one subcommand\'s'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l max-file-size -d 'Skip files larger than this (bytes; K, M, G suffixes allowed)' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l chunk-tokens -d 'Target chunk size in estimated tokens; longer sections split at block boundaries [default: what the index was built with, else 200]' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l include -d 'Index only files whose path (relative to DIR) matches GLOB (repeatable)' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l exclude -d 'Skip files and folders whose path (relative to DIR) matches GLOB (repeatable)' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l model -d 'Embed with this sentence-transformers model folder (config.json, tokenizer.json, model.safetensors) instead of the bundled model; later runs keep embedding with it until --bundled-model' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand index" -l embed-url -d 'Embed with a model an OpenAI-compatible server runs (POST URL/embeddings), e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1; searches ask it for their queries, and later runs keep it until --model or --bundled-model' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l embed-model -d 'The model --embed-url\'s server is asked for, e.g. text-embedding-3-small or nomic-embed-text' -r
complete -c memidx -n "__fish_memidx_using_subcommand index" -l embed-key-file -d 'Read --embed-url\'s API key from FILE (else from MEMIDX_EMBED_KEY); the index records the file\'s path for its searches, never the key' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand index" -l dense-index -d 'When to write the dense list\'s sign codes, which searches scan before scoring their best rows exactly, instead of every vector: auto writes them from 10,000 chunks and searches use them over 100,000 (an index alone or several together); later runs keep the setting [default: the index\'s, else auto]' -r -f -a "auto\t'Written from 10,000 chunks, used by searches over 100,000 (with other indexes)'
always\t'Whatever the size'
never\t'Never: searches scan every vector'"
complete -c memidx -n "__fish_memidx_using_subcommand index" -l index -d 'Where to write the index [default: DIR/.memidx]; keeps it out of read-only or shared folders' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand index" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand index" -l full -d 'Re-read every file instead of reusing unchanged ones'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l compact -d 'Write the whole index anew, folding in the delta that runs append for small changes (unchanged chunks are carried, not re-read); runs do it on their own once the delta grows'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l no-ignore -d 'Index files that .gitignore or .memidxignore rules exclude. This, --include and --exclude are kept by the next run unless it gives any of them (then its own replace all three)'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l bundled-model -d 'Go back to the bundled model (an index built with --model or --embed-url keeps its model otherwise); the bundled vectors of an earlier run are reused'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l graph -d 'Also build the entity graph (the `graph` list and `memidx graph`); later runs keep building it until --no-graph. It costs about as much time as the rest of indexing and a quarter more disk'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l no-graph -d 'Stop building the entity graph (drops it from the index)'
complete -c memidx -n "__fish_memidx_using_subcommand index" -s q -l quiet -d 'Print no progress bar and no summary (warnings are still printed)'
complete -c memidx -n "__fish_memidx_using_subcommand index" -l watch -d 'After indexing, keep watching DIR and re-index incrementally whenever files change (one summary line per run) until Ctrl-C or SIGTERM'
complete -c memidx -n "__fish_memidx_using_subcommand index" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand index" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l request -d 'Read a JSON request (query_id, search_text, top_k, hybrid_params, metadata_filter) from FILE, or from stdin with \'-\'; answers in JSON' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand search" -s k -l top-k -d 'Number of results [default: 10; at most 10000]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l max-chars -d 'Keep results whole, in rank order, while their texts add up to at most N characters (a first result longer than N is cut at a word boundary); the JSON says `truncated` and how many were `omitted`' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -s f -l filter -d 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l mode -d 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one' -r -f -a "hybrid\t'The default lists: sparse, dense, and graph when the index has one'
sparse\t'BM25 over the identifier-aware tokenizer'
dense\t'Embedding similarity'
graph\t'Chunks reached through the query\'s entities and their communities'
recency\t'The allowed chunks by document date, newest first (the query is not read)'"
complete -c memidx -n "__fish_memidx_using_subcommand search" -l backend -d 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index\'s files; fused and explained as locally' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l since -d 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l until -d 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l per-file -d 'Show at most N results from one file; its further matches are folded into "N more from this file" [default: 3; 0 shows all]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l fusion -d 'How the lists are fused: relative scores (each list\'s score over its best, weighted) or RRF (w / (k + rank)) [default: the index\'s]' -r -f -a "relative\t'Each list\'s score divided by its best score for the query, weighted and summed'
adaptive\t'Relative scores, each list\'s weight moved for the query by how far its scores fall over its best 10 (the list whose best stand apart leads)'
rrf\t'Weighted Reciprocal Rank Fusion, w / (k + rank)'"
complete -c memidx -n "__fish_memidx_using_subcommand search" -l rrf-k -d 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index\'s, 60]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l sparse-weight -d 'Weight of the sparse (BM25) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l dense-weight -d 'Weight of the dense (embedding) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l graph-weight -d 'Weight of the graph (entities and communities) list in the fusion [default: the index\'s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l recency-weight -d 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l window -d 'Candidates taken from each list before fusion [default: the index\'s, else max(200, 2 × top-k)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l dense-feedback -d 'Move the dense list\'s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index\'s, 3]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l dense-rescore -d 'Rows the dense list\'s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l dense-probe -d 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list\'s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]' -r
complete -c memidx -n "__fish_memidx_using_subcommand search" -l index -d 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder\'s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand search" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand search" -l json -d 'Print one JSON document (the response shape) instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l jsonl -d 'Print one JSON result per line (no envelope), for very large --top-k'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l no-text -d 'Leave the text out of every result (ids, scores, sources, lines, metadata and ranks only), for callers that `memidx get` what they need'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l keep-all -d 'Show the closest chunks even when no list matches the query with confidence (no chunk holds its words, and no chunk is closer in meaning than random text); by default such a search prints nothing and exits 1'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l here -d 'Only chunks from files in the current folder and below'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l recent -d 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l exact -d 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l skip-missing -d 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing'
complete -c memidx -n "__fish_memidx_using_subcommand search" -l no-server -d 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)'
complete -c memidx -n "__fish_memidx_using_subcommand search" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand search" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand get" -l max-chars -d 'Cut the text to at most N characters, at a word boundary' -r
complete -c memidx -n "__fish_memidx_using_subcommand get" -l index -d 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder\'s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand get" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand get" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand get" -l skip-missing -d 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing'
complete -c memidx -n "__fish_memidx_using_subcommand get" -l no-server -d 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)'
complete -c memidx -n "__fish_memidx_using_subcommand get" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand get" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -s k -l top-k -d 'Number of results to explain [default: 10; at most 10000]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l chunk -d 'Explain only this chunk (an id like `notes/db.md#3`), even when it is not a result' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -s f -l filter -d 'Keep only chunks whose metadata has KEY=VALUE (repeatable: AND across keys, OR across values of one key)' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l mode -d 'Which lists to run, comma-separated (e.g. sparse,graph); hybrid is the default lists: sparse, dense, and graph when the index has one' -r -f -a "hybrid\t'The default lists: sparse, dense, and graph when the index has one'
sparse\t'BM25 over the identifier-aware tokenizer'
dense\t'Embedding similarity'
graph\t'Chunks reached through the query\'s entities and their communities'
recency\t'The allowed chunks by document date, newest first (the query is not read)'"
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l backend -d 'Run the sparse and dense lists on the Milvus collection URI (milvus://HOST:PORT/COLLECTION, filled by memidx push) instead of the index\'s files; fused and explained as locally' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l since -d 'Only chunks from files dated at or after WHEN: an ISO date (2024-03-01), a date-time (2024-03-01T12:00, UTC unless it names an offset) or a span back from now (7d, 2w, 6m, 1y)' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l until -d 'Only chunks from files dated at or before WHEN (same forms as --since; a date includes that whole day)' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l per-file -d 'Show at most N results from one file; its further matches are folded into "N more from this file" [default: 3; 0 shows all]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l fusion -d 'How the lists are fused: relative scores (each list\'s score over its best, weighted) or RRF (w / (k + rank)) [default: the index\'s]' -r -f -a "relative\t'Each list\'s score divided by its best score for the query, weighted and summed'
adaptive\t'Relative scores, each list\'s weight moved for the query by how far its scores fall over its best 10 (the list whose best stand apart leads)'
rrf\t'Weighted Reciprocal Rank Fusion, w / (k + rank)'"
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l rrf-k -d 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index\'s, 60]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l sparse-weight -d 'Weight of the sparse (BM25) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l dense-weight -d 'Weight of the dense (embedding) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l graph-weight -d 'Weight of the graph (entities and communities) list in the fusion [default: the index\'s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l recency-weight -d 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l window -d 'Candidates taken from each list before fusion [default: the index\'s, else max(200, 2 × top-k)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l dense-feedback -d 'Move the dense list\'s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index\'s, 3]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l dense-rescore -d 'Rows the dense list\'s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l dense-probe -d 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list\'s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]' -r
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l index -d 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder\'s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l json -d 'Print one JSON document instead of a table'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l here -d 'Only chunks from files in the current folder and below'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l recent -d 'Favour newer chunks: fuse the recency list in at its measured weight (--recency-weight sets another)'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l exact -d 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l skip-missing -d 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -l no-server -d 'Answer in this process even when a `memidx mcp` server serves the index (by default it answers, through the socket in the index folder, with the same output)'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand explain" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l http -d 'Serve MCP\'s Streamable HTTP transport at http://ADDR/mcp instead of stdio, for many clients at once (e.g. 127.0.0.1:8765; port 0 picks a free one). An address off loopback needs --token-file' -r
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l token-file -d 'With --http: require `Authorization: Bearer TOKEN`, the token being this file\'s content (at least 16 characters, no spaces)' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l index -d 'An index: a .memidx folder or the folder holding it, named NAME in chunk ids when given as NAME=PATH [default: its folder\'s name]; repeat to search several as one [default: MEMIDX_INDEX, several separated like PATH; else the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l read-only -d 'Offer no tool that writes (no `reindex`, no `remember`)'
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l watch -d 'Keep the index fresh while serving: re-index incrementally whenever the indexed files change (summary lines on stderr), holding the writer lock until the server ends'
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -l skip-missing -d 'With several indexes, skip one that does not exist (naming it on stderr) instead of failing'
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand mcp" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand status" -l index -d 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand status" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand status" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand status" -l verify -d 'Re-read every index file and check its checksum, and count the chunks longer than the model reads (loads the model)'
complete -c memidx -n "__fish_memidx_using_subcommand status" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand status" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l title -d 'The note\'s title [default: its first line]' -r
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l dir -d 'The folder to write to, relative to the indexed folder (created if missing; it must be inside the indexed folder)' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l meta -d 'A front matter entry KEY=VALUE (repeatable)' -r
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l max-file-size -d 'Refuse a note larger than this (bytes; K, M, G suffixes allowed)' -r
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l index -d 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand remember" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand remember" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand remember" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l queries -d 'Queries, JSON Lines: {"id": …, "text": …} per line' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l qrels -d 'Relevance judgments: `query-id doc-id relevance` per line (a header line is allowed); a doc id is a file name without `.md`' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l run-out -d 'Write TREC run files (sparse.trec, dense.trec, hybrid.trec) into DIR' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l fusion -d 'How the lists are fused: relative scores (each list\'s score over its best, weighted) or RRF (w / (k + rank)) [default: the index\'s]' -r -f -a "relative\t'Each list\'s score divided by its best score for the query, weighted and summed'
adaptive\t'Relative scores, each list\'s weight moved for the query by how far its scores fall over its best 10 (the list whose best stand apart leads)'
rrf\t'Weighted Reciprocal Rank Fusion, w / (k + rank)'"
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l rrf-k -d 'The RRF constant k in w / (k + rank); without --fusion it asks for RRF [default: the index\'s, 60]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l sparse-weight -d 'Weight of the sparse (BM25) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l dense-weight -d 'Weight of the dense (embedding) list in the fusion [default: the index\'s]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l graph-weight -d 'Weight of the graph (entities and communities) list in the fusion [default: the index\'s, 0 (off) unless eval --save chose one; 0.2 when --mode names graph]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l recency-weight -d 'Weight of the recency list (newest first) in the fusion; above 0 it runs [default: 0 (off); 0.1 with --recent or --mode recency]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l window -d 'Candidates taken from each list before fusion [default: the index\'s, else max(200, 2 × top-k)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l dense-feedback -d 'Move the dense list\'s query toward its N best chunks before ranking (pseudo-relevance feedback); 0 turns it off [default: the index\'s, 3]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l dense-rescore -d 'Rows the dense list\'s sign codes choose for exact rescoring: more finds more of what an exact scan would, at more cost [default: max(20 × window, 9 × √chunks)]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l dense-probe -d 'Share of the rows the filters allow, above 0 and at most 1, whose cells the dense list\'s sign codes are scored in (the cells nearest the query): less reads fewer codes and may miss more of what an exact scan finds [default: the cells holding 20 × the rows rescored; every cell when that is over half the allowed chunks]' -r
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l index -d 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l json -d 'Print one JSON document instead of a table'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l sweep -d 'Also try a grid of fusions (RRF at several k, relative and adaptive scores), dense weights and windows; tune on half of the queries and report the winner on the other (held-out) half'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l save -d 'With --sweep: store the winning settings in the index, so later searches use them'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l ignore-identical -d 'Drop a hit whose document id equals the query id (BEIR\'s rule for collections whose queries are themselves documents, e.g. ArguAna)'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l strict -d 'Refuse qrels that name queries the queries file lacks or relevant documents the index lacks (otherwise a warning, and they are scored as unjudged and as misses)'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -s q -l quiet -d 'Print no progress bar'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -l exact -d 'Rank the dense list by scanning every vector, even in an index with an approximate dense index (exact recall, slower on large indexes)'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand eval" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -s n -l limit -d 'How many rows to show at most' -r
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -l index -d 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -f -a "entities" -d 'The entities mentioned by the most chunks, with their community'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -f -a "communities" -d 'The communities of one level, largest first, each with its extractive summary (central entities and the chunks covering them)'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and not __fish_seen_subcommand_from entities communities neighbors" -f -a "neighbors" -d 'An entity\'s strongest relations'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -l kind -d 'Only entities of this kind' -r -f -a "identifier\t'A word the tokenizer keeps whole (`max_connections`, `getUserById`)'
code\t'A plain word used as code (`malloc(`, a word alone in backticks)'
error-code\t'An error or status code (`E1234`, `HTTP 504`)'
heading\t'A heading'
metadata\t'A front-matter value, `key: value`'
document\t'A file'
name\t'A capitalized name inside a sentence (`Patroni`)'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -s n -l limit -d 'How many rows to show at most' -r
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from entities" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -l level -d 'The level: 0 is the finest; higher levels merge communities' -r
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -s n -l limit -d 'How many rows to show at most' -r
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from communities" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -l kind -d 'Only the entity of this kind' -r -f -a "identifier\t'A word the tokenizer keeps whole (`max_connections`, `getUserById`)'
code\t'A plain word used as code (`malloc(`, a word alone in backticks)'
error-code\t'An error or status code (`E1234`, `HTTP 504`)'
heading\t'A heading'
metadata\t'A front-matter value, `key: value`'
document\t'A file'
name\t'A capitalized name inside a sentence (`Patroni`)'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -s n -l limit -d 'How many rows to show at most' -r
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -l json -d 'Print one JSON document instead of text'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c memidx -n "__fish_memidx_using_subcommand graph; and __fish_seen_subcommand_from neighbors" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand push" -l index -d 'The index: a .memidx folder or the folder holding it [default: the nearest .memidx in the current folder or its parents]' -r -F
complete -c memidx -n "__fish_memidx_using_subcommand push" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand push" -s q -l quiet -d 'Print no progress bars'
complete -c memidx -n "__fish_memidx_using_subcommand push" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand push" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand completions" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand completions" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand completions" -s V -l version -d 'Print version'
complete -c memidx -n "__fish_memidx_using_subcommand man" -l color -d 'When to color human-readable output: auto (when stdout is a terminal), always or never; NO_COLOR and CLICOLOR_FORCE are respected' -r -f -a "auto\t'When stdout is a terminal and NO_COLOR is not set'
always\t'Always'
never\t'Never'"
complete -c memidx -n "__fish_memidx_using_subcommand man" -s h -l help -d 'Print help'
complete -c memidx -n "__fish_memidx_using_subcommand man" -s V -l version -d 'Print version'
