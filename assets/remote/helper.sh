# oi-tui's helper on a remote host: one per session, over the session's SSH connection.
#
# oi-tui sends this script to `/bin/sh -s`, after three settings (oi_token, oi_session,
# oi_workdir), then calls its functions one command at a time. Every reply ends with
# ".OK SEQ" or ".ERR SEQ MESSAGE" on a line of its own; file contents come as
# ".DATA SEQ LENGTH", the bytes, then ".OK SEQ".
#
# The session's private directory is $oi_base/oi-tui-remote-UID/TOKEN (0700): the drivers, the
# kernel start script, one directory per kernel (its control FIFO, the blocks' code, its
# figures). Every process a kernel starts carries OI_TUI_REMOTE=TOKEN in its environment, so
# that when the session ends (or its connection drops: this script then reads end-of-file),
# all of them are killed and the directory removed. Directories of sessions whose helper is
# gone (a crash, a reboot) are cleaned at the start of the next.
umask 077
# What the login printed before this (a chatty .bashrc) is not a reply: replies start here.
printf '.BEGIN %s\n' "$oi_token"
# A dropped connection must not stop the cleaning: no death by SIGPIPE or SIGHUP.
trap '' PIPE HUP INT

oi_fail() {
  printf '.ERR %s %s\n' "$1" "$2"
}

# The processes whose environment holds VAR=VALUE (Linux /proc; elsewhere ps).
oi_tagged() {
  if [ -d /proc/self ]; then
    grep -lsaF "$1" /proc/[0-9]*/environ 2>/dev/null | while IFS=/ read -r _ _ p _; do
      [ "$p" = "$$" ] || printf '%s\n' "$p"
    done
  else
    ps -E -ax -o pid=,command= 2>/dev/null | grep -F "$1" | while read -r p _; do
      [ "$p" = "$$" ] || printf '%s\n' "$p"
    done
  fi
}

# Kills every process tagged VAR=VALUE, again until none is left (they may fork meanwhile).
oi_kill_tagged() {
  n=0
  while [ "$n" -lt 5 ]; do
    pids=$(oi_tagged "$1")
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null
    n=$((n + 1))
    sleep 0.05 2>/dev/null || sleep 1
  done
}

# Fields of /proc/PID/stat after the command name: state ppid pgrp session tty tpgid.
oi_stat() {
  s=
  { read -r s <"/proc/$1/stat"; } 2>/dev/null || return 1
  s=${s##*) }
  # shellcheck disable=SC2086
  set -- $s
  oi_state=$1 oi_pgrp=$3 oi_sid=$4 oi_tpgid=$6
}

oi_kernel_pid() {
  oi_pid=
  { read -r oi_pid <"$oi_dir/$1/pid"; } 2>/dev/null
  [ -n "$oi_pid" ]
}

# Removes the directories of sessions whose helper is gone, and kills what they left.
oi_sweep() {
  for d in "$oi_root"/*; do
    [ -d "$d" ] && [ -O "$d" ] || continue
    [ "$d" = "$oi_dir" ] && continue
    p=
    { read -r p <"$d/helper.pid"; } 2>/dev/null
    if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
      continue
    fi
    oi_kill_tagged "OI_TUI_REMOTE=${d##*/}"
    rm -rf "$d"
  done
}

oi_end() {
  oi_kill_tagged "OI_TUI_REMOTE=$oi_token"
  rm -rf "$oi_dir"
}
trap 'oi_end' EXIT

# 1. The private directory.
oi_base=${TMPDIR:-/tmp}
case $oi_base in
  */) oi_base=${oi_base%/} ;;
esac
case $oi_base in
  '' | *[!A-Za-z0-9/_.-]*) oi_base=/tmp ;;
esac
[ -d "$oi_base" ] && [ -w "$oi_base" ] || oi_base=/tmp
# Every session of this user lives under one root of its own: a sandboxed kernel sees the
# whole of it read-only (what is run outside the sandbox, such as `env` and the `run-`
# files, and other sessions' directories, cannot be changed from inside it).
oi_root=$oi_base/oi-tui-remote-$(id -u)
mkdir -m 700 "$oi_root" 2>/dev/null
if [ ! -d "$oi_root" ] || [ -L "$oi_root" ] || [ ! -O "$oi_root" ] || ! chmod 700 "$oi_root"; then
  trap - EXIT
  oi_fail 0 "$oi_root is not a directory of this user's: oi-tui will not use it"
  exit 1
