'use strict';

// Clock-style durations: "m:ss" under an hour, "h:mm:ss" from an hour on.

function pad(n) {
  return String(n).padStart(2, '0');
}

function formatDuration(totalSeconds) {
  if (!Number.isFinite(totalSeconds) || totalSeconds < 0) {
    throw new RangeError(`not a duration: ${totalSeconds}`);
  }
  const seconds = Math.floor(totalSeconds);
  const hours = Math.floor(seconds / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  const secs = seconds % 60;
  if (hours > 0) {
    return `${hours}:${pad(minutes)}:${pad(secs)}`;
  }
  return `${minutes}:${pad(secs)}`;
}

function parseDuration(text) {
  const parts = String(text).trim().split(':');
  if (parts.length < 2 || parts.length > 3 || parts.some((p) => !/^\d+$/.test(p))) {
    throw new SyntaxError(`not a duration: ${text}`);
  }
  return parts.reduce((total, part) => total * 60 + Number(part), 0);
}

module.exports = { formatDuration, parseDuration };
