// Usage: node total.js FILE — prints the sum of the CSV file's `amount` column, with two decimals.
const fs = require('fs');
const lines = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n');
let total = 0;
for (const line of lines) {
  total += parseFloat(line.split(',')[1]) || 0;
}
console.log(Math.round(total).toFixed(2));
