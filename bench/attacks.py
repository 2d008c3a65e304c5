#!/usr/bin/env python3
"""Attacks on the gateway's default limits, measured: the release `trimgate serve` with no
[server] settings (ledger on) in front of `trimgate mock` and a hostile provider written
here (a raw socket server), each attack sent over a real socket. For each: what the attacker
gets, how long it took, and the gateway's RSS before and after and its peak during the
attack (VmHWM, reset before each attack through /proc/PID/clear_refs).

    python3 bench/attacks.py                    # after cargo build --release -p trimgate
    python3 bench/attacks.py --body-timeout 5   # the stalled body with body_timeout_secs = 5

Env: BENCH_BIN (default $CARGO_TARGET_DIR or target/, then release/trimgate). Everything the
gateway writes (config, ledger, admin token) goes to a temp dir used as HOME and XDG dirs;
loopback only; stops what it starts. Output: a Markdown table on stdout and
bench/results/attacks-<ts>.json (git-ignored). Python 3 stdlib only.
"""

import argparse
import http.client
import json
import os
import platform
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BIN = os.environ.get("BENCH_BIN", os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target")), "release", "trimgate"))

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB

OPENAI_KEY = "sk-mock-openai"
ANTHROPIC_KEY = "sk-ant-mock"
CHAT = b'{"model":"gpt-5","messages":[{"role":"user","content":"hi"}]}'
MESSAGES = b'{"model":"claude-sonnet-5-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}'
RESPONSES = b'{"model":"gpt-5","input":"hi"}'


# ---------------------------------------------------------------------------------------
# The machine and the gateway process


def machine():
    cpu = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = next((l.split(":", 1)[1].strip() for l in f if l.startswith("MemTotal")), "")
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "kernel": platform.release(), "cpu": cpu, "mem_total": mem,
            "python": platform.python_version()}


def status_kib(pid, field):
    """A `VmRSS`/`VmHWM` line of /proc/PID/status, in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def reset_peak(pid):
    """Resets VmHWM to the current RSS (Linux 4.0+: `5` to clear_refs); False if refused."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def mib(kib):
    return None if kib is None else round(kib / 1024, 1)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(argv, prefix, env, log_path):
    """Starts a child; returns it and the address after `prefix` on a line of its stdout."""
    log = open(log_path, "wb")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, env=env, text=True)
    for line in p.stdout:
        if line.startswith(prefix):
            addr = line[len(prefix):].strip().replace("http://", "")
            # Keep draining stdout so the child never blocks on a full pipe.
            threading.Thread(target=lambda: [None for _ in p.stdout], daemon=True).start()
            return p, addr
    raise SystemExit(f"{argv[1]} did not start; see {log_path}")


def stop(p):
    if p.poll() is None:
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ---------------------------------------------------------------------------------------
# HTTP from the attacker's side


def request(addr, method, path, body=None, headers=None, timeout=60):
    """One request with exactly these headers (`Host` included when given); returns
    (status, headers, body) or raises."""
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        headers = dict(headers or {})
        skip_host = any(k.lower() == "host" for k in headers)
        conn.putrequest(method, path, skip_host=skip_host, skip_accept_encoding=True)
        if body is not None:
            headers.setdefault("content-type", "application/json")
            headers["content-length"] = str(len(body))
        for k, v in headers.items():
            conn.putheader(k, v)
        conn.endheaders(body)
        res = conn.getresponse()
        return res.status, {k.lower(): v for k, v in res.getheaders()}, res.read()
    finally:
        conn.close()


def error_of(body):
    """The error's code/type and message from an OpenAI or Anthropic error body."""
    try:
        j = json.loads(body)
    except (ValueError, TypeError):
        return (body[:120].decode("utf-8", "replace") if isinstance(body, bytes) else str(body)[:120])
    e = j.get("error") if isinstance(j, dict) else None
    if isinstance(e, dict):
        code = e.get("code") or e.get("type")
        return f"{code}: {str(e.get('message', ''))[:160]}"
    return json.dumps(j)[:160]


