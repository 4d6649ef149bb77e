'use strict';

const { padLeft, heading } = require('./text');

// Renders rows of [name, amount] as a two-column table.
function renderTable(title, rows) {
  const width = Math.max(...rows.map(([, amount]) => String(amount).length));
  const lines = [heading(title)];
  for (const [name, amount] of rows) {
    lines.push(`${name.padEnd(10)}${padLeft(amount, width)}`);
  }
  const total = rows.reduce((sum, [, amount]) => sum + amount, 0);
  lines.push(`${'total'.padEnd(10)}${padLeft(total, width)}`);
  return lines.join('\n');
}

module.exports = { renderTable };