fi
oi_dir=$oi_root/$oi_token
# Made under another name and renamed once it names its helper: another session's sweep
# never sees it without its helper.pid (and takes it for a crashed session's).
oi_new=$oi_root/.new-$oi_token
if ! mkdir -m 700 "$oi_new" 2>/dev/null; then
  trap - EXIT
  oi_fail 0 "cannot make a private directory in $oi_base"
  exit 1
fi
if ! { echo "$$" >"$oi_new/helper.pid" && mv "$oi_new" "$oi_dir"; }; then
  rm -rf "$oi_new"
  trap - EXIT
  oi_fail 0 "cannot make a private directory in $oi_base"
  exit 1
fi
oi_sweep

# 2. The working directory.
[ -n "$oi_workdir" ] || oi_workdir=$HOME
if ! cd "$oi_workdir" 2>/dev/null; then
  oi_fail 0 "the working directory $oi_workdir does not exist there, or cannot be entered"
  exit 1
fi
oi_workdir=$(pwd)
printf '%s\n' "$oi_workdir" >"$oi_dir/workdir"

# 3. What the host has.
printf '.HELLO dir=%s\n' "$oi_dir"
printf '.HELLO workdir=%s\n' "$oi_workdir"
printf '.HELLO host=%s\n' "$(hostname 2>/dev/null || uname -n)"
printf '.HELLO os=%s\n' "$(uname -s) $(uname -m)"
printf '.HELLO shell=%s\n' "${SHELL-}"
printf '.HELLO user=%s\n' "$(id -un 2>/dev/null)"
command -v bwrap >/dev/null 2>&1 && printf '.HELLO bwrap=%s\n' "$(command -v bwrap)"
for p in python3 python bash zsh node nodejs Rscript ruby perl jshell pwsh; do
  w=$(command -v "$p" 2>/dev/null) && case $w in /*) printf '.HAVE %s %s\n' "$p" "$w" ;; esac
done
printf '.OK 0\n'

# The commands oi-tui sends.

# oi_put SEQ NAME: the body (a here-document) becomes the file NAME in the session's
# directory (NAME has no slash but the kernel directory's).
oi_put() {
  if cat >"$oi_dir/$2"; then
    printf '.OK %s\n' "$1"
  else
    oi_fail "$1" "cannot write $2"
  fi
}

# oi_kernel SEQ KERNEL: makes a kernel's directory, before `kernel.sh` starts it.
oi_kernel() {
  if mkdir "$oi_dir/$2" "$oi_dir/$2/images" && mkfifo "$oi_dir/$2/control"; then
    printf '.OK %s\n' "$1"
  else
    oi_fail "$1" "cannot make the kernel's directory"
  fi
}

# oi_block SEQ KERNEL BLOCK NONCE EXT CODE: the block's code is written to the kernel's
# directory (by builtins alone: a block pays for no process) and the driver is told to run
# it, once the kernel holds its FIFO (its pid file says so).
oi_block() {
  f=$oi_dir/$2/block-$3.$5
  if ! printf '%s' "$6" >"$f"; then
    oi_fail "$1" "cannot write the block's code"
    return
  fi
  n=0
  while [ ! -s "$oi_dir/$2/pid" ]; do
    if [ "$n" -ge 1500 ] || [ ! -p "$oi_dir/$2/control" ]; then
      oi_fail "$1" "the kernel did not start"
      return
    fi
    sleep 0.01 2>/dev/null || sleep 1
    n=$((n + 1))
  done
  printf '%s %s %s\n' "$3" "$4" "$f" 1<>"$oi_dir/$2/control"
  printf '.OK %s\n' "$1"
}

# oi_signal SEQ KERNEL SIGNAL: to the kernel terminal's foreground process group.
# Under bubblewrap (the kernel's sandbox there), bubblewrap itself is in that group and
# would die of the signal, taking the kernel with it: the others get it, not bubblewrap.
oi_signal() {
  if oi_kernel_pid "$2" && oi_stat "$oi_pid"; then
    g=$oi_tpgid
    [ "$g" -gt 0 ] 2>/dev/null || g=$oi_pid
    c=
    { read -r c <"/proc/$g/comm"; } 2>/dev/null
    if [ "$c" = bwrap ]; then
      for t in /proc/[0-9]*; do
        oi_stat "${t#/proc/}" && [ "$oi_pgrp" = "$g" ] || continue
        { read -r c <"$t/comm"; } 2>/dev/null
        [ "$c" = bwrap ] || kill -"$3" "${t#/proc/}" 2>/dev/null
      done
    else
      kill -"$3" -"$g" 2>/dev/null || kill -"$3" "$oi_pid" 2>/dev/null
    fi
  fi
  printf '.OK %s\n' "$1"
}

# oi_kill SEQ KERNEL: the kernel and everything it started.
oi_kill() {
  if oi_kernel_pid "$2"; then
    kill -KILL -"$oi_pid" 2>/dev/null
  fi
  oi_kill_tagged "OI_TUI_KERNEL=$oi_token/$2"
  rm -rf "${oi_dir:?}/$2"
  printf '.OK %s\n' "$1"
}

# oi_reads PID TID: whether the thread is asleep reading the terminal $tty: in read(2) on
# it, or in poll, select or epoll_wait watching it for input (as readline, libuv and curses
# do). The watched descriptors are read from the process's memory (poll, select) or its
# epoll's fdinfo.
oi_reads() {
  oi_p=$1
  { read -r nr a0 a1 _ <"/proc/$1/task/$2/syscall"; } 2>/dev/null || return 1
  case $a0$a1 in
    *[!0-9a-fx]*) return 1 ;;
  esac
  case $oi_arch:$nr in
    x86_64:0 | x86_64:17 | x86_64:19 | aarch64:63 | aarch64:65 | aarch64:67)
      oi_is_tty "$((a0))"
      return
      ;;
    x86_64:7 | x86_64:271 | aarch64:73)
      # poll(fds, nfds): struct pollfd { int fd; short events, revents; }, 4-aligned.
      n=$((a1)) a=$((a0))
      [ "$n" -gt 0 ] && [ "$n" -le 256 ] && [ $((a % 4)) -eq 0 ] || return 1
      # shellcheck disable=SC2046
      set -- $(dd if="/proc/$oi_p/mem" bs=4 skip=$((a / 4)) count=$((n * 2)) 2>/dev/null | od -An -v -tu4)
      while [ "$#" -ge 2 ]; do
        if [ $(($2 & 1)) -ne 0 ] && oi_is_tty "$1"; then
          return 0
        fi
        shift 2
      done
      return 1
      ;;
    x86_64:23 | x86_64:270 | aarch64:72)
      # select(nfds, readfds, ...): a bit array (little-endian longs).
      n=$((a0)) a=$((a1))
      [ "$n" -gt 0 ] && [ "$n" -le 1024 ] && [ "$a" -ne 0 ] || return 1
      # shellcheck disable=SC2046
      set -- $(dd if="/proc/$oi_p/mem" bs=1 skip="$a" count=$(((n + 7) / 8)) 2>/dev/null | od -An -v -tu1)
      i=0
      for b in "$@"; do
        for bit in 0 1 2 3 4 5 6 7; do
          if [ $(((b >> bit) & 1)) -eq 1 ] && oi_is_tty $((i * 8 + bit)); then
            return 0
          fi
        done
        i=$((i + 1))
      done
      return 1
      ;;
    x86_64:232 | x86_64:281 | x86_64:441 | aarch64:22 | aarch64:441)
      # epoll_wait(epfd, ...): its fdinfo lists "tfd: FD events: HEX ...".
      {
        while read -r tag fd _ ev _; do
          [ "$tag" = "tfd:" ] || continue
          # (Checked first: a bad number in $((…)) would end this shell.)
          case $fd$ev in
            '' | *[!0-9a-fA-F]*) continue ;;
          esac
          if [ $((0x$ev & 1)) -ne 0 ] && oi_is_tty "$fd"; then
            return 0
          fi
        done <"/proc/$oi_p/fdinfo/$((a0))"; } 2>/dev/null
      return 1
      ;;
  esac
  return 1
}

# oi_is_tty FD: whether the descriptor FD of $oi_p is the terminal $tty.
oi_is_tty() {
  [ "$(readlink "/proc/$oi_p/fd/$1" 2>/dev/null)" = "$tty" ]
}

# oi_readers SEQ KERNEL: the processes of the kernel terminal's foreground group (the
# kernel and its descendants in that group) that are asleep reading the terminal (as
# .READER PID lines).
oi_readers() {
  seq=$1
  if oi_kernel_pid "$2" && oi_stat "$oi_pid"; then
    g=$oi_tpgid
    tty=$(readlink "/proc/$oi_pid/fd/0" 2>/dev/null)
    todo=$oi_pid
    left=200
    while [ -n "$todo" ] && [ "$left" -gt 0 ] && [ -n "$tty" ]; do
      # shellcheck disable=SC2086
      set -- $todo
      [ "$#" -gt 0 ] || break
      p=$1
      shift
      todo=$*
      left=$((left - 1))
      for t in /proc/"$p"/task/[0-9]*; do
        kids=
        { read -r kids <"$t/children"; } 2>/dev/null
        todo="$todo $kids"
      done
      oi_stat "$p" && [ "$oi_pgrp" = "$g" ] || continue
      for t in /proc/"$p"/task/[0-9]*; do
        if oi_reads "$p" "${t##*/}"; then
          printf '.READER %s\n' "$p"
          break
        fi
      done
    done
  fi
  printf '.OK %s\n' "$seq"
}

