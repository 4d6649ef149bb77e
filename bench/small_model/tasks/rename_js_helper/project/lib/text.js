'use strict';

// Pads a value on the left with spaces to the given width.
function padLeft(value, width) {
  const text = String(value);
  return text.length >= width ? text : ' '.repeat(width - text.length) + text;
}

function heading(title) {
  return title.toUpperCase();
}

module.exports = { padLeft, heading };
