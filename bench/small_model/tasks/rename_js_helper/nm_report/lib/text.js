'use strict';

// Pads a value on the left with spaces to the given width.
function leftPad(value, width) {
  const text = String(value);
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

function heading(title) {
  return title.toUpperCase();
}

module.exports = { leftPad, heading };