def recv_all(sock, timeout):
    """Reads until EOF, a reset, or `timeout`; returns (bytes, how it ended)."""
    sock.settimeout(timeout)
    data = bytearray()
    end = "eof"
    deadline = time.monotonic() + timeout
    while True:
        try:
            sock.settimeout(max(0.01, deadline - time.monotonic()))
            chunk = sock.recv(1 << 16)
        except socket.timeout:
            end = "timeout"
            break
        except OSError as e:
            end = type(e).__name__
            break
        if not chunk:
            break
        data += chunk
    return bytes(data), end


def status_line(data):
    line = data.split(b"\r\n", 1)[0].decode("latin-1")
    return int(line.split()[1]) if line.startswith("HTTP/") and len(line.split()) > 1 else None


def body_of(data):
    return data.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in data else b""


# ---------------------------------------------------------------------------------------
# The hostile provider: reads a request, then answers by the model it names


class Hostile:
    """`endless`: an SSE event that never ends; `flood`: small complete events up to 1 GiB;
    `huge`: a whole JSON answer of 300 MiB with its content-length. Counts connections and
    the bytes it managed to write before the gateway hung up."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(128)
        self.addr = "%s:%d" % self.listener.getsockname()
        self.connections = 0
        self.requests = 0
        self.sent = {}
        self.lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                s, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                self.connections += 1
            threading.Thread(target=self._serve, args=(s,), daemon=True).start()

    def _serve(self, s):
        with s:
            req = self._read_request(s)
            if req is None:
                return
            with self.lock:
                self.requests += 1
            for name in ("endless", "flood", "huge"):
                if name.encode() in req:
                    sent = getattr(self, "_" + name)(s)
                    with self.lock:
                        self.sent[name] = sent
                    return

    @staticmethod
    def _read_request(s):
        seen = b""
        while b"\r\n\r\n" not in seen:
            chunk = s.recv(65536)
            if not chunk:
                return None
            seen += chunk
        head, _, body = seen.partition(b"\r\n\r\n")
        length, chunked = 0, False
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                length = int(v.strip())
            if k.strip().lower() == b"transfer-encoding" and b"chunked" in v.lower():
                chunked = True
        while chunked and not body.endswith(b"0\r\n\r\n"):
            chunk = s.recv(65536)
            if not chunk:
                return None
            body += chunk
        while len(body) < length:
            chunk = s.recv(65536)
            if not chunk:
                return None
            body += chunk
        return body

    @staticmethod
    def _write(s, data, sent):
        try:
            s.sendall(data)
            return sent + len(data), True
        except OSError:
            return sent, False

    def _endless(self, s):
        sent, ok = self._write(s, b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                  b"connection: close\r\n\r\ndata: {\"a\":\"", 0)
        filler = b"x" * (64 * KIB)
        while ok and sent < 4 * GIB:
            sent, ok = self._write(s, filler, sent)
        return sent

    def _flood(self, s):
        frame = (b'data: {"id":"c","object":"chat.completion.chunk","model":"flood","choices":'
                 b'[{"index":0,"delta":{"content":"' + b"y" * 900 + b'"}}]}\n\n')
        block = frame * (MIB // len(frame))
        sent, ok = self._write(s, b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
                                  b"connection: close\r\n\r\n", 0)
        while ok and sent < GIB:
            sent, ok = self._write(s, block, sent)
        return sent

    def _huge(self, s):
        size = 300 * MIB
        prefix = (b'{"id":"c","object":"chat.completion","created":1,"model":"huge","choices":[{"index":0,'
                  b'"message":{"role":"assistant","content":"')
        suffix = (b'"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":9,'
                  b'"total_tokens":14}}')
        filler = size - len(prefix) - len(suffix)
        head = (b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n"
                b"content-length: %d\r\n\r\n" % size)
        sent, ok = self._write(s, head + prefix, 0)
        block = b"z" * MIB
        left = filler
        while ok and left > 0:
            n = min(left, len(block))
            sent, ok = self._write(s, block[:n], sent)
            left -= n
        if ok:
            sent, ok = self._write(s, suffix, sent)
        return sent


# ---------------------------------------------------------------------------------------
# The attacks; each returns a dict whose `gets` says what the attacker got


class Run:
    def __init__(self, gw_pid, gw_addr, mock_addr, hostile):
        self.pid = gw_pid
        self.addr = gw_addr
        self.port = gw_addr.rsplit(":", 1)[1]
        self.mock = mock_addr
        self.hostile = hostile
        self.results = []

    def mock_count(self):
        _, _, body = request(self.mock, "GET", "/_mock/requests")
        return len(json.loads(body))

    def measure(self, name, fn, *args):
        print(f"-- {name}", file=sys.stderr, flush=True)
        before = status_kib(self.pid, "VmRSS")
        peak_reset = reset_peak(self.pid)
        upstream_before = (self.mock_count(), self.hostile.requests)
        t0 = time.monotonic()
        try:
            r = fn(*args)
        except Exception as e:  # an attack that breaks the harness is a result too
            r = {"gets": f"harness error: {type(e).__name__}: {e}"}
        r.setdefault("seconds", round(time.monotonic() - t0, 2))
        alive = os.path.exists(f"/proc/{self.pid}")
        r["gateway_alive"] = alive
        if alive:
            r["rss_before_mib"] = mib(before)
            r["rss_after_mib"] = mib(status_kib(self.pid, "VmRSS"))
            r["rss_peak_mib"] = mib(status_kib(self.pid, "VmHWM")) if peak_reset else None
            r["forwarded_to_mock"] = self.mock_count() - upstream_before[0]
            r["forwarded_to_hostile"] = self.hostile.requests - upstream_before[1]
        r["attack"] = name
        self.results.append(r)
        print(f"   {r['gets']}", file=sys.stderr, flush=True)
        return r

    # -- the door --------------------------------------------------------------------------

    def rebound_host(self):
        evil = f"evil.example:{self.port}"
        hdrs = {"Host": evil, "Origin": f"http://{evil}"}
        out = {}
        for method, path, body, extra in [
            ("POST", "/v1/chat/completions", CHAT, {}),
            ("POST", "/v1/messages", MESSAGES, {"anthropic-version": "2023-06-01"}),
            ("POST", "/v1/responses", RESPONSES, {}),
            ("GET", "/v1/models", None, {}),
            ("GET", "/metrics", None, {}),
        ]:
            status, _, resp = request(self.addr, method, path, body, {**hdrs, **extra})
            out[path] = {"status": status, "error": error_of(resp)}
        statuses = ", ".join(f"{p} {v['status']}" for p, v in out.items())
        return {"routes": out, "gets": statuses}

    def other_origin(self):
        status, hdrs, resp = request(self.addr, "POST", "/v1/chat/completions", CHAT,
                                     {"Origin": "https://evil.example"})
        pre, pre_hdrs, _ = request(self.addr, "OPTIONS", "/v1/chat/completions", None, {
            "Origin": "https://evil.example", "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type"})
        acao = hdrs.get("access-control-allow-origin"), pre_hdrs.get("access-control-allow-origin")
        return {"status": status, "error": error_of(resp), "preflight_status": pre,
                "allow_origin": acao,
                "gets": f"{status} ({error_of(resp)[:40]}); preflight {pre}, "
                        f"access-control-allow-origin: {acao[0] or 'none'}/{acao[1] or 'none'}"}

    def long_model(self):
        body = json.dumps({"model": "gpt-5" + "x" * 100_000,
                           "messages": [{"role": "user", "content": "hi"}]}).encode()
        status, _, resp = request(self.addr, "POST", "/v1/chat/completions", body)
        return {"status": status, "body": resp[:400].decode("utf-8", "replace"), "body_bytes": len(resp),
                "gets": f"{status}, {len(resp)} B: {error_of(resp)[:90]}"}

    def big_body_raw(self, size):
        """Headers and the whole body written before reading, as the Python SDKs do."""
        s = socket.create_connection(tuple(self.addr.rsplit(":", 1)), timeout=120)
        head = (f"POST /v1/chat/completions HTTP/1.1\r\nhost: {self.addr}\r\ncontent-type: application/json\r\n"
                f"content-length: {size}\r\nconnection: close\r\n\r\n").encode()
        chunk = b" " * MIB
        t0 = time.monotonic()
        written, write_error = 0, None
        try:
            s.sendall(head)
            while written < size:
                n = min(len(chunk), size - written)
                s.sendall(chunk[:n])
                written += n
        except OSError as e:
            write_error = type(e).__name__
        data, end = recv_all(s, 60)
        s.close()
        status = status_line(data)
        wrote = f"after writing {written // MIB} MiB, then {write_error}" if write_error else "after writing it all"
        gets = (f"{status} read {wrote} ({error_of(body_of(data))[:50]})" if status else
                f"no answer: {end} after writing {written // MIB} MiB ({write_error or 'all written'})")
        return {"size": size, "written_bytes": written, "write_error": write_error, "read_end": end,
                "status": status, "body": body_of(data)[:300].decode("utf-8", "replace"),
                "seconds": round(time.monotonic() - t0, 2), "gets": gets}

    def big_body_http_client(self, size):
        body = bytes(size)  # zeros: not JSON, but never parsed past the limit
        host, port = self.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        t0 = time.monotonic()
        try:
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"content-type": "application/json"})
            res = conn.getresponse()
            resp = res.read()
            gets = f"{res.status} read ({error_of(resp)[:50]})"
            out = {"status": res.status, "body": resp[:300].decode("utf-8", "replace")}
        except OSError as e:
            gets = f"exception {type(e).__name__}: {e}"
            out = {"status": None, "exception": f"{type(e).__name__}: {e}"}
        finally:
            conn.close()
        del body
        return {**out, "size": size, "seconds": round(time.monotonic() - t0, 2), "gets": gets}

    def deep_json(self):
        levels = 200_000
        body = (b'{"model":"gpt-5","messages":[{"role":"user","content":"hi"}],"x":'
                + b"[" * (levels - 1) + b"]" * (levels - 1) + b"}")
        status, _, resp = request(self.addr, "POST", "/v1/chat/completions", body)
        return {"status": status, "error": error_of(resp), "gets": f"{status}: {error_of(resp)[:80]}"}

    def many_headers(self):
        hdrs = {f"x-filler-{i}": "1" for i in range(70)}
        status, _, resp = request(self.addr, "POST", "/v1/chat/completions", CHAT, hdrs)
        return {"status": status, "error": error_of(resp), "gets": f"{status}: {error_of(resp)[:80]}"}

    def big_header(self):
        status, _, resp = request(self.addr, "POST", "/v1/messages", MESSAGES,
                                  {"x-big": "b" * (40 * KIB), "anthropic-version": "2023-06-01"})
        return {"status": status, "error": error_of(resp), "gets": f"{status}: {error_of(resp)[:80]}"}

    def stalled_body(self):
        """Starts a 100-byte Anthropic body, sends 9 bytes of it, then nothing."""
        s = socket.create_connection(tuple(self.addr.rsplit(":", 1)))
        s.sendall((f"POST /v1/messages HTTP/1.1\r\nhost: {self.addr}\r\ncontent-type: application/json\r\n"
                   f"anthropic-version: 2023-06-01\r\ncontent-length: 100\r\nconnection: close\r\n\r\n"
                   '{"model":').encode())
        t0 = time.monotonic()
        data, end = recv_all(s, 200)
        took = round(time.monotonic() - t0, 2)
        s.close()
        status = status_line(data)
        return {"status": status, "error": error_of(body_of(data)), "read_end": end, "seconds": took,
                "gets": f"{status} after {took} s: {error_of(body_of(data))[:70]}"}

    def many_connections(self, n, hold):
        """Opens `n` connections at once, each sends GET /healthz and keeps its connection;
        after `hold` s counts the answers, closes the answered ones, and counts again."""
        sel = selectors.DefaultSelector()
        host, port = self.addr.rsplit(":", 1)
        req = f"GET /healthz HTTP/1.1\r\nhost: {self.addr}\r\n\r\n".encode()
        socks = {}
        connect_errors = 0
        for i in range(n):
            s = socket.socket()
            s.setblocking(False)
            try:
                s.connect_ex((host, int(port)))
            except OSError:
                connect_errors += 1
                s.close()
                continue
            socks[s] = {"sent": False, "answered": None}
            sel.register(s, selectors.EVENT_WRITE)
        t0 = time.monotonic()

        def pump(until):
            while time.monotonic() < until:
                for key, ev in sel.select(timeout=0.05):
                    s, st = key.fileobj, socks[key.fileobj]
                    if ev & selectors.EVENT_WRITE and not st["sent"]:
                        try:
                            s.send(req)
                            st["sent"] = True
                            sel.modify(s, selectors.EVENT_READ)
                        except OSError:
                            st["answered"] = "error"
                            sel.unregister(s)
                    elif ev & selectors.EVENT_READ:
                        try:
                            data = s.recv(4096)
                        except OSError:
                            data = b""
                        st["answered"] = status_line(data) or "closed"
                        st["at"] = time.monotonic() - t0
                        sel.unregister(s)

        pump(t0 + hold)
        first = sum(1 for st in socks.values() if st["answered"] == 200)
        first_other = sum(1 for st in socks.values() if st["answered"] not in (None, 200))
        rss_held = mib(status_kib(self.pid, "VmRSS"))
        for s, st in list(socks.items()):
            if st["answered"] is not None:
                s.close()
        pump(time.monotonic() + hold)
        total = sum(1 for st in socks.values() if st["answered"] == 200)
        waiting = sum(1 for st in socks.values() if st["answered"] is None)
        for s in socks:
            s.close()
        sel.close()
        time.sleep(0.5)
        after, _, _ = request(self.addr, "POST", "/v1/chat/completions", CHAT)
        return {"opened": n - connect_errors, "served_while_held": first, "other_answers": first_other,
                "served_after_first_closed": total, "still_waiting": waiting, "rss_while_held_mib": rss_held,
                "normal_request_after": after,
                "gets": f"{first} served in {hold} s while all held open ({n - connect_errors - first} waiting), "
                        f"{total} once those closed; RSS held {rss_held} MiB; then a request: {after}"}

    def in_flight(self, n, delay_ms):
        statuses, retry_after, errors = [], set(), []
        barrier = threading.Barrier(n)
        lock = threading.Lock()

        def one():
            host, port = self.addr.rsplit(":", 1)
            conn = http.client.HTTPConnection(host, int(port), timeout=60)
            try:
                conn.connect()
                barrier.wait()
                conn.request("POST", "/v1/chat/completions", body=CHAT,
                             headers={"content-type": "application/json", "x-mock-delay-ms": str(delay_ms)})
                res = conn.getresponse()
                res.read()
                with lock:
                    statuses.append(res.status)
                    if res.getheader("retry-after"):
                        retry_after.add(res.getheader("retry-after"))
            except Exception as e:
                with lock:
                    errors.append(type(e).__name__)
            finally:
                conn.close()

        threads = [threading.Thread(target=one) for _ in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        ok = statuses.count(200)
        busy = statuses.count(503)
        return {"sent": n, "ok_200": ok, "busy_503": busy, "other": len(statuses) - ok - busy,
                "client_errors": len(errors), "retry_after": sorted(retry_after),
                "gets": f"{ok} × 200, {busy} × 503 (retry-after {','.join(sorted(retry_after)) or '-'}), "
                        f"{len(errors)} errors"}

    # -- the hostile provider --------------------------------------------------------------

    def hostile_stream(self, model, limit_s=300):
        body = json.dumps({"model": f"hostile/{model}", "stream": True,
                           "messages": [{"role": "user", "content": "hi"}]}, separators=(",", ":")).encode()
        host, port = self.addr.rsplit(":", 1)
        conn = http.client.HTTPConnection(host, int(port), timeout=limit_s)
        t0 = time.monotonic()
        conn.request("POST", "/v1/chat/completions", body=body, headers={"content-type": "application/json"})
        res = conn.getresponse()
        got, tail, first_at = 0, b"", None
        while True:
            chunk = res.read1(1 << 20)
            if not chunk:
                break
            if first_at is None:
                first_at = time.monotonic() - t0
            got += len(chunk)
            tail = (tail + chunk)[-4096:]
        took = round(time.monotonic() - t0, 2)
        conn.close()
        last = [l for l in tail.decode("utf-8", "replace").split("\n") if l.startswith("data: ")]
        last_event = last[-1][6:] if last else ""
        time.sleep(0.5)
        sent = self.hostile.sent.get(model)
        return {"status": res.status, "client_bytes": got, "first_byte_s": first_at,
                "last_event": last_event[:300], "hostile_sent_bytes": sent, "seconds": took,
                "gets": f"{res.status}, {got / MIB:.1f} MiB relayed, then: {error_of(last_event)[:70]}"
                        f" (provider wrote {(sent or 0) / MIB:.0f} MiB)"}

    def hostile_whole(self):
        body = json.dumps({"model": "hostile/huge", "messages": [{"role": "user", "content": "hi"}]},
                          separators=(",", ":")).encode()
        t0 = time.monotonic()
        status, _, resp = request(self.addr, "POST", "/v1/chat/completions", body, timeout=300)
        took = round(time.monotonic() - t0, 2)
        time.sleep(5)
        sent = self.hostile.sent.get("huge")
        later = mib(status_kib(self.pid, "VmRSS"))
        return {"status": status, "error": error_of(resp), "body_bytes": len(resp), "hostile_sent_bytes": sent,
                "seconds": took, "rss_5s_later_mib": later,
                "gets": f"{status}: {error_of(resp)[:70]} (provider wrote {(sent or 0) / MIB:.0f} MiB); "
                        f"RSS 5 s later {later} MiB"}


# ---------------------------------------------------------------------------------------


def table(results):
    rows = ["| attack | what the attacker gets | time (s) | RSS before → after (peak), MiB | upstream calls |",
            "|---|---|---:|---|---:|"]
    for r in results:
        if not r.get("gateway_alive"):
            rss = "**gateway died**"
        elif r.get("rss_before_mib") is None:
            rss = "–"
        else:
            rss = f"{r['rss_before_mib']} → {r['rss_after_mib']} ({r['rss_peak_mib']})"
        up = (r.get("forwarded_to_mock") or 0) + (r.get("forwarded_to_hostile") or 0)
        gets = str(r["gets"]).replace("|", "\\|")
        rows.append(f"| {r['attack']} | {gets} | {r['seconds']} | {rss} | {up} |")
    return "\n".join(rows)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=BIN)
    ap.add_argument("--body-timeout", type=int, default=None,
                    help="set body_timeout_secs (default: the gateway's own, 60 s)")
    ap.add_argument("--connections", type=int, default=2000)
    ap.add_argument("--in-flight", type=int, default=400)
    ap.add_argument("--out", default=None, help="the JSON file (default bench/results/attacks-<ts>.json)")
    args = ap.parse_args()
    if not os.access(args.bin, os.X_OK):
        raise SystemExit(f"no trimgate binary at {args.bin} (cargo build --release -p trimgate)")

    # The client and the gateway (which inherits it) need more than 2,000 descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, 65536) if hard != resource.RLIM_INFINITY else 65536
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))

    tmp = tempfile.mkdtemp(prefix="trimgate-attacks-")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_", "DEEPSEEK_", "OTEL_"))}
    env.update({"HOME": tmp, "XDG_CONFIG_HOME": os.path.join(tmp, "config"),
                "XDG_DATA_HOME": os.path.join(tmp, "data"), "XDG_CACHE_HOME": os.path.join(tmp, "cache"),
                "TRIMGATE_LOG": "warn", "MOCK_OPENAI_KEY": OPENAI_KEY, "MOCK_ANTHROPIC_KEY": ANTHROPIC_KEY})
    env.pop("TRIMGATE_CONFIG", None)
    procs = []
    try:
        mock, mock_addr = start([args.bin, "mock", "--listen", "127.0.0.1:0"], "mock provider listening on ",
                                env, os.path.join(tmp, "mock.log"))
        procs.append(mock)
        hostile = Hostile()
        server = "" if args.body_timeout is None else f"body_timeout_secs = {args.body_timeout}\n"
        config = f"""[server]
{server}
[providers.mock-openai]
kind = "openai"
base_url = "http://{mock_addr}/v1"
api_key = {{ env = "MOCK_OPENAI_KEY" }}
models = ["gpt-5"]

