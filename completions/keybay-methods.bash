# SPDX-License-Identifier: Apache-2.0
# bash completion for keybay-methods                               -*- shell-script -*-
#
# Completes commands, global options, each command's options, the subcommands of `root`,
# `import` and `backup`, plugin ids for `enroll`
# (from `keybay-methods plugins --json`), method ids for `remove`, `verify` and `--method`
# (from `keybay-methods list --json`), record keys for `get` (each of its KEY... arguments),
# `set` and `rm` (from `keybay-methods keys --json --no-input`, so a protected store gives none
# unless it is unlocked in the agent), durations for `unlock --for`, `--opt NAME=`
# for `enroll` and `benchmark`, application ids for `--app`, and directories for
# `--plugin-dir`. Needs bash 4; no jq, no bash-completion helpers.
#
# The helper calls pass on the --app and --plugin-dir options already on the command line and
# never prompt (--no-input, standard input from /dev/null, errors discarded).

_keybay_methods_commands="status init get set rm keys list plugins enroll change remove verify benchmark plugin-check root unlock lock agent backup export import reset help"
_keybay_methods_globals="--app --json --method --passphrase-fd --pin-fd --recovery-key-fd --new-passphrase-fd --new-pin-fd --no-input --plugin-dir --root --help"
_keybay_methods_passphrase_opts="memory-kib= iterations= lanes= target-ms="

# Options that take a value (the next word, or after '=').
_keybay_methods_takes_value() {
    case "$1" in
        --app|--plugin-dir|--method|--root|--passphrase-fd|--pin-fd|--recovery-key-fd|--new-passphrase-fd|--new-pin-fd|--label|--opt|--wrong-opt|--change-credential|--for|--to|--to-file|--identity|--attr|--key-from|--prefix) return 0 ;;
    esac
    return 1
}

# Runs keybay-methods with the context options collected in _kbm_context.
_keybay_methods_run() {
    "${_kbm_prog}" "${_kbm_context[@]}" --no-input "$@" </dev/null 2>/dev/null
}

# Method plugin ids, one per line, from `plugins --json`.
_keybay_methods_plugin_ids() {
    _keybay_methods_run plugins --json \
        | sed -e 's/},{/}\n{/g' \
        | grep '"kind":"method"' \
        | sed -n 's/.*"id":"\([a-z0-9._-]*\)".*/\1/p'
}

# Root plugin ids, one per line, from `plugins --json`.
_keybay_methods_root_ids() {
    _keybay_methods_run plugins --json \
        | sed -e 's/},{/}\n{/g' \
        | grep '"kind":"root"' \
        | sed -n 's/.*"id":"\([a-z0-9._-]*\)".*/\1/p'
}

# Method ids, one per line, from `list --json`.
_keybay_methods_method_ids() {
    _keybay_methods_run list --json \
        | grep -o '"id":"[0-9a-f]*"' \
        | sed 's/"id":"\([0-9a-f]*\)"/\1/'
}

# Record keys, one per line, from `keys --json` (keys never need JSON escapes).
_keybay_methods_keys() {
    _keybay_methods_run keys --json \
        | grep -o '"[A-Za-z0-9._/-]*"' \
        | tr -d '"'
}

# `--opt NAME=` candidates for a plugin: the passphrase list without running anything, else
# the `--opt NAME=…` lines that `plugins` prints under the plugin's own line.
_keybay_methods_opt_names() {
    local plugin="$1"
    if [[ -z "$plugin" || "$plugin" == passphrase ]]; then
        printf '%s\n' $_keybay_methods_passphrase_opts
        return
    fi
    _keybay_methods_run plugins | while IFS= read -r line; do
        local inside
        case "$line" in
            "$plugin  "*) inside=1 ;;
            "    --opt "*) [[ -n "$inside" ]] && { line="${line#    --opt }"; printf '%s=\n' "${line%%=*}"; } ;;
            "    "*) ;;
            *) inside= ;;
        esac
    done
}

