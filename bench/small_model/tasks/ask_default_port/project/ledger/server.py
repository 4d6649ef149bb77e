from http.server import BaseHTTPRequestHandler, HTTPServer

from .config import settings


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ledger ok\n")


def serve():
    cfg = settings.load()
    HTTPServer((cfg.host, cfg.port), Handler).serve_forever()