# oi_signal_pids SEQ SIGNAL PID...: only to processes of this session.
oi_signal_pids() {
  seq=$1 sig=$2
  shift 2
  for p in "$@"; do
    grep -qsaF "OI_TUI_REMOTE=$oi_token" "/proc/$p/environ" && kill -"$sig" "$p" 2>/dev/null
  done
  printf '.OK %s\n' "$seq"
}
oi_arch=$(uname -m)

# oi_cwd SEQ KERNEL: the kernel's working directory now.
oi_cwd() {
  if oi_kernel_pid "$2"; then
    c=$(readlink "/proc/$oi_pid/cwd" 2>/dev/null) && printf '.CWD %s\n' "$c"
  fi
  printf '.OK %s\n' "$1"
}

# oi_walk DIR DEPTH: the image files under DIR (DEPTH levels, not hidden ones) modified
# at or after $oi_ref, as ".FILE PATH". Builtins alone; gives up (status 1) past $oi_left
# entries.
oi_walk() {
  for f in "$1"/*; do
    oi_left=$((oi_left - 1))
    [ "$oi_left" -gt 0 ] || return 1
    if [ -d "$f" ]; then
      [ -L "$f" ] && continue
      case ${f##*/} in
        node_modules | target | venv | oi-tui-remote-*) continue ;;
      esac
      if [ "$2" -gt 1 ]; then
        oi_walk "$f" $(($2 - 1)) || return 1
      fi
    else
      case $f in
        *.png | *.PNG | *.jpg | *.jpeg | *.JPG | *.gif | *.svg | *.webp)
          [ "$oi_ref" -nt "$f" ] || printf '.FILE %s\n' "$f"
          ;;
      esac
    fi
  done
}

