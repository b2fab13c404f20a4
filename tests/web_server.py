#!/usr/bin/env python3
"""web_server.py - helper of tests/test_web.sh: serves a folder on 127.0.0.1 only and writes
the query of the first GET /report to a file (the page's figures), then keeps serving.
usage: web_server.py DIR PORTFILE REPORTFILE   (the chosen port is written to PORTFILE)"""
import http.server
import os
import sys
import urllib.parse

root, portfile, reportfile = sys.argv[1:4]


class Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, directory=root, **kwargs)

    def do_GET(self):
        url = urllib.parse.urlparse(self.path)
        if url.path == '/report':
            with open(reportfile + '.tmp', 'w') as f:
                f.write(url.query.replace('&', ' ') + '\n')
            os.replace(reportfile + '.tmp', reportfile)
            self.send_response(204)
            self.end_headers()
            return
        super().do_GET()

    def log_message(self, *args):
        pass


Handler.extensions_map['.wasm'] = 'application/wasm'
server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
with open(portfile, 'w') as f:
    f.write('%d\n' % server.server_address[1])
server.serve_forever()
