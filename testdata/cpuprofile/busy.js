// busy.js: a program with one known hot function, for hotbudget's tests and
// README quick start. Run with: node --cpu-prof --cpu-prof-interval 1000 busy.js
'use strict';

// busyLoop spins for about ms milliseconds doing arithmetic.
function busyLoop(ms) {
  const end = Date.now() + ms;
  let x = 0;
  while (Date.now() < end) {
    for (let i = 0; i < 1000; i++) {
      x = (x * 31 + i) % 1000003;
    }
  }
  return x;
}

// lightWork does a little string work so busyLoop is not alone in the profile.
function lightWork(n) {
  let s = '';
  for (let i = 0; i < n; i++) {
    s += String.fromCharCode(97 + (i % 26));
  }
  return s.length;
}

const ms = Number(process.argv[2] || 300);
console.log(busyLoop(ms), lightWork(20000));
