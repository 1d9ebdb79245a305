# Sourced by the shell hooks (node, python3): sets `real` to the next PROGRAM on PATH after
# the hooks folder, or exits 127 saying none is there. Usage: next_on_path PROGRAM
next_on_path() {
  hooks=$(cd "$(dirname "$0")" && pwd -P)
  real=
  IFS=:
  for dir in $PATH; do
    [ -n "$dir" ] || continue
    [ "$(cd "$dir" 2>/dev/null && pwd -P)" = "$hooks" ] && continue
    if [ -x "$dir/$1" ]; then real=$dir/$1; break; fi
  done
  unset IFS
  if [ -z "$real" ]; then
    echo "$1 hook: no $1 after the hooks on PATH" >&2
    exit 127
  fi
}
