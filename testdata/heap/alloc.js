// A Node program whose live allocations have a known shape, for
// node --heap-prof (see testdata/heap/README.md). Everything it allocates
// stays reachable from globalThis, since V8's sampling heap profiler keeps
// only the allocations still live when Node writes the profile at exit.
// node alloc.js [records] [extra]: extra makes makeRecord allocate one
// more array per call.
const keep = globalThis.keep = [];
const n = Number(process.argv[2] || 20000);
const extra = process.argv[3] === 'extra';

function makeRecord(i) {
  const r = { id: i, name: 'r' + i, tags: [i, i + 1] };
  if (extra) r.more = [i, i, i, i];
  return r;
}

function makeBuffer(i) {
  return new Array(64).fill(i);
}

function tree(d) {
  return d === 0 ? null : { l: tree(d - 1), r: tree(d - 1), d };
}

function build(count) {
  for (let i = 0; i < count; i++) {
    keep.push(makeRecord(i));
    if (i % 4 === 0) keep.push(makeBuffer(i));
  }
}

build(n);
keep.push(tree(10));
