// Preloaded into a node MCP server under test (node --require): every server it opens
// listens on 127.0.0.1 only, on a free port, and the port is written to stderr.
const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const done = typeof args[args.length - 1] === "function" ? args.pop() : undefined;
  const server = this;
  return listen.call(this, 0, "127.0.0.1", function () {
    process.stderr.write(`TETHER_TEST_PORT=${server.address().port}\n`);
    if (done) done.call(this);
  });
};
