"""A real HTTP server on 127.0.0.1 for tests/weights/test_weights_download.cpp: Python's
http.server, serving the files of one folder in the ways a download can go wrong.

    weights_server.py FOLDER LOG

Prints "port N" once it listens on 127.0.0.1:N (a free port), then serves until killed:
    /models/<file>     the file, whole
    /truncated/<file>  announces the file's length, sends half of it and closes the connection
    /stall/<file>      announces the file's length, sends 1000 bytes and then nothing for 10 min
    /silent/<file>     accepts the request and never answers it
    anything else      404
Each request's path is appended to LOG (one line), so that the test can count downloads.

Test-only: the product never runs Python.
"""

import http.server
import os
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass  # the LOG file is the record; stderr stays quiet

    def do_GET(self):
        with open(self.server.log_path, "a") as log:
            log.write(self.path + "\n")
        parts = self.path.strip("/").split("/")
        if len(parts) != 2:
            return self.not_found()
        route, name = parts
        path = os.path.join(self.server.folder, name)
        if not os.path.isfile(path):
            return self.not_found()
        with open(path, "rb") as f:
            body = f.read()
        if route == "silent":
            time.sleep(600)
            return
        if route not in ("models", "truncated", "stall"):
            return self.not_found()
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if route == "models":
            self.wfile.write(body)
        elif route == "truncated":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
        else:  # stall
            self.wfile.write(body[:1000])
            self.wfile.flush()
            time.sleep(600)

    def not_found(self):
        body = b"not here\n"
        self.send_response(404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.folder = sys.argv[1]
    server.log_path = sys.argv[2]
    print(f"port {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