# oi_images SEQ KERNEL BLOCK EXT DIR: the figures the driver saved (".FIGURE PATH"), and
# the image files written since the block's code was, under DIR and under the kernel's
# working directory if it moved (".FILE PATH"). A tree too big to walk is left to `find`.
oi_images() {
  seq=$1 k=$2 oi_ref=$oi_dir/$2/block-$3.$4 d=$5
  for f in "$oi_dir/$k/images"/*; do
    [ -f "$f" ] && printf '.FIGURE %s\n' "$f"
  done
  if [ -f "$oi_ref" ]; then
    set -- "$d"
    if oi_kernel_pid "$k" && [ -d "/proc/$oi_pid/cwd" ] && ! [ "/proc/$oi_pid/cwd" -ef "$d" ]; then
      c=$(readlink "/proc/$oi_pid/cwd" 2>/dev/null) && set -- "$d" "$c"
    fi
    for d in "$@"; do
      [ -d "$d" ] || continue
      oi_left=3000
      oi_walk "$d" 4 && continue
      find "$d" -maxdepth 4 \( -name '.*' ! -name . -o -name node_modules -o -name target -o -name venv -o -name 'oi-tui-remote-*' \) -prune -o \
        -type f \( -name '*.png' -o -name '*.PNG' -o -name '*.jpg' -o -name '*.jpeg' -o -name '*.JPG' -o -name '*.gif' -o -name '*.svg' -o -name '*.webp' \) \
        -newer "$oi_ref" -print 2>/dev/null | head -n 200 | while IFS= read -r f; do
        printf '.FILE %s\n' "$f"
      done
    done
  fi
  printf '.OK %s\n' "$seq"
}

# oi_get SEQ LIMIT PATH: the file's bytes (of a snapshot, so that its length holds), or
# ".TOOBIG LENGTH" past LIMIT bytes.
oi_get() {
  s=$oi_dir/transfer
  if cp "$3" "$s" 2>/dev/null; then
    n=$(wc -c <"$s" | tr -d ' ')
    if [ "$n" -gt "$2" ]; then
      printf '.TOOBIG %s\n' "$n"
    else
      printf '.DATA %s %s\n' "$1" "$n"
      cat "$s"
    fi
    rm -f "$s"
    printf '.OK %s\n' "$1"
  else
    oi_fail "$1" "cannot read $3"
  fi
}

# oi_rm SEQ PATH: removes a figure oi-tui has taken.
oi_rm() {
  case $2 in
    "$oi_dir"/*) rm -f "$2" ;;
  esac
  printf '.OK %s\n' "$1"
}

# oi_can_run SEQ PROGRAM: whether PROGRAM (a path, or a name looked for on PATH) can be
# started there.
oi_can_run() {
  case $2 in
    */*)
      if [ -f "$2" ] && [ -x "$2" ]; then
        printf '.OK %s\n' "$1"
      elif [ -e "$2" ]; then
        oi_fail "$1" "$2 is not an executable file there"
      else
        oi_fail "$1" "$2 does not exist there"
      fi
      ;;
    *)
      # (With the kernels' variables: a PATH set for them counts.)
      if (. "$oi_dir/env" && command -v "$2") >/dev/null 2>&1; then
        printf '.OK %s\n' "$1"
      else
        oi_fail "$1" "$2 is not on its PATH"
      fi
      ;;
  esac
}

