# bash completion for supervise(1) and supervise-exec(1). Installed by
# `cmake --install` as share/bash-completion/completions/supervise and, for
# bash-completion's loading by command name, as .../supervise-exec. After `--`
# the rest of the line is the supervised command, completed like any command line.

# The options of `supervise exec` and of supervise-exec, its lean client
# (uses the caller's cur and prev).
_supervise_exec_options() {
  if [[ $prev == --socket ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
  elif [[ $prev == --cwd ]]; then
    COMPREPLY=($(compgen -d -- "$cur"))
  elif [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "--socket --cwd --timeout --env --profile --help --" -- "$cur"))
  else
    COMPREPLY=($(compgen -c -- "$cur"))
  fi
}

# Sets the caller's locals cur, prev, words and cword (bash-completion's
# _init_completion where it is loaded, COMP_WORDS otherwise).
_supervise_init() {
  _init_completion -s 2>/dev/null || {
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
  }
}

# Everything after the -- at word $1 is the command: complete it as its own line.
_supervise_command_after() {
  if declare -F _command_offset >/dev/null; then
    _command_offset $(($1 + 1))
  else
    COMPREPLY=($(compgen -c -- "$cur"))
  fi
}

_supervise_exec() {
  local cur prev words cword i
  _supervise_init
  for ((i = 1; i < cword; i++)); do
    [[ ${words[i]} == -- ]] && { _supervise_command_after "$i"; return; }
  done
  _supervise_exec_options
}

_supervise() {
  local cur prev words cword
  _supervise_init

  local i sub="" subsub=""
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in
      --)
        _supervise_command_after "$i"
        return
        ;;
      -p | --policy | --preset | -o | --set | --workspace | --audit-file | --audit-fd | --output | --as-exe | --profile)
        ((i++))
        ;;
      -*) ;;
      *)
        if [[ -z $sub ]]; then
          sub=${words[i]}
        elif [[ $sub == policy && -z $subsub ]]; then
          subsub=${words[i]}
        fi
        ;;
    esac
  done

  case $prev in
    --preset)
      COMPREPLY=($(compgen -W "code-sandbox audit-only strict none" -- "$cur"))
      return
      ;;
    -p | --policy | --audit-file | --output | --workspace | --as-exe)
      [[ $prev == --workspace ]] && COMPREPLY=($(compgen -d -- "$cur")) ||
        COMPREPLY=($(compgen -f -- "$cur"))
      return
      ;;
    -o | --set)
      [[ $sub == policy ]] && { COMPREPLY=($(compgen -f -- "$cur")); return; }
      COMPREPLY=($(compgen -W "mode=enforce mode=audit network.mode=none network.mode=localhost
        network.mode=allowlist network.mode=all filesystem.writableRoots+= filesystem.readableRoots+=
        filesystem.denyWrite+= filesystem.denyRead+= exec.allow+= exec.deny+= network.allow+=" -- "$cur"))
      [[ ${COMPREPLY[0]} == *= ]] && compopt -o nospace 2>/dev/null
      return
      ;;
    --audit-fd | --profile | --audit-syslog | --audit-kafka | --audit-otlp) return ;;
    --audit-format)
      COMPREPLY=($(compgen -W "native ocsf ecs" -- "$cur"))
      return
      ;;
    --backend)
      COMPREPLY=($(compgen -W "auto host bpf-lsm ptrace" -- "$cur"))
      return
      ;;
  esac

  local policy_opts="--policy --preset -o --set --workspace"
  case $sub in
    "")
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$policy_opts --audit-file --audit-fd --audit-stdout
          --audit-syslog --audit-kafka --audit-otlp --audit-format --backend --quiet --help --version --" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "doctor status check validate explain policy verify report serve exec agent mcp" -- "$cur"))
      fi
      ;;
    doctor | status) COMPREPLY=($(compgen -W "--json $policy_opts --help" -- "$cur")) ;;
    check) COMPREPLY=($(compgen -W "--policy --help" -- "$cur")) ;;
    validate)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--preset --workspace --json --help" -- "$cur"))
      else
        COMPREPLY=($(compgen -f -X '!*.json' -- "$cur") $(compgen -d -- "$cur"))
      fi
      ;;
    explain)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--json --summary --audit-file --as-exe --profile $policy_opts --help" -- "$cur"))
      else
        case $prev in
          read | write | exec) COMPREPLY=($(compgen -f -- "$cur")) ;;
          connect) ;;
          *) COMPREPLY=($(compgen -W "read write exec connect -" -- "$cur")) ;;
        esac
      fi
      ;;
    serve)
      case $prev in
        --socket | --audit-file) COMPREPLY=($(compgen -f -- "$cur")) ;;
        *) COMPREPLY=($(compgen -W "--socket --allow-uid --max-commands --max-per-client
             $policy_opts --audit-file --audit-syslog --audit-kafka --audit-otlp --audit-format
             --backend --quiet --help" -- "$cur")) ;;
      esac
      ;;
    agent)
      if [[ $prev == agent ]]; then
        COMPREPLY=($(compgen -W "claude-code claude-code-hook" -- "$cur"))
      elif [[ $prev == --project ]]; then
        COMPREPLY=($(compgen -d -- "$cur"))
      else
        COMPREPLY=($(compgen -W "--install --check --project --socket --ask --help --" -- "$cur"))
      fi
      ;;
    mcp) COMPREPLY=($(compgen -W "--socket $policy_opts --help" -- "$cur")) ;;
    exec) _supervise_exec_options ;;
    report)
      if [[ $prev == --html ]]; then
        COMPREPLY=($(compgen -f -- "$cur"))
      elif [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--html --help" -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi
      ;;
    verify)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--quiet -q --help" -- "$cur"))
      else
        COMPREPLY=($(compgen -f -- "$cur"))
      fi
      ;;
    policy)
      case $subsub in
        "") COMPREPLY=($(compgen -W "init learn --help" -- "$cur")) ;;
        init) COMPREPLY=($(compgen -W "--preset --output -o --force --help" -- "$cur")) ;;
        learn)
          if [[ $cur == -* ]]; then
            COMPREPLY=($(compgen -W "--policy --preset --workspace --output -o --force --help" -- "$cur"))
          else
            COMPREPLY=($(compgen -f -- "$cur"))
          fi
          ;;
      esac
      ;;
  esac
}
complete -F _supervise supervise
complete -F _supervise_exec supervise-exec
