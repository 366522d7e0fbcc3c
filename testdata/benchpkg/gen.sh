#!/bin/sh
# Regenerates base.txt and head.txt: `go test ./... -bench` output of the
# module in src/ (two packages, both with BenchmarkParse) at two revisions,
# the head revision hashing each key of kv.Parse 16 times instead of 10.
# Ten runs a side, interleaved (base, head, head, base, ...). Run from this
# directory: sh gen.sh (about a minute).
set -eu
dir=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r src "$tmp/base"
cp -r src "$tmp/head"
sed -i 's/^var Rounds = 10$/var Rounds = 16/' "$tmp/head/kv/kv.go"
grep -q '^var Rounds = 16$' "$tmp/head/kv/kv.go"
: >"$dir/base.txt"
: >"$dir/head.txt"
run() { (cd "$tmp/$1" && go test ./... -run '^$' -bench . -benchmem -count 1) >>"$dir/$1.txt"; }
for i in 1 2 3 4 5; do
	run base; run head
	run head; run base
done
# The independent source diff/bench_test.go compares with:
# go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
benchstat base.txt head.txt >benchstat.txt
