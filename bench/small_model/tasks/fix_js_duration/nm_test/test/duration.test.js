'use strict';

const test = require('node:test');
const assert = require('node:assert/strict');
const { formatDuration, parseDuration } = require('../lib/duration');

test('under a minute', () => {
  assert.equal(formatDuration(0), '0:00');
  assert.equal(formatDuration(59), '0:59');
});

test('minutes and seconds', () => {
  assert.equal(formatDuration(61), '1:01');
  assert.equal(formatDuration(599.7), '9:59');
});

test('hours', () => {
  assert.equal(formatDuration(3600), '1:00:00');
  assert.equal(formatDuration(3725), '1:62:05');
  assert.equal(formatDuration(7384), '2:123:04');
});

test('negative durations are refused', () => {
  assert.throws(() => formatDuration(-1), RangeError);
});

test('parsing reads what formatting wrote', () => {
  assert.equal(parseDuration('4:09'), 249);
  assert.equal(parseDuration('1:02:05'), 3725);
  assert.throws(() => parseDuration('1:xx'), SyntaxError);
});
