# A smart-HTTP git server for tests: `git http-backend` behind Python's http.server,
# listening on 127.0.0.1 only. Prints its port, then serves the bare repositories under argv[1],
# over TLS when argv[2] and argv[3] name a certificate and its key. Repositories under
# /private/ need HTTP basic auth whose password is $PRIVATE_TOKEN (401 otherwise).
# $DELAY_POST seconds pass before each POST (a fetch's pack request) is answered.
import base64, http.server, subprocess, sys, os, time
root = sys.argv[1]
token = os.environ.get('PRIVATE_TOKEN', '')
delay = float(os.environ.get('DELAY_POST', '0'))
class H(http.server.BaseHTTPRequestHandler):
    def run(self):
        if self.command == 'POST' and delay:
            time.sleep(delay)
        path, _, query = self.path.partition('?')
        if path.startswith('/private/'):
            sent = self.headers.get('Authorization', '')
            password = ''
            if sent.startswith('Basic '):
                password = base64.b64decode(sent[6:]).decode(errors='replace').partition(':')[2]
            if not token or password != token:
                self.send_response(401)
                self.send_header('WWW-Authenticate', 'Basic realm="git"')
                self.send_header('Content-Length', '0')
                self.end_headers()
                return
        n = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(n) if n else b''
        env = dict(os.environ, GIT_PROJECT_ROOT=root, GIT_HTTP_EXPORT_ALL='1', PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get('Content-Type', ''), CONTENT_LENGTH=str(len(body)),
                   GIT_PROTOCOL=self.headers.get('Git-Protocol', ''), HTTP_CONTENT_ENCODING=self.headers.get('Content-Encoding', ''))
        out = subprocess.run(['git', 'http-backend'], input=body, env=env, capture_output=True).stdout
        head, _, rest = out.partition(b'\r\n\r\n')
        status = 200
        headers = []
        for line in head.split(b'\r\n'):
            k, _, v = line.decode().partition(': ')
            if k.lower() == 'status': status = int(v.split()[0])
            elif k: headers.append((k, v))
        self.send_response(status)
        for k, v in headers: self.send_header(k, v)
        self.send_header('Content-Length', str(len(rest)))
        self.end_headers()
        self.wfile.write(rest)
    do_GET = run
    do_POST = run
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)
if len(sys.argv) > 3:
    import ssl
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(sys.argv[2], sys.argv[3])
    s.socket = tls.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
