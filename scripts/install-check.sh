#!/usr/bin/env bash
# Installs whale from a build folder twice, with `cmake --install --prefix` and as the Debian
# package that CPack makes (unpacked with dpkg -x), into BUILD/install-check/, and runs the
# installed whale-plan from there: it must find the installed profiles (a profile that exists
# only in the install proves it), print --version, and plan a shipped cluster. Writes only
# under BUILD/install-check/. Usage: scripts/install-check.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
work="$build/install-check"
rm -rf "$work"
mkdir -p "$work"
unset WHALE_PROFILES

# check_prefix PREFIX: the installed tools work from PREFIX alone.
check_prefix() {
  local prefix=$1 share="$1/share/whale"
  for tool in whale-plan whale-sim; do
    "$prefix/bin/$tool" --version | grep -Eq "^$tool [0-9]+\.[0-9]+\.[0-9]+ \(git ([0-9a-f]+|unknown)\)$" \
      || { echo "install-check: $tool --version: unexpected output" >&2; exit 1; }
  done
  # A profile and a cluster that only the install has: found only through ../share/whale/profiles.
  sed 's/^name: .*/name: install-only-gpu/' "$share/profiles/a100-sxm4-80gb.yaml" > "$share/profiles/install-only-gpu.yaml"
  sed 's/a100-sxm4-80gb/install-only-gpu/g; s/^name: .*/name: install-only/' "$share/configs/clusters/a100-64.yaml" \
    > "$work/install-only.yaml"
  (cd "$work" && "$prefix/bin/whale-plan" --cluster install-only.yaml --model "$share/configs/models/gpt3-1.3b.yaml" \
     --out "$work/plan.yaml" > "$work/plan.txt")
  grep -q "install-only-gpu" "$work/plan.txt" || { echo "install-check: plan does not use the installed profile" >&2; exit 1; }
  "$prefix/bin/whale-sim" "$work/plan.yaml" > /dev/null
  test -f "$prefix/share/doc/whale/README.md"
  rm "$share/profiles/install-only-gpu.yaml"
}

cmake --install "$build" --prefix "$work/prefix" > /dev/null
check_prefix "$work/prefix"
echo "install-check: cmake --install: ok"

(cd "$work" && cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" > /dev/null)
deb=$(ls "$work"/deb/whale_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
[ "$depends" = "libyaml-cpp0.7, openmpi-bin, libopenmpi3" ] \
  || { echo "install-check: Depends is '$depends'" >&2; exit 1; }
dpkg -x "$deb" "$work/root"
check_prefix "$work/root/usr"
echo "install-check: $(basename "$deb"): ok"
