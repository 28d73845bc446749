#!/bin/bash
cat > total.js <<'JS'
// Usage: node total.js FILE — prints the sum of the CSV file's `amount` column, with two decimals.
const fs = require('fs');
const [header, ...rows] = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n');
const column = header.split(',').indexOf('amount');
let total = 0;
for (const row of rows) total += Number(row.split(',')[column]);
console.log(total.toFixed(2));
JS
