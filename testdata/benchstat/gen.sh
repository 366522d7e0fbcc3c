#!/bin/sh
# Regenerates the real `go test -bench` outputs of this directory from the
# module in src/: base1.txt and base2.txt of the code as it is,
# head.txt with HOTBUDGET_BENCH_VARIANT=head (Hash does twice the work,
# Encode one more allocation per op), head-subset.txt the same for Hash
# and Encode only. Six runs of each, interleaved. Then benchstat's view of
# four comparisons, the independent source diff/benchstat_test.go checks
# our figures against. Run from this directory: sh gen.sh.
set -eu
dir=$(pwd)
run() {
	out=$1 variant=$2 bench=$3
	(cd src && HOTBUDGET_BENCH_VARIANT=$variant go test -run '^$' -bench "$bench" -benchmem -benchtime 200ms -count 1) >>"$dir/$out"
}
: >base1.txt; : >base2.txt; : >head.txt; : >head-subset.txt
for i in 1 2 3 4 5 6; do
	run base1.txt base .
	run head.txt head .
	run base2.txt base .
	run head-subset.txt head 'Hash|Encode'
done
# go install golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
benchstat base1.txt base2.txt >benchstat-aa.txt
benchstat base1.txt head.txt >benchstat-ab.txt
benchstat head.txt base1.txt >benchstat-ba.txt
benchstat base1.txt head-subset.txt >benchstat-subset.txt