# Application ids: the store directories that exist.
_keybay_methods_app_ids() {
    local base="${XDG_DATA_HOME:-}"
    [[ "$base" == /* ]] || base="$HOME/.local/share"
    local d
    for d in "$base"/keybay/*/; do
        [[ -d "$d" ]] || continue
        d="${d%/}"
        printf '%s\n' "${d##*/}"
    done
}

_keybay_methods() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local prev="" option=""
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"

    # `--opt=mem<TAB>`: bash splits at '=' (COMP_WORDBREAKS), giving `--opt` `=` `mem`.
    if [[ "$cur" == "=" ]]; then
        _keybay_methods_takes_value "$prev" && { option="$prev"; cur=""; }
    elif [[ "$prev" == "=" ]] && (( COMP_CWORD > 1 )); then
        _keybay_methods_takes_value "${COMP_WORDS[COMP_CWORD-2]}" && option="${COMP_WORDS[COMP_CWORD-2]}"
    elif _keybay_methods_takes_value "$prev"; then
        option="$prev"
    fi

    # Walk the words before the cursor: the command, its positionals, and the context options.
    local _kbm_prog="${COMP_WORDS[0]}"
    [[ "$_kbm_prog" == "~/"* ]] && _kbm_prog="$HOME/${_kbm_prog#\~/}"
    local -a _kbm_context=()
    local command="" ended=""
    local -a positionals=()
    local i=1 w
    while (( i < COMP_CWORD )); do
        w="${COMP_WORDS[i]}"
        if [[ -z "$ended" && "$w" == "--" ]]; then
            ended=1
        elif [[ -z "$ended" && "$w" == -?* ]] && _keybay_methods_takes_value "$w"; then
            local value=""
            if [[ "${COMP_WORDS[i+1]}" == "=" ]] && (( i + 2 < COMP_CWORD )); then
                value="${COMP_WORDS[i+2]}"; (( i += 2 ))
            elif (( i + 1 < COMP_CWORD )); then
                value="${COMP_WORDS[i+1]}"; (( i += 1 ))
            fi
            case "$w" in
                --app|--plugin-dir) [[ -n "$value" ]] && _kbm_context+=("$w" "$value") ;;
            esac
        elif [[ -z "$ended" && ( "$w" == --app=* || "$w" == --plugin-dir=* ) ]]; then
            _kbm_context+=("$w")
        elif [[ -z "$ended" && "$w" == -* && "$w" != "-" ]]; then
            :
        elif [[ -z "$command" ]]; then
            command="$w"
        else
            positionals+=("$w")
        fi
        (( i += 1 ))
    done

    COMPREPLY=()
    if [[ -n "$option" ]]; then
        case "$option" in
            --plugin-dir)
                compopt -o filenames 2>/dev/null
                COMPREPLY=($(compgen -d -- "$cur")) ;;
            --app)
                COMPREPLY=($(compgen -W "$(_keybay_methods_app_ids)" -- "$cur")) ;;
            --method)
                COMPREPLY=($(compgen -W "$(_keybay_methods_method_ids)" -- "$cur")) ;;
            --root)
                COMPREPLY=($(compgen -W "$(_keybay_methods_root_ids) auto" -- "$cur")) ;;
            --for)
                COMPREPLY=($(compgen -W "90s 15m 1h 8h 0" -- "$cur")) ;;
            --opt)
                local plugin=""
                [[ "$command" == enroll ]] && plugin="${positionals[0]}"
                [[ "$command" == benchmark ]] && plugin="${positionals[0]:-passphrase}"
                [[ "$command" == init ]] && plugin="${KEYBAY_ROOT:-file-root}"
                COMPREPLY=($(compgen -W "$(_keybay_methods_opt_names "$plugin")" -- "$cur"))
                compopt -o nospace 2>/dev/null ;;
        esac
        return 0
    fi

    if [[ -z "$ended" && "$cur" == -* ]]; then
        local opts="$_keybay_methods_globals"
        case "$command" in
            set) opts+=" --stdin" ;;
            reset) opts+=" --yes" ;;
            enroll|change) opts+=" --label --opt" ;;
            benchmark|init) opts+=" --opt" ;;
            plugin-check) opts+=" --opt --wrong-opt --change-credential" ;;
            list) opts+=" --describe" ;;
            unlock) opts+=" --for" ;;
            lock) opts+=" --all" ;;
            export) opts+=" --to --to-file --allow-agent" ;;
            import) opts+=" --identity --replace --dry-run --allow-agent --attr --key-from --prefix --remove-source" ;;
        esac
        COMPREPLY=($(compgen -W "$opts" -- "$cur"))
        return 0
    fi

    if [[ -z "$command" ]]; then
        COMPREPLY=($(compgen -W "$_keybay_methods_commands" -- "$cur"))
        return 0
    fi

    if [[ "$command" == root ]]; then
        case ${#positionals[@]} in
            0) COMPREPLY=($(compgen -W "move check reseal" -- "$cur")) ;;
            1) [[ "${positionals[0]}" == move ]] && COMPREPLY=($(compgen -W "$(_keybay_methods_root_ids) auto" -- "$cur")) ;;
        esac
        return 0
    fi
    if [[ "$command" == import || "$command" == backup ]]; then
        (( ${#positionals[@]} == 0 )) || return 0
        local words="age secret-service"
        [[ "$command" == backup ]] && words="exclude include"
        COMPREPLY=($(compgen -W "$words" -- "$cur"))
        return 0
    fi
    if [[ "$command" == get ]]; then
        COMPREPLY=($(compgen -W "$(_keybay_methods_keys)" -- "$cur"))
        return 0
    fi
    (( ${#positionals[@]} == 0 )) || return 0
    case "$command" in
        enroll|benchmark)
            COMPREPLY=($(compgen -W "$(_keybay_methods_plugin_ids)" -- "$cur")) ;;
        remove|verify|change)
            COMPREPLY=($(compgen -W "$(_keybay_methods_method_ids)" -- "$cur")) ;;
        set|rm)
            COMPREPLY=($(compgen -W "$(_keybay_methods_keys)" -- "$cur")) ;;
        plugin-check)
            compopt -o filenames 2>/dev/null
            COMPREPLY=($(compgen -f -X '!*.so' -- "$cur") $(compgen -d -- "$cur")) ;;
    esac
    return 0
}

complete -F _keybay_methods keybay-methods
