#!/usr/bin/env bash
# The manual pages (packaging/man) describe every option the programs' --help lists: a new
# option without its paragraph fails here. For edgetrain-cli each command's options are looked
# for under the .SS headings that name the command ("label, viewpoint", "truth import").
# Usage: man_pages.sh BIN_DIR MAN_DIR
set -euo pipefail
bin="$1"
man="$2"
failed=0

# The long options a --help text lists, one a line.
options() {
  sed -nE 's/^ +(-[A-Za-z], )?--([a-z0-9-]+).*/\2/p'
}

# The text under the .SS headings of a page that name this command.
section() {
  awk -v cmd="$2" '
    /^\.S[HS] / {
      inside = 0
      if ($1 == ".SS") {
        heading = substr($0, 5); gsub(/"/, "", heading)
        n = split(heading, names, /, /)
        for (i = 1; i <= n; i++) if (names[i] == cmd) inside = 1
      }
      next
    }
    inside' "$1"
}

# check PAGE_TEXT_FILE WHAT OPTION...
check() {
  local text="$1" what="$2"
  shift 2
  for option in "$@"; do
    # troff writes --a-b as \-\-a\-b; the name must end there (--backward is not --backwards).
    pattern=$(printf '%s' "--$option" | sed 's/-/\\\\-/g')
    if ! grep -qE -- "$pattern([^a-z\\\\]|\$)" "$text"; then
      echo "$what: --$option is not in the manual page" >&2
      failed=1
    fi
  done
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

programs=(edgetrain-node)
[ -x "$bin/edgetrain" ] && programs+=(edgetrain) # where the desktop app is built
for program in "${programs[@]}"; do
  mapfile -t opts < <(QT_QPA_PLATFORM=offscreen "$bin/$program" --help | options)
  [ ${#opts[@]} -gt 5 ] || { echo "$program --help lists no options" >&2; exit 1; }
  awk '/^\.SH OPTIONS/ {on = 1; next} /^\.SH / {on = 0} on' "$man/$program.1" >"$work/options"
  check "$work/options" "$program" "${opts[@]}"
done

common=(help json threads gemm conv)
awk '/^\.SH COMMON OPTIONS/ {on = 1; next} /^\.S[HS] / {on = 0} on' "$man/edgetrain-cli.1" \
  >"$work/common"
check "$work/common" "edgetrain-cli (every command)" "${common[@]}"
commands=$("$bin/edgetrain-cli" --help | sed -nE 's/^  ([a-z]+)  .*/\1/p')
[ -n "$commands" ] || { echo "edgetrain-cli --help lists no commands" >&2; exit 1; }
for command in $commands; do
  # truth and lab have subcommands, which their usage line names: truth import|export.
  subs=$("$bin/edgetrain-cli" "$command" --help |
    sed -nE "s/^Usage: edgetrain-cli $command ([a-z|]+) .*/\1/p" | tr '|' ' ')
  names=()
  for sub in $subs; do names+=("$command $sub"); done
  [ ${#names[@]} -gt 0 ] || names=("$command")
  for name in "${names[@]}"; do
    section "$man/edgetrain-cli.1" "$name" >"$work/section"
    if [ ! -s "$work/section" ]; then
      echo "edgetrain-cli $name: no .SS heading names it in the manual page" >&2
      failed=1
      continue
    fi
    # $name unquoted: the command and its subcommand are two arguments.
    # shellcheck disable=SC2086
    mapfile -t opts < <("$bin/edgetrain-cli" $name --help | options |
      grep -vxF -f <(printf '%s\n' "${common[@]}"))
    check "$work/section" "edgetrain-cli $name" "${opts[@]}"
  done
done

[ "$failed" -eq 0 ] && echo "the manual pages describe every option of ${programs[*]} and edgetrain-cli"
exit "$failed"
