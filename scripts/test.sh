#!/usr/bin/env bash
# test.sh: run every test of ompd-go, as CI does.
#
# Builds (or reuses) the OMPD-enabled LLVM OpenMP runtime and its variant
# without OMPD support, then runs go vet, the whole test suite with the race
# detector (real processes and real core files of the fixture programs, also
# against stripped copies of the runtime with their debug files apart, LLVM's
# libompd for comparison, synthetic runtime memory), and each fuzz target
# briefly.
#
# Environment:
#   FUZZTIME  how long each fuzz target runs (default 20s; 0 skips fuzzing)
#   CI=true   tests that need the runtime, gdb or ptrace fail instead of skipping
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build-runtime.sh

go vet ./...
unformatted=$(gofmt -l . | grep -v '^testdata/' || true)
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
# Only target/delve may pull Delve in.
if go list -deps . ./target ./target/core | grep -q go-delve; then
	echo "the root package, target or target/core depends on Delve"; exit 1
fi

go test -race -count=1 -timeout 45m ./...

fuzztime=${FUZZTIME:-20s}
if [[ "$fuzztime" != "0" ]]; then
	go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime "$fuzztime" ./target/core
	go test -run '^$' -fuzz '^FuzzWalk$' -fuzztime "$fuzztime" .
fi