oi_ping() {
  printf '.OK %s\n' "$1"
}

# oi_resize SEQ KERNEL ROWS COLS: gives the kernel's terminal a size (its foreground
# programs are sent SIGWINCH, as by a local one). `ssh` on pipes at oi-tui's end cannot pass
# one on, so it comes this way. (stty opens the terminal in a child: the helper, a session
# leader with no terminal, would make it its own.)
oi_resize() {
  t=
  { read -r t <"$oi_dir/$2/tty"; } 2>/dev/null
  case $t in
    /dev/*) stty rows "$3" cols "$4" <"$t" 2>/dev/null || t= ;;
    *) t= ;;
  esac
  if [ -n "$t" ]; then
    printf '.OK %s\n' "$1"
  else
    oi_fail "$1" "the kernel's terminal cannot be resized"
  fi
}

# oi_modes SEQ KERNEL: puts back the kernel terminal's modes of its start (echo, line
# editing, signals), when a block changed them (`stty -echo raw`, a crashed full-screen
# program), as a local kernel's are put back before each block. Sent as a block ends.
oi_modes() {
  t= m=
  { read -r t <"$oi_dir/$2/tty" && read -r m <"$oi_dir/$2/modes"; } 2>/dev/null
  # Only while the kernel holds that terminal: once it is gone, its number may be another's.
  if oi_kernel_pid "$2" && kill -0 "$oi_pid" 2>/dev/null &&
    { [ ! -d "/proc/$oi_pid" ] || [ "/proc/$oi_pid/fd/0" -ef "$t" ]; }; then
    case $t in
      /dev/*)
        if [ -n "$m" ] && now=$(stty -g <"$t" 2>/dev/null) && [ "$now" != "$m" ]; then
          stty "$m" <"$t" 2>/dev/null
        fi
        ;;
    esac
  fi
  printf '.OK %s\n' "$1"
}

# oi_pid SEQ KERNEL: the kernel's interpreter's process id.
oi_pid() {
  oi_kernel_pid "$2" && printf '.PID %s\n' "$oi_pid"
  printf '.OK %s\n' "$1"
}
