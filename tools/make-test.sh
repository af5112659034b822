#!/usr/bin/env bash
# make test: each step says when it starts and how long it took, so that a
# person waiting knows where the time goes. Usage: tools/make-test.sh [GO].
# Nothing here reaches the network once the module cache holds go.mod's
# modules and tools (go mod download): deadcode is go.mod's own tool.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${1:-go}
export CGO_ENABLED=0

steps=5
n=0
t0=$(date +%s)
step() {
	n=$((n + 1))
	s=$(date +%s)
	echo "== [$n/$steps] $1"
	shift
	"$@"
	echo "   done in $(($(date +%s) - s)) s"
}

deadcode() {
	local dead
	dead=$("$GO" tool deadcode -test ./...)
	if [ -n "$dead" ]; then
		echo "unreachable code:"
		echo "$dead"
		return 1
	fi
}

gotest() {
	# -json through tools/testsum: one line per package as it finishes,
	# failures in full, and every skipped test with its reason.
	local sum rc=0
	sum=$(mktemp)
	"$GO" build -o "$sum" ./tools/testsum || { rm -f "$sum"; return 1; }
	"$GO" test -count=1 -json ./... | "$sum" || rc=$?
	rm -f "$sum"
	return "$rc"
}

python() {
	if command -v python3 >/dev/null; then
		(cd experiments && python3 -m unittest -q)
	else
		echo "python3 not found: skipping experiments/test_*.py"
	fi
}

step "go vet ./..." "$GO" vet ./...
step "go mod tidy -diff" "$GO" mod tidy -diff
step "deadcode -test ./... (no unreachable function)" deadcode
step "go test ./... (GPU tests skip; the reasons are listed at the end)" gotest
step "python3 -m unittest (experiments/)" python
echo "make test: all $steps steps passed in $(($(date +%s) - t0)) s"