[providers.mock-anthropic]
kind = "anthropic"
base_url = "http://{mock_addr}/v1"
api_key = {{ env = "MOCK_ANTHROPIC_KEY" }}
models = ["claude-sonnet-5-5"]

[providers.hostile]
kind = "openai_compatible"
base_url = "http://{hostile.addr}/v1"
models = ["endless", "flood", "huge"]
"""
        cfg = os.path.join(tmp, "config.toml")
        with open(cfg, "w") as f:
            f.write(config)
        gw, gw_addr = start([args.bin, "serve", "--config", cfg, "--listen", "127.0.0.1:0"],
                            "Trimgate listening on ", env, os.path.join(tmp, "gateway.log"))
        procs.append(gw)
        status, _, _ = request(gw_addr, "POST", "/v1/chat/completions", CHAT)
        if status != 200:
            raise SystemExit(f"the gateway does not serve a plain request ({status}); see {tmp}/gateway.log")
        run = Run(gw.pid, gw_addr, mock_addr, hostile)
        rss_start = mib(status_kib(gw.pid, "VmRSS"))

        run.measure("rebound Host + Origin (evil.example:PORT), 5 routes", run.rebound_host)
        run.measure("another site's Origin, right Host", run.other_origin)
        run.measure("`model` of 100 kB", run.long_model)
        run.measure("JSON nested 200,000 deep", run.deep_json)
        run.measure("70 headers", run.many_headers)
        run.measure("one 40 KiB header", run.big_header)
        run.measure("300 MiB body written whole, raw socket", run.big_body_raw, 300 * MIB)
        run.measure("60 MiB body, Python http.client", run.big_body_http_client, 60 * MIB)
        run.measure("300 MiB body, Python http.client", run.big_body_http_client, 300 * MIB)
        run.measure(f"{args.connections} connections at once", run.many_connections, args.connections, 5)
        run.measure(f"{args.in_flight} requests in flight, mock 3 s slow", run.in_flight, args.in_flight, 3000)
        # The stalled body runs beside the provider attacks (it only waits for the body
        # timeout), after the in-flight count so it never holds one of those slots.
        stalled = {}
        mock_before_stalled = run.mock_count()
        t_stalled = threading.Thread(target=lambda: stalled.update(r=run.stalled_body()), daemon=True)
        t_stalled.start()
        run.measure("provider: an SSE event that never ends", run.hostile_stream, "endless")
        run.measure("provider: 1 GiB stream flood", run.hostile_stream, "flood")
        run.measure("provider: 300 MiB whole answer", run.hostile_whole)

        t_stalled.join(timeout=300)
        if "r" in stalled:
            r = stalled["r"]
            r["attack"] = "a body that stops arriving (ran beside the others)"
            r["gateway_alive"] = gw.poll() is None
            # Only the provider attacks ran beside it, and they never reach the mock.
            r["forwarded_to_mock"] = run.mock_count() - mock_before_stalled
            run.results.append(r)

        report = {
            "run": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "command": " ".join(["python3", "bench/attacks.py", *sys.argv[1:]]),
            "bin": args.bin,
            "machine": machine(),
            "limits": "defaults" if args.body_timeout is None else f"defaults, body_timeout_secs = {args.body_timeout}",
            "gateway_rss_at_start_mib": rss_start,
            "gateway_rss_at_end_mib": mib(status_kib(gw.pid, "VmRSS")) if gw.poll() is None else None,
            "results": run.results,
        }
        out = args.out or os.path.join(HERE, "results", time.strftime("attacks-%Y%m%dT%H%M%SZ.json", time.gmtime()))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with open(out, "w") as f:
            json.dump(report, f, indent=2)
        m = report["machine"]
        print(f"# Attacks on {args.bin} ({report['limits']}), {report['run']}")
        print(f"{m['nproc']} CPUs ({m['cpu']}), Linux {m['kernel']}, {m['mem_total']}; "
              f"gateway RSS {rss_start} MiB at start, {report['gateway_rss_at_end_mib']} MiB at the end\n")
        print(table(run.results))
        print(f"\nJSON: {out}")
    finally:
        for p in reversed(procs):
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
