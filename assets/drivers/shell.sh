# oi-tui kernel driver for bash and zsh.
#
# Reads one command a line from the control FIFO named by $1: "BLOCK NONCE PATH".
# Sources the code in PATH into this very shell, so that variables, functions, `cd` and
# `export` persist, then writes the end marker ESC ] 5379 ; NONCE ; BLOCK ; STATUS BEL to the
# terminal. Code never passes through stdin, so stdin stays free for the block.
#
# Standard streams the block closed or redirected are put back on the terminal before the
# marker.
#
# SIGINT: while a block runs, the trap returns from the sourced file with status 130, which
# ends the block and keeps the shell. A block that sets its own INT trap keeps it to its end.
exec 9<"$1"
set --
if [ -n "${ZSH_VERSION-}" ]; then
  setopt NO_NOMATCH INTERACTIVE_COMMENTS 2>/dev/null
fi
__oi_tty=/dev/tty
( : >"$__oi_tty" ) 2>/dev/null || __oi_tty=/dev/stdout
__oi_failed=0
while :; do
  trap ':' INT
  if ! IFS=' ' read -r __oi_block __oi_nonce __oi_path <&9 || [ -z "${__oi_path-}" ]; then
    # A signal while idle, or the end of the FIFO (the host is gone): a run of failures
    # means the latter.
    __oi_failed=$((__oi_failed + 1))
    [ "$__oi_failed" -lt 50 ] || exit 0
    continue
  fi
  __oi_failed=0
  trap 'return 130 2>/dev/null' INT
  . "$__oi_path"
  __oi_status=$?
  set +e
  trap ':' INT
  # A block that closed this shell's standard streams (`exec >&-`) or sent them elsewhere
  # for good (`exec >/dev/null 2>&1`) would silence every later block, and the model would
  # read "no output": each block starts on the terminal again.
  if [ "$__oi_tty" = /dev/tty ]; then
    [ -t 0 ] 2>/dev/null || exec 0<"$__oi_tty"
    [ -t 1 ] 2>/dev/null || exec 1>"$__oi_tty"
    [ -t 2 ] 2>/dev/null || exec 2>"$__oi_tty"
  fi
  printf '\033]5379;%s;%s;%s\007' "$__oi_nonce" "$__oi_block" "$__oi_status" >"$__oi_tty"
  __oi_path=
done
