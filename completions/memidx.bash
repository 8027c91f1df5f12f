_memidx() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="memidx"
                ;;
            memidx,completions)
                cmd="memidx__subcmd__completions"
                ;;
            memidx,eval)
                cmd="memidx__subcmd__eval"
                ;;
            memidx,explain)
                cmd="memidx__subcmd__explain"
                ;;
            memidx,get)
                cmd="memidx__subcmd__get"
                ;;
            memidx,graph)
                cmd="memidx__subcmd__graph"
                ;;
            memidx,index)
                cmd="memidx__subcmd__index"
                ;;
            memidx,man)
                cmd="memidx__subcmd__man"
                ;;
            memidx,mcp)
                cmd="memidx__subcmd__mcp"
                ;;
            memidx,push)
                cmd="memidx__subcmd__push"
                ;;
            memidx,remember)
                cmd="memidx__subcmd__remember"
                ;;
            memidx,search)
                cmd="memidx__subcmd__search"
                ;;
            memidx,status)
                cmd="memidx__subcmd__status"
                ;;
            memidx__subcmd__graph,communities)
                cmd="memidx__subcmd__graph__subcmd__communities"
                ;;
            memidx__subcmd__graph,entities)
                cmd="memidx__subcmd__graph__subcmd__entities"
                ;;
            memidx__subcmd__graph,neighbors)
                cmd="memidx__subcmd__graph__subcmd__neighbors"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        memidx)
            opts="-h -V --color --help --version index search get explain mcp status remember eval graph push completions man"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__completions)
            opts="-h -V --color --help --version bash elvish fish powershell zsh"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__eval)
            opts="-q -h -V --queries --qrels --json --run-out --sweep --save --ignore-identical --strict --quiet --fusion --rrf-k --sparse-weight --dense-weight --graph-weight --recency-weight --window --dense-feedback --exact --dense-rescore --dense-probe --index --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --queries)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --qrels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --run-out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fusion)
                    COMPREPLY=($(compgen -W "relative adaptive rrf" -- "${cur}"))
                    return 0
                    ;;
                --rrf-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sparse-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --graph-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recency-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-feedback)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-rescore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__explain)
            opts="-k -f -h -V --top-k --chunk --json --filter --mode --here --backend --since --until --recent --per-file --fusion --rrf-k --sparse-weight --dense-weight --graph-weight --recency-weight --window --dense-feedback --exact --dense-rescore --dense-probe --index --skip-missing --no-server --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --top-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chunk)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --filter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mode)
                    COMPREPLY=($(compgen -W "hybrid sparse dense graph recency" -- "${cur}"))
                    return 0
                    ;;
                --backend)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fusion)
                    COMPREPLY=($(compgen -W "relative adaptive rrf" -- "${cur}"))
                    return 0
                    ;;
                --rrf-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sparse-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --graph-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recency-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-feedback)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-rescore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__get)
            opts="-h -V --json --max-chars --index --skip-missing --no-server --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max-chars)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__graph)
            opts="-n -h -V --json --limit --index --color --help --version entities communities neighbors"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__graph__subcmd__communities)
            opts="-n -h -V --level --json --limit --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --level)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__graph__subcmd__entities)
            opts="-n -h -V --kind --json --limit --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --kind)
                    COMPREPLY=($(compgen -W "identifier code error-code heading metadata document name" -- "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__graph__subcmd__neighbors)
            opts="-n -h -V --kind --json --limit --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --kind)
                    COMPREPLY=($(compgen -W "identifier code error-code heading metadata document name" -- "${cur}"))
                    return 0
                    ;;
                --limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -n)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__index)
            opts="-q -h -V --full --compact --max-file-size --chunk-tokens --no-ignore --include --exclude --model --bundled-model --embed-url --embed-model --embed-key-file --graph --no-graph --dense-index --index --quiet --watch --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --max-file-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --chunk-tokens)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --include)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --exclude)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --embed-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --embed-model)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --embed-key-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-index)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__man)
            opts="-h -V --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__mcp)
            opts="-h -V --read-only --watch --http --token-file --index --skip-missing --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --http)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__push)
            opts="-q -h -V --quiet --index --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__remember)
            opts="-h -V --title --dir --meta --max-file-size --json --index --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --title)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --meta)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-file-size)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__search)
            opts="-k -f -h -V --request --top-k --json --jsonl --max-chars --no-text --keep-all --filter --mode --here --backend --since --until --recent --per-file --fusion --rrf-k --sparse-weight --dense-weight --graph-weight --recency-weight --window --dense-feedback --exact --dense-rescore --dense-probe --index --skip-missing --no-server --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --request)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --top-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-chars)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --filter)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                -f)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mode)
                    COMPREPLY=($(compgen -W "hybrid sparse dense graph recency" -- "${cur}"))
                    return 0
                    ;;
                --backend)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --since)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --until)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --per-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --fusion)
                    COMPREPLY=($(compgen -W "relative adaptive rrf" -- "${cur}"))
                    return 0
                    ;;
                --rrf-k)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --sparse-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --graph-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --recency-weight)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --window)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-feedback)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-rescore)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dense-probe)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        memidx__subcmd__status)
            opts="-h -V --json --verify --index --color --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --index)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --color)
                    COMPREPLY=($(compgen -W "auto always never" -- "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _memidx -o nosort -o bashdefault -o default memidx
else
    complete -F _memidx -o bashdefault -o default memidx
fi
