#!/usr/bin/env bash
# Checks the packages that scripts/package.sh put in out/packages/ as Debian and a user would.
#
#   scripts/check-packages.sh [amd64]  lintian (no errors), the files each package must hold, the
#     desktop entry, the AppStream metainfo; then installs them on this machine, checks the
#     systemd unit against the installed files, runs the installed programs (the node as the
#     service would: its user, its config file, a key where the README says) and removes them
#     again. Needs root (or sudo) for the install.
#   scripts/check-packages.sh arm64    lintian (no errors), the files, that the programs are
#     aarch64, that Depends names the package of every library they link and that Debian 12's
#     arm64 packages (the sysroot's, scripts/arm64-sysroot.sh) satisfy it; then runs the packaged
#     programs under qemu-user with the sysroot's libraries (the node with its packaged config).
#     This machine cannot install them.
# CI runs both from scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."

arch="${1:-amd64}"
case "$arch" in
amd64 | arm64) ;;
*) echo "usage: scripts/check-packages.sh [amd64|arm64]" >&2; exit 2 ;;
esac
shopt -s nullglob
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
fail() {
  echo "FAILED: $*" >&2
  failed=1
}
step() { echo "== $*"; }
# Starts a node (the command given, which must take --print-port) with any free port and no
# beacons, waits up to TENTHS tenths of a second for it to say its port, and stops it. True when
# it listened; its port is in $work/port, its log in $work/node.log.
node_listens() {
  local tenths=$1
  shift
  "$@" --port 0 --discovery-port $((40000 + RANDOM % 20000)) --no-multicast --print-port \
    >"$work/port" 2>"$work/node.log" &
  local pid=$!
  for _ in $(seq "$tenths"); do
    [ -s "$work/port" ] || ! kill -0 $pid 2>/dev/null && break
    sleep 0.1
  done
  kill $pid 2>/dev/null || true
  wait $pid || true
  [ -s "$work/port" ]
}

