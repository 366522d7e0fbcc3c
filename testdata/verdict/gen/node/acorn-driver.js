// Driver of the node-lib data set of hotbudget's verdict benchmark: parses
// acorn's own bundled source (dist/acorn.js, shipped in the package) with
// acorn, N times. Usage: node acorn-driver.js ACORN_DIR N
'use strict';
const fs = require('fs');
const path = require('path');
const dir = process.argv[2];
const n = Number(process.argv[3]) || 10;
const file = path.join(dir, 'dist', 'acorn.js');
const acorn = require(file);
const src = fs.readFileSync(file, 'utf8');
let nodes = 0;
for (let i = 0; i < n; i++) {
  const ast = acorn.parse(src, {ecmaVersion: 'latest', sourceType: 'script'});
  nodes += ast.body.length;
}
console.log(JSON.stringify({parses: n, topLevelNodes: nodes}));
