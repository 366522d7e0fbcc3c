// app.js: fixed work in three functions, for the sampling-interval example.
// The work does not depend on time, so a run sampled every 100 µs takes
// longer than one sampled every 1000 µs while each function's share of the
// profile stays the same.
'use strict';

function parse(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 31 + i) % 1000003;
  return x;
}

function render(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.sqrt(i) | 0;
  return s;
}

function checksum(n) {
  let h = 7;
  for (let i = 0; i < n; i++) h = (h ^ i) * 16777619 >>> 0;
  return h;
}

let out = 0;
for (let round = 0; round < 40; round++) {
  out += parse(2_000_000) + render(1_000_000) + checksum(500_000);
}
console.log(out);
