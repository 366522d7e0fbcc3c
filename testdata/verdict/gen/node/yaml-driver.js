// Driver of the node-other data set of hotbudget's verdict benchmark: builds
// a deterministic configuration-like document (a fixed linear congruential
// generator, no Math.random), dumps it to YAML with js-yaml, then N times
// loads the YAML text and dumps the result again. Usage:
// node yaml-driver.js JS_YAML_DIR N
'use strict';
const path = require('path');
const dir = process.argv[2];
const n = Number(process.argv[3]) || 10;
const yaml = require(path.join(dir, 'dist', 'js-yaml.cjs.js'));
let seed = 12345;
function rnd(k) { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % k; }
const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa'];
function word() { return words[rnd(words.length)]; }
const services = [];
for (let i = 0; i < 300; i++) {
  services.push({
    name: `${word()}-${word()}-${i}`,
    image: `registry.example.com/${word()}/${word()}:${rnd(20)}.${rnd(10)}.${rnd(10)}`,
    replicas: 1 + rnd(8),
    enabled: rnd(4) !== 0,
    ratio: rnd(1000) / 1000,
    ports: Array.from({length: 1 + rnd(3)}, () => ({container: 1024 + rnd(60000), protocol: rnd(2) ? 'TCP' : 'UDP'})),
    env: Object.fromEntries(Array.from({length: 2 + rnd(6)}, (_, k) => [`${word().toUpperCase()}_${k}`, `${word()} ${word()} "${rnd(100)}"`])),
    command: ['/bin/sh', '-c', `exec ${word()} --${word()}=${rnd(100)} --verbose`],
    description: `Service ${i}: ${Array.from({length: 10 + rnd(20)}, word).join(' ')}\nsecond line with: colon and # hash`,
  });
}
const text = yaml.dump({version: 3, services});
let size = 0;
for (let i = 0; i < n; i++) {
  const doc = yaml.load(text);
  size += yaml.dump(doc).length;
}
console.log(JSON.stringify({rounds: n, yamlBytes: text.length, dumped: size}));
