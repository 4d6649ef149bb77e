#!/usr/bin/env node
'use strict';

const { formatDuration, parseDuration } = require('../lib/duration');

const arg = process.argv[2];
if (arg === undefined) {
  console.error('usage: cliptime SECONDS | H:MM:SS');
  process.exit(2);
}
console.log(arg.includes(':') ? parseDuration(arg) : formatDuration(Number(arg)));
