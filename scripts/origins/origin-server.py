#!/usr/bin/python3
"""A local stand-in for github.com, for trying the origin path without the
internet: serves DIR/<file> at the URL path of each model's origin URL in
perception/manifests/*.json (e.g. /opencv/opencv_zoo/raw/<commit>/models/...),
404 for anything else. Point FASHIOND_MODELS_GITHUB at it.

Usage: origin-server.py DIR [PORT]   (PORT 0 or absent: a free port, printed)

DIR is typically a copy of the model mirror, so what it serves is the mirror's
file under the upstream path; the SHA-256 check is the same either way."""
import glob
import http.server
import json
import os
import sys
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def routes(directory):
    """URL path -> local file, from the committed manifests' origin URLs."""
    out = {}
    for p in sorted(glob.glob(os.path.join(ROOT, "perception", "manifests", "*.json"))):
        with open(p) as f:
            m = json.load(f)
        url = (m.get("origin") or {}).get("url")
        if url:
            out[urllib.parse.unquote(urllib.parse.urlparse(url).path)] = os.path.join(directory, m["file"])
    return out


def main(argv):
    if len(argv) not in (2, 3):
        sys.stderr.write(__doc__)
        return 2
    table = routes(argv[1])

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urllib.parse.unquote(urllib.parse.urlparse(self.path).path)
            local = table.get(path)
            if local is None or not os.path.isfile(local):
                self.send_error(404)
                return
            with open(local, "rb") as f:
                data = f.read()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", int(argv[2]) if len(argv) == 3 else 0), Handler)
    print("http://127.0.0.1:%d" % srv.server_address[1], flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