if [ "$arch" = arm64 ]; then
  node=(out/packages/edgetrain-node_*_arm64.deb)
  app=(out/packages/edgetrain_*_arm64.deb) # the CLI alone, where the cross build made it
  sysroot="${EDGETRAIN_SYSROOT:-out/sysroot-arm64}"
  if [ ${#node[@]} -ne 1 ] || [ ${#app[@]} -gt 1 ]; then
    echo "check-packages.sh: expected one edgetrain-node .deb for arm64 in out/packages/: run" \
      "scripts/package.sh arm64" >&2
    exit 2
  fi
  if [ ! -f "$sysroot/.sysroot/complete" ] || [ ! -f "$sysroot/DEBIAN/symbols" ]; then
    echo "check-packages.sh: no arm64 sysroot at $sysroot (scripts/arm64-sysroot.sh)" >&2
    exit 2
  fi
  for tool in qemu-aarch64-static aarch64-linux-gnu-readelf file; do
    command -v $tool >/dev/null || { echo "check-packages.sh: needs $tool" >&2; exit 2; }
  done
  debs=("${node[@]}" "${app[@]}")

  step "lintian"
  if lintian --fail-on error "${debs[@]}"; then
    echo "no errors"
  else
    fail "lintian found errors"
  fi

  step "what the packages hold"
  expected=(
    usr/bin/edgetrain-node usr/share/man/man1/edgetrain-node.1.gz
    usr/share/doc/edgetrain-node/copyright usr/share/doc/edgetrain-node/changelog.gz
    usr/lib/systemd/system/edgetrain-node.service etc/edgetrain/node.conf
  )
  programs=(edgetrain-node)
  if [ ${#app[@]} -eq 1 ]; then
    expected+=(usr/bin/edgetrain-cli usr/share/man/man1/edgetrain-cli.1.gz
      usr/share/doc/edgetrain/copyright usr/share/doc/edgetrain/changelog.gz)
    programs+=(edgetrain-cli)
  fi
  for deb in "${debs[@]}"; do
    dpkg-deb -x "$deb" "$work/root"
    [ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ] || fail "$deb: Architecture is not arm64"
  done
  for f in "${expected[@]}"; do
    [ -e "$work/root/$f" ] || fail "no /$f in the packages"
  done
  echo "${#expected[@]} files present"
  for program in "${programs[@]}"; do
    file "$work/root/usr/bin/$program" | grep -q 'ARM aarch64' ||
      fail "/usr/bin/$program is not an aarch64 program: $(file "$work/root/usr/bin/$program")"
  done

  step "Depends"
  # Every library a program links must be in Depends by its package, as the sysroot's shlibs and
  # symbols files name it (CPack lets dpkg-shlibdeps leave out what it knows nothing about).
  for deb in "${debs[@]}"; do
    package=$(dpkg-deb -f "$deb" Package)
    depends=$(dpkg-deb -f "$deb" Depends)
    echo "$package: $depends"
    depends_names=$(sed -e 's/, */\n/g' <<<"$depends" | cut -d' ' -f1)
    for program in $(dpkg-deb -c "$deb" | grep -oE '\./usr/bin/[^ ]+$' | cut -c3-); do
      for soname in $(aarch64-linux-gnu-readelf -d "$work/root/$program" |
        sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
        provider=$(awk -v so="$soname" '$1 == so { print $2; exit }' "$sysroot/DEBIAN/symbols")
        if [ -z "$provider" ]; then # shlibs: "libgloo 0 libgloo0 (>= ...)"
          provider=$(awk -v name="${soname%.so.*}" -v version="${soname##*.so.}" \
            '$1 == name && $2 == version { print $3; exit }' "$sysroot/DEBIAN/shlibs")
        fi
        if [ -z "$provider" ]; then
          fail "$program links $soname, which no package in the sysroot declares"
        elif ! grep -qxF "$provider" <<<"$depends_names"; then
          fail "$program links $soname ($provider), which Depends of $package leaves out"
        fi
      done
    done
    # Each dependency is a Debian 12 arm64 package at a version that satisfies it (adduser is
    # Architecture: all, and no library: the sysroot does not have it).
    while read -r name relation version; do
      [ "$name" = adduser ] && continue
      have=$(awk -v p="$name" '$1 == p { print $2 }' "$sysroot/.sysroot/packages.txt")
      if [ -z "$have" ]; then
        fail "$package depends on $name, which is not one of Debian 12's arm64 packages"
      elif [ -n "$relation" ] && ! dpkg --compare-versions "$have" "$relation" "${version%)}"; then
        fail "$package depends on $name $relation ${version%)}, and Debian 12 arm64 has $have"
      fi
    done < <(sed -e 's/, */\n/g' <<<"$depends" | tr -d '(')
  done

  step "the packaged programs under qemu-aarch64-static -L $sysroot"
  for program in "${programs[@]}"; do
    qemu-aarch64-static -L "$sysroot" "$work/root/usr/bin/$program" --version >"$work/help" ||
      fail "/usr/bin/$program --version"
    cat "$work/help"
    qemu-aarch64-static -L "$sysroot" "$work/root/usr/bin/$program" --help >"$work/help" ||
      fail "/usr/bin/$program --help"
    head -n 1 "$work/help"
  done
  # The node with the packaged settings and a key of its own; any free port, no beacons.
  (umask 077 && head -c 32 /dev/urandom | base64 >"$work/cluster.key")
  # qemu takes a few seconds to start Qt: up to 30 s
  if node_listens 300 qemu-aarch64-static -L "$sysroot" "$work/root/usr/bin/edgetrain-node" \
    --config "$work/root/etc/edgetrain/node.conf" --key-file "$work/cluster.key"; then
    echo "the arm64 node listened on port $(cat "$work/port") with the packaged config; stopped:"
    cat "$work/node.log"
  else
    cat "$work/node.log" >&2
    fail "the arm64 node did not start with the packaged config"
  fi

  [ "$failed" -eq 0 ] || exit 1
  echo "check-packages.sh: the arm64 packages are fine"
  exit 0
fi

app=(out/packages/edgetrain_*_amd64.deb)
node=(out/packages/edgetrain-node_*_amd64.deb)
if [ ${#app[@]} -ne 1 ] || [ ${#node[@]} -ne 1 ]; then
  echo "check-packages.sh: expected one edgetrain and one edgetrain-node .deb for amd64 in" \
    "out/packages/: run scripts/package.sh amd64" >&2
  exit 2
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"

step "lintian"
# Errors fail; warnings are shown. (As root lintian only notes that it should not be.)
if lintian --fail-on error "${app[0]}" "${node[0]}"; then
  echo "no errors"
else
  fail "lintian found errors"
fi

step "what the packages hold"
dpkg-deb -x "${app[0]}" "$work/root"
dpkg-deb -x "${node[0]}" "$work/root"
id=io.github.edgetrain.EdgeTrain
expected=(
  usr/bin/edgetrain usr/bin/edgetrain-cli usr/bin/edgetrain-node
  usr/share/man/man1/edgetrain.1.gz usr/share/man/man1/edgetrain-cli.1.gz
  usr/share/man/man1/edgetrain-node.1.gz
  usr/share/doc/edgetrain/copyright usr/share/doc/edgetrain/changelog.gz
  usr/share/doc/edgetrain-node/copyright usr/share/doc/edgetrain-node/changelog.gz
  usr/share/applications/$id.desktop usr/share/metainfo/$id.metainfo.xml
  usr/share/icons/hicolor/scalable/apps/$id.svg
  usr/share/edgetrain/demo.json usr/share/edgetrain/tests/data/vtest/gt.txt
  usr/share/edgetrain/tests/data/vtest/frames.txt
  usr/lib/systemd/system/edgetrain-node.service etc/edgetrain/node.conf
)
for size in 16 22 24 32 48 64 128 256 512; do
  expected+=("usr/share/icons/hicolor/${size}x$size/apps/$id.png")
done
for f in "${expected[@]}"; do
  [ -e "$work/root/$f" ] || fail "no /$f in the packages"
done
echo "${#expected[@]} files present"
for size in 16 512; do
  file "$work/root/usr/share/icons/hicolor/${size}x$size/apps/$id.png" |
    grep -q "$size x $size" || fail "the ${size}x$size icon is not $size x $size pixels"
done

step "desktop-file-validate"
desktop-file-validate "$work/root/usr/share/applications/$id.desktop" || fail "desktop entry"
step "appstreamcli validate"
appstreamcli validate --no-net "$work/root/usr/share/metainfo/$id.metainfo.xml" || fail "metainfo"
# The metainfo, the desktop entry and the icon as the installed tree has them, together.
appstreamcli validate-tree --no-net "$work/root" || fail "the installed tree's AppStream data"

step "installing"
was_installed=$(dpkg-query -W -f='${Status}\n' edgetrain edgetrain-node 2>/dev/null |
  grep -c "install ok installed" || true)
had_user=$(getent passwd edgetrain >/dev/null && echo yes || echo no)
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get install -y -qq --no-install-recommends "./${app[0]}" "./${node[0]}" >"$work/apt.log" 2>&1 ||
  { cat "$work/apt.log" >&2; fail "apt-get install"; exit 1; }
# Leave the machine as it was: packages that were not installed before go again, with the user
# their postinst made.
installed_key=no
cleanup() {
  # A key this script put there goes too (the package keeps keys on purge, by design).
  if [ "$installed_key" = yes ]; then
    $sudo rm -f /etc/edgetrain/cluster.key
  fi
  if [ "$was_installed" -eq 0 ]; then
    step "removing the packages again"
    $sudo apt-get purge -y -qq edgetrain edgetrain-node >/dev/null || true
    if [ "$had_user" = no ]; then
      $sudo deluser --system --quiet edgetrain 2>/dev/null || true
    fi
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step "systemd-analyze verify"
# Offline (no running systemd needed), against the installed binary and manual page; any
# complaint fails. First a broken copy of the unit, to show this check can fail at all.
mkdir "$work/broken"
sed 's/^Restart=on-failure/Restart=sometimes/' /usr/lib/systemd/system/edgetrain-node.service \
  >"$work/broken/edgetrain-node.service"
broken=$(systemd-analyze verify "$work/broken/edgetrain-node.service" 2>&1 || true)
if [ -n "$broken" ]; then
  echo "a broken copy (Restart=sometimes) is refused: $(head -n 1 <<<"$broken")"
else
  fail "systemd-analyze verify did not notice a broken unit"
fi
out=$(systemd-analyze verify /usr/lib/systemd/system/edgetrain-node.service 2>&1) ||
  fail "systemd-analyze verify: exit status $?"
if [ -n "$out" ]; then
  fail "systemd-analyze verify: $out"
else
  echo "edgetrain-node.service: no complaints"
fi
# Installing enables nothing: the node has no key yet.
if [ -e /etc/systemd/system/multi-user.target.wants/edgetrain-node.service ]; then
  fail "installing the package enabled the service"
else
  echo "installing did not enable the service"
fi

step "the installed programs"
for program in edgetrain-cli edgetrain-node; do
  /usr/bin/$program --help >"$work/help" || fail "/usr/bin/$program --help"
  head -n 1 "$work/help"
done
QT_QPA_PLATFORM=offscreen /usr/bin/edgetrain --help >"$work/help" || fail "/usr/bin/edgetrain --help"
head -n 1 "$work/help"
getent passwd edgetrain >/dev/null || fail "postinst made no edgetrain user"

step "the service's command line, as its user"
if [ -e /etc/edgetrain/cluster.key ]; then
  # A key there would start a real node (on its configured port, with beacons): not here.
  echo "/etc/edgetrain/cluster.key exists already: not starting a node with or without it"
else
  # Without a key the node refuses to start (the unit does not even try).
  status=0
  $sudo runuser -u edgetrain -- /usr/bin/edgetrain-node --config /etc/edgetrain/node.conf \
    >/dev/null 2>"$work/nokey" || status=$?
  cat "$work/nokey"
  [ "$status" -eq 2 ] || fail "the node without a key: exit status $status, not 2"
  (umask 077 && head -c 32 /dev/urandom | base64 >"$work/cluster.key")
  $sudo install -m 600 -o edgetrain -g edgetrain "$work/cluster.key" /etc/edgetrain/cluster.key
  installed_key=yes
  # Any free port, no beacons: a CI machine's network is not ours to announce on.
  listened=no
  node_listens 100 $sudo runuser -u edgetrain -- /usr/bin/edgetrain-node \
    --config /etc/edgetrain/node.conf && listened=yes
  $sudo rm -f /etc/edgetrain/cluster.key
  if [ "$listened" = yes ]; then
    echo "the node listened on port $(cat "$work/port") as user edgetrain, then stopped:"
    cat "$work/node.log"
  else
    cat "$work/node.log" >&2
    fail "the node did not start with the installed config and key"
  fi
fi

[ "$failed" -eq 0 ] || exit 1
echo "check-packages.sh: the packages are fine"
