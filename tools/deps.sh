#!/usr/bin/env bash
# Installs what shmpi builds with, only what is missing:
# - hwloc (the topology library, through the hwlocality crate) with
#   pkg-config to find it, and libudev (which hwloc's pkg-config file names);
# - a C compiler and linker, `cc` (cargo links with it; `shmpicc` and the C
#   tests compile with it): Debian's gcc;
# - a Rust toolchain at least as new as Cargo.toml's rust-version, where
#   `cargo` is missing: rustup's minimal profile from static.rust-lang.org
#   (as https://sh.rustup.rs does), into ~/.cargo, with cargo, rustc and
#   rustup linked into /usr/local/bin (DEPS_BIN_DIR) so that the command
#   after this one finds them.
# Idempotent: a second run installs nothing and prints nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

pkgs=(libhwloc-dev pkg-config libudev-dev)
command -v cc >/dev/null || pkgs+=(gcc libc6-dev)
command -v cargo >/dev/null || pkgs+=(curl ca-certificates)
missing=()
for p in "${pkgs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
        echo "tools/deps.sh: missing ${missing[*]} and no apt-get here; install them with your package manager" >&2
        exit 1
    fi
    echo "tools/deps.sh: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
    cargo_bin="${CARGO_HOME:-$HOME/.cargo}/bin"
    if [ ! -x "$cargo_bin/cargo" ]; then
        arch=$(uname -m)
        url="https://static.rust-lang.org/rustup/dist/$arch-unknown-linux-gnu/rustup-init"
        echo "tools/deps.sh: no cargo; installing Rust with rustup ($url)" >&2
        # Named rustup-init: it reads its own name to know what to be.
        dir=$(mktemp -d)
        curl --proto '=https' --tlsv1.2 -sSf "$url" -o "$dir/rustup-init"
        chmod +x "$dir/rustup-init"
        "$dir/rustup-init" -y -q --profile minimal --no-modify-path >"$dir/log" 2>&1 ||
            { cat "$dir/log" >&2; exit 1; }
        rm -rf "$dir"
    fi
    for t in cargo rustc rustup; do
        $sudo ln -sf "$cargo_bin/$t" "${DEPS_BIN_DIR:-/usr/local/bin}/$t"
    done
fi

# A cargo that is there but older than the crate needs fails with its own
# error; say what to do instead.
need=$(sed -n 's/^rust-version *= *"\(.*\)"/\1/p' Cargo.toml)
have=$(rustc --version 2>/dev/null | awk '{print $2}' || true)
if [ -n "$need" ] && [ -n "$have" ] &&
    [ "$(printf '%s\n%s\n' "$need" "$have" | sort -V | head -1)" != "$need" ]; then
    echo "tools/deps.sh: rustc $have is older than the $need shmpi needs (Cargo.toml);" \
        "update it (rustup update), or remove the old one so that this script installs rustup's" >&2
    exit 1
fi
