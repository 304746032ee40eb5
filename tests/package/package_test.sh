#!/usr/bin/env bash
# The Debian package (packaging/): cpack builds it into a temporary directory
# (not build/, so `make package` beside it is undisturbed); its contents and
# control fields are checked; the extracted binary runs (--version, validate
# of the example policy, check when root); the man page renders without
# warnings; lintian reports no error and no warning.
#
# Non-invasive: nothing is installed on this host (`dpkg -i` by hand:
# README.md, "Install as a package"). 77 = skip, saying what is missing.
# usage: package_test.sh CPACK BUILD_DIR VERSION SANITIZE
set -uo pipefail
cpack=$1 build=$2 version=$3 sanitize=$4

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; failed=1; }
failed=0

[[ $sanitize == ON ]] && skip "a sanitizer build (SV_SANITIZE=ON) is not what the package ships"
for tool in dpkg-deb dpkg-shlibdeps lintian man; do
  command -v "$tool" >/dev/null || skip "needs $tool (tools/setup installs it)"
done

tmp=$(mktemp -d /tmp/supervise-package.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if ! "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1; then
  cat "$tmp/cpack.log"
  echo "FAIL: cpack"
  exit 1
fi
arch=$(dpkg --print-architecture)
deb=$tmp/out/supervise_${version}_${arch}.deb
[[ -f $deb ]] || { ls "$tmp/out"; echo "FAIL: no $deb"; exit 1; }

# Contents: what an operator needs, and nothing of the build.
dpkg-deb -c "$deb" | awk '{print $6}' >"$tmp/contents"
doc=usr/share/doc/supervise
for f in ./usr/bin/supervise ./usr/share/man/man1/supervise.1.gz \
         ./usr/bin/supervise-exec ./usr/share/man/man1/supervise-exec.1.gz \
         ./usr/share/bash-completion/completions/supervise ./usr/share/zsh/vendor-completions/_supervise \
         ./usr/share/bash-completion/completions/supervise-exec \
         ./$doc/README.md ./$doc/policy.md ./$doc/operators.md ./$doc/copyright ./$doc/changelog.gz \
         ./$doc/examples/coding-agent.json ./usr/share/lintian/overrides/supervise \
         ./$doc/serve.md ./usr/lib/systemd/user/supervise-serve@.service; do
  grep -qxF "$f" "$tmp/contents" || fail "not in the package: $f"
done
grep -v '/$' "$tmp/contents" |
  grep -vE '^\./usr/(bin/supervise|lib/systemd/user/supervise-serve@\.service|share/(man/man1|bash-completion|zsh|doc/supervise|lintian/overrides)/)' \
  >"$tmp/unexpected" && fail "unexpected files: $(tr '\n' ' ' <"$tmp/unexpected")"
grep -E '\.o$|/tests?/|_test$' "$tmp/contents" && fail "test binaries or objects in the package"

# Control fields: the project version, section, priority, derived Depends.
field() { dpkg-deb -f "$deb" "$1"; }
[[ $(field Package) == supervise ]] || fail "Package: $(field Package)"
[[ $(field Version) == "$version" ]] || fail "Version: $(field Version), expected $version"
[[ $(field Section) == admin ]] || fail "Section: $(field Section)"
[[ $(field Priority) == optional ]] || fail "Priority: $(field Priority)"
[[ -n $(field Maintainer) ]] || fail "no Maintainer"
[[ $(field Depends) == *libc6* ]] || fail "Depends not derived by dpkg-shlibdeps: '$(field Depends)'"
[[ $(field Description | wc -l) -gt 2 ]] || fail "Description has no long description"

dpkg-deb -x "$deb" "$tmp/root"
bin=$tmp/root/usr/bin/supervise

# packaging/changelog's top entry is this version (lintian can't know).
top=$(gzip -dc "$tmp/root/$doc/changelog.gz" | head -1)
[[ $top == "supervise ($version) "* ]] || fail "changelog top entry '$top' is not version $version"

# The binary: stripped, runs, accepts the example policy.
readelf -S "$bin" | grep -q '\.debug_info' && fail "binary not stripped"
out=$("$bin" --version 2>&1) || fail "--version: $out"
[[ $out == *"$version"* ]] || fail "--version prints '$out', expected $version"
out=$("$bin" validate "$tmp/root/$doc/examples/coding-agent.json" 2>&1) || fail "example policy: $out"
# The lean client: stripped, runs.
lean=$tmp/root/usr/bin/supervise-exec
readelf -S "$lean" | grep -q '\.debug_info' && fail "supervise-exec not stripped"
out=$("$lean" --help 2>&1) || fail "supervise-exec --help: $out"
[[ $out == *--timeout* ]] || fail "supervise-exec --help prints '$out'"

# The man page renders (groff warnings, as lintian's manpage check asks man).
LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$tmp/root/usr/share/man/man1/supervise.1.gz" \
  >"$tmp/man.txt" 2>"$tmp/man.err" || fail "man: $(cat "$tmp/man.err")"
[[ -s $tmp/man.err ]] && fail "man warnings: $(head -5 "$tmp/man.err")"
grep -q 'supervise check' "$tmp/man.txt" || fail "man page has no 'supervise check'"
LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -E UTF-8 -l "$tmp/root/usr/share/man/man1/supervise-exec.1.gz" \
  >"$tmp/man-exec.txt" 2>"$tmp/man-exec.err" || fail "man supervise-exec: $(cat "$tmp/man-exec.err")"
[[ -s $tmp/man-exec.err ]] && fail "man supervise-exec warnings: $(head -5 "$tmp/man-exec.err")"

# supervise check, as root (it creates network namespaces); its own skips are fine.
if [[ $EUID -eq 0 ]]; then
  out=$("$bin" check 2>&1) || fail "supervise check (extracted binary): $out"
  echo "$out"
else
  echo "not root: supervise check not run"
fi

# lintian: no error, no warning (packaging/lintian-overrides explains what is overridden).
lintian --fail-on error,warning --tag-display-limit 0 "$deb" >"$tmp/lintian" 2>&1 ||
  fail "lintian: $(cat "$tmp/lintian")"
grep -v 'running with root privileges' "$tmp/lintian"

((failed)) && exit 1
echo "package ok: $(basename "$deb"), $(wc -l <"$tmp/contents") entries"
