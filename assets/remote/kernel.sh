# Starts one kernel on a remote host, in the PTY `ssh -tt` gave it:
#   /bin/sh DIR/kernel.sh LANGUAGE KERNEL READY ROWS COLS
# DIR is the session's private directory (see helper.sh): it holds `env` (the variables
# to set, as sh), `run-LANGUAGE` (sets the interpreter's command line) and the drivers;
# DIR/KERNEL (made by the helper's oi_kernel) the control FIFO and the figures.
oi_dir=${0%/*}
oi_lang=$1
oi_k=$oi_dir/$2
umask 077
# Held open for the kernel's life, so that a line written to the FIFO is never lost
# before the driver opens it; the pid file tells the helper that it is.
exec 3<>"$oi_k/control" || exit 126
# `ssh` runs on pipes at oi-tui's end, so it passed on neither modes nor a size (over a
# master connection the modes arrive all cleared: raw, no echo). The terminal takes sane
# ones and the size asked for here, and later sizes from the helper (oi_resize), which
# finds it by name.
stty sane ixon iutf8 38400 rows "$4" cols "$5" 2>/dev/null ||
  stty sane ixon 38400 rows "$4" cols "$5" 2>/dev/null
tty >"$oi_k/tty" 2>/dev/null
# What the helper puts back before a block when the one before changed them (oi_modes).
stty -g >"$oi_k/modes" 2>/dev/null
echo "$$" >"$oi_k/pid.new" && mv "$oi_k/pid.new" "$oi_k/pid"
. "$oi_dir/env"
OI_TUI_KERNEL=$oi_token/$2
OI_TUI_IMAGES=$oi_k/images
export OI_TUI_KERNEL OI_TUI_IMAGES
read -r oi_wd <"$oi_dir/workdir" && cd "$oi_wd" || exit 126
# What the login printed before (a chatty .bashrc) ends here: oi-tui drops it.
printf 'OI_TUI_READY_%s\n' "$3"
. "$oi_dir/run-$oi_lang"
exec "$@" "$oi_k/control"
