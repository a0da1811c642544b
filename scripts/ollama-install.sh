#!/usr/bin/env bash
# Build and install a real Ollama server (v0.17.4, CPU only) for the test
# suite, as $OLLAMA_BIN_DIR/ollama-VERSION (a versioned name, so that
# checkouts that test against different versions can share one GOPATH).
#
# Idempotent: skips the build when "$OLLAMA_BIN_DIR/ollama-VERSION --version"
# already reports the wanted version, and skips apt-get when the build
# dependencies are already installed.
#
# Environment:
#   OLLAMA_BIN_DIR   install directory (default: $(go env GOPATH)/bin)
#   OLLAMA_VERSION   ollama module version (default: v0.17.4)
#   GO               go command (default: go on PATH, else /usr/local/go/bin/go)
#
# The tests find the binary via $OLLAMA_BIN, then
# $(go env GOPATH)/bin/ollama-VERSION, then PATH, then
# $(go env GOPATH)/bin/ollama (see internal/testserver/ollamatest).
#
# The module's zip leaves out llama.cpp's vendor directory: its headers come
# from Debian (nlohmann-json3-dev, libstb-dev) and, since v0.7, miniaudio's
# from the Go module github.com/gen2brain/malgo (v0.11.23 carries
# miniaudio v0.11.21; ollama vendors v0.11.22, and the decoder API its
# mtmd helper uses is the same).
set -euo pipefail

OLLAMA_VERSION="${OLLAMA_VERSION:-v0.17.4}"
want="${OLLAMA_VERSION#v}"
MALGO_VERSION=v0.11.23

GO="${GO:-}"
if [ -z "$GO" ]; then
	if command -v go >/dev/null 2>&1; then
		GO=go
	elif [ -x /usr/local/go/bin/go ]; then
		GO=/usr/local/go/bin/go
	else
		echo "ollama-install: go not found (set GO=/path/to/go)" >&2
		exit 1
	fi
fi

OLLAMA_BIN_DIR="${OLLAMA_BIN_DIR:-$("$GO" env GOPATH)/bin}"
bin="$OLLAMA_BIN_DIR/ollama-$want"

start=$(date +%s)
elapsed() { echo $(($(date +%s) - start)); }

# "ollama --version" prints e.g. "Warning: could not connect to a running
# Ollama instance" plus "Warning: client version is 0.6.5" when no server runs.
installed_version() {
	[ -x "$bin" ] || return 0
	OLLAMA_HOST=127.0.0.1:1 "$bin" --version 2>&1 | grep -Eo '[0-9]+\.[0-9]+\.[0-9]+' | tail -n1 || true
}

have=$(installed_version)
if [ "$have" = "$want" ]; then
	echo "ollama-install: $bin already reports $want; nothing to do ($(elapsed)s)"
	exit 0
fi

# --- Debian build dependencies -------------------------------------------
deps=(gcc g++ make pkg-config nlohmann-json3-dev libstb-dev)
missing=()
for p in "${deps[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
	SUDO=""
	if [ "$(id -u)" -ne 0 ]; then
		SUDO="sudo"
	fi
	echo "ollama-install: installing ${missing[*]}"
	t0=$(date +%s)
	export DEBIAN_FRONTEND=noninteractive
	# Wait for a concurrent apt/dpkg (up to 10 min) instead of failing.
	apt=($SUDO apt-get -o DPkg::Lock::Timeout=600)
	if ! "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; then
		"${apt[@]}" update
		"${apt[@]}" install -y --no-install-recommends "${missing[@]}"
	fi
	echo "ollama-install: apt done in $(($(date +%s) - t0))s"
fi

# --- build -----------------------------------------------------------------
mkdir -p "$OLLAMA_BIN_DIR"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Note: the header directory goes on CPLUS_INCLUDE_PATH, not CGO_CPPFLAGS,
# which is part of every cgo package's build cache key: a flag would
# rebuild all of ggml again.
case "$want" in
0.[0-6].*) ;;
*)
	malgo=$(cd "$work" && GOFLAGS=-mod=mod "$GO" mod download -json "github.com/gen2brain/malgo@$MALGO_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	mkdir -p "$work/include/miniaudio"
	cp "$malgo/miniaudio.h" "$work/include/miniaudio/miniaudio.h"
	export CPLUS_INCLUDE_PATH="$work/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
	;;
esac
echo "ollama-install: building github.com/ollama/ollama@$OLLAMA_VERSION into $bin (cgo; the first build takes minutes, see README.md, Requirements)"
t0=$(date +%s)
# The version is normally stamped by ollama's release build; without it the
# binary (and /api/version) reports 0.0.0.
GOFLAGS=-mod=mod CGO_ENABLED=1 GOBIN="$work/bin" \
	"$GO" install -ldflags "-s -w -X github.com/ollama/ollama/version.Version=$want" \
	"github.com/ollama/ollama@$OLLAMA_VERSION"
mv "$work/bin/ollama" "$bin"
echo "ollama-install: go install took $(($(date +%s) - t0))s"

have=$(installed_version)
if [ "$have" != "$want" ]; then
	echo "ollama-install: $bin reports version '$have', want $want" >&2
	exit 1
fi
echo "ollama-install: installed $bin ($want) in $(elapsed)s total"
