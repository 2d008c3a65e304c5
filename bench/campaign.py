#!/usr/bin/env python3
"""The benchmark campaign: Trimgate beside LiteLLM and Portkey in one run, with nginx (a
plain keep-alive reverse proxy) as the floor cost of one proxy hop and the mock reached
directly as the baseline. Everything talks over 127.0.0.1; every target proxies the same
`trimgate mock` processes, in passthrough mode. Started by bench/campaign.sh, which
installs the peers and builds the binaries first.

Scenarios (names for CAMPAIGN_SCENARIOS):
  latency    added latency at concurrency 1 with a ~1 KiB prompt: p50/p95/p99/p99.9 as
             block quantiles -- balanced Williams blocks of all gateways, each block opened
             and closed by a direct control; the figure is the mean over blocks of
             (gateway quantile - mean of the block's two direct quantiles), with a 95 %
             Student-t interval over blocks. Not one pooled percentile.
  capacity   closed loop at c=50 (wrk) in interleaved blocks of direct, nginx and Trimgate
             (a direct cell before and after, the two gateways in Williams order): each
             gateway's rate as a share of nginx's and of direct's in the same block, mean
             over blocks with a 95 % interval. The target's figure.
  sweep      closed-loop capacity at c = 1, 10, 50, 100 (wrk): rps, p50, p99, CPU per request,
             each target alone
  open       open loop at fixed rates against a mock that answers after 1.5 s (the driver,
             coordinated-omission corrected): the highest rate held with every request 200
  stream     streaming through a mock that spaces its frames: time to first token and to
             the last, native (Chat -> Chat) and translated (Messages client -> Chat provider)
  endpoints  Chat Completions, Responses and Messages x JSON and stream, each served natively
  footprint  binary or install size, idle and peak RSS, CPU per completion, cold start to
             the first 200
  optimizer  bench/optimize_matrix.py: Trimgate's optimizer modes x payloads (Trimgate only)

Phases: the latency and capacity blocks run first with every target up (idle ones idle; their CPU is
counted and reported); then each target runs the other scenarios alone, freshly started,
and is stopped before the next starts. A direct control closes the run.

Env: CAMPAIGN_BIN, CAMPAIGN_DRIVER (binaries), CAMPAIGN_TARGETS (default
direct,nginx,trimgate,portkey,litellm), CAMPAIGN_SCENARIOS (default all), CAMPAIGN_QUICK=1
(tiny durations: a smoke test of the harness, not a measurement), CAMPAIGN_KEEP_TMP=1,
CAMPAIGN_TRIMGATE_TOML (a file appended to Trimgate's config, for A/B runs),
CAMPAIGN_COMMAND (the command line to record). Output: bench/results/campaign-<ts>.json
and .md; the Markdown is also printed.
"""

import http.client
import json
import math
import os
import re
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import compare  # noqa: E402

TARGET_DIR = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
BIN = os.environ.get("CAMPAIGN_BIN", os.path.join(TARGET_DIR, "release", "trimgate"))
DRIVER = os.environ.get("CAMPAIGN_DRIVER", os.path.join(TARGET_DIR, "release", "trimgate-bench-driver"))
# The hyper floor (bench/driver/src/hyperhop.rs), built beside the driver.
HYPERHOP = os.path.join(os.path.dirname(DRIVER), "trimgate-bench-hyperhop")
PEERS = os.path.join(HERE, "peers")
QUICK = os.environ.get("CAMPAIGN_QUICK") == "1"
ALL_TARGETS = ["direct", "nginx", "trimgate", "portkey", "litellm"]
TARGETS = [t for t in os.environ.get("CAMPAIGN_TARGETS", ",".join(ALL_TARGETS)).split(",") if t]
ALL_SCENARIOS = ["latency", "capacity", "sweep", "open", "stream", "endpoints", "footprint", "optimizer"]
SCENARIOS = [s for s in os.environ.get("CAMPAIGN_SCENARIOS", ",".join(ALL_SCENARIOS)).split(",") if s]
GATEWAYS = [t for t in TARGETS if t != "direct"]

# Durations in seconds. The full plan fits the 15 minutes on 2 cores.
PLAN = {
    "blocks": 8, "lat_cell": 2.5, "lat_warm": 0.5,
    "cap_blocks": 10, "cap_d": 3, "cap_w": 1, "cap_conc": 50,
    "sweep_conc": [1, 10, 50, 100], "sweep_d": 4, "sweep_w": 1,
    "ep_conc": 10, "ep_d": 2.0, "ep_w": 0.5,
    "stream_conc": 10, "stream_d": 3.0, "stream_w": 0.5, "frame_ms": 5,
    "open_rates": [25, 50, 100, 250, 500, 1000, 2000, 3000, 4000], "open_d": 4.0, "open_w": 2.0,
    "open_delay_ms": 1500, "open_timeout": 5.0, "open_slack_ms": 1000,
    "cold_starts": 5, "matrix_n": 10, "control_d": 3,
}
if QUICK:
    PLAN.update({
        "blocks": 2, "lat_cell": 0.5, "lat_warm": 0.2, "sweep_d": 1, "sweep_w": 1,
        "cap_blocks": 2, "cap_d": 1, "cap_w": 1,
        "ep_d": 0.5, "ep_w": 0.2, "stream_d": 0.6, "stream_w": 0.2,
        "open_rates": [100, 400], "open_d": 1.0, "open_w": 0.5, "cold_starts": 2, "matrix_n": 2,
        "control_d": 1,
    })
for k in list(PLAN):
    env = os.environ.get("CAMPAIGN_" + k.upper())
    if env:
        PLAN[k] = [float(x) for x in env.split(",")] if isinstance(PLAN[k], list) else type(PLAN[k])(env)

HZ = os.sysconf("SC_CLK_TCK")
NPROC = os.cpu_count()
KEY = "sk-mock-openai"
BASE_HEADERS = {"Authorization": f"Bearer {KEY}", "x-api-key": KEY, "anthropic-version": "2023-06-01"}

SYSTEM = "You are a careful coding assistant. Answer briefly."
FILLER = ("Refactor the parser so that errors carry the line and column of the offending token, "
          "and add a test for an unterminated string. ")


def log(msg):
    print(f"[campaign {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# --- bodies --------------------------------------------------------------------------------

def padded(body, path_to_text, size=1024):
    """Fills the text at path_to_text so the compact JSON is `size` bytes."""
    def setter(value):
        node = body
        for k in path_to_text[:-1]:
            node = node[k]
        node[path_to_text[-1]] = value
    setter("")
    base = len(json.dumps(body, separators=(",", ":")))
    setter((FILLER * 20)[: max(0, size - base)])
    return body


def bodies(tmp):
    """Request bodies by name, written to files: {name: path}."""
    def chat(model, stream=False):
        b = {"model": model, "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": ""}]}
        if stream:
            b["stream"] = True
        return padded(b, ["messages", 1, "content"])

    def responses(model, stream=False):
        b = {"model": model, "instructions": SYSTEM, "input": ""}
        if stream:
            b["stream"] = True
        return padded(b, ["input"])

    def messages(model, stream=False):
        b = {"model": model, "max_tokens": 256, "system": SYSTEM, "messages": [{"role": "user", "content": ""}]}
        if stream:
            b["stream"] = True
        return padded(b, ["messages", 0, "content"])

    made = {
        "chat": chat("gpt-5-mini"),
        "chat_stream": chat("gpt-5-mini", True),
        "responses": responses("gpt-5-mini"),
        "responses_stream": responses("gpt-5-mini", True),
        "messages": messages("claude-bench"),
        "messages_stream": messages("claude-bench", True),
        "slow_chat": chat("slow-gpt"),
        "frames_chat_stream": chat("stream-gpt", True),
        "frames_messages_translated_stream": messages("stream-gpt", True),
    }
    paths = {}
    for name, b in made.items():
        paths[name] = os.path.join(tmp, f"body-{name}.json")
        with open(paths[name], "w") as f:
            json.dump(b, f, separators=(",", ":"))
    return paths


# --- processes -----------------------------------------------------------------------------

def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def children_of():
    """{ppid: [pid, ...]} for every process."""
    kids = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                kids.setdefault(ppid, []).append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return kids


def tree(pid):
    kids = children_of()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def cpu_ticks(pids):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total


def status_kib(pids, field):
    total = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith(field + ":"):
                        total += int(line.split()[1])
        except (OSError, ValueError):
            pass
    return total


def idle_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[4]) + int(fields[5])


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def post(addr, path, body, headers, timeout=5.0):
    host, port = addr.rsplit(":", 1)
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json", **headers})
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


class Proc:
    """A process we started, with its log files; stopped by its own pid (and its group)."""

    def __init__(self, name, argv, tmp, env=None, cwd=None):
        self.name = name
        self.log = os.path.join(tmp, f"{name}.log")
        self.started = time.perf_counter()
        with open(self.log, "wb") as out:
            self.p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=cwd,
                                      env={**os.environ, **(env or {})}, start_new_session=True)

    def pids(self):
        return tree(self.p.pid) if self.p.poll() is None else []

    def alive(self):
        return self.p.poll() is None

    def stop(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, 9)
                self.p.wait()

    def tail(self, n=2000):
        try:
            with open(self.log, "rb") as f:
                return f.read()[-n:].decode(errors="replace")
        except OSError:
            return ""


def wait_listening(proc, pattern, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = re.search(pattern, open(proc.log, errors="replace").read())
        if m:
            return m.group(1)
        if not proc.alive():
            break
        time.sleep(0.02)
    raise SystemExit(f"{proc.name} did not start:\n{proc.tail()}")


# --- targets -------------------------------------------------------------------------------

class Mocks:
    """Three mock providers: instant, slow (answers after the open loop's delay) and frames
    (spaces its stream frames)."""

    def __init__(self, tmp):
        self.procs = {}
        self.addr = {}
        for kind, extra in (("instant", []), ("slow", ["--delay-ms", str(PLAN["open_delay_ms"])]),
                            ("frames", ["--frame-interval-ms", str(PLAN["frame_ms"])])):
            p = Proc(f"mock-{kind}", [BIN, "mock", "--listen", "127.0.0.1:0", "--any-key", *extra], tmp,
                     env={"TRIMGATE_LOG": "warn"})
            self.procs[kind] = p
            self.addr[kind] = wait_listening(p, r"listening on http://([0-9.:]+)")

    def pids(self):
        return [p for proc in self.procs.values() for p in proc.pids()]

    def stop(self):
        for p in self.procs.values():
            p.stop()


# Where each request of a scenario goes on a target: (mock kind, path, body name, provider).
ROUTES = {
    "chat": ("instant", "/v1/chat/completions", "chat", "openai"),
    "chat_stream": ("instant", "/v1/chat/completions", "chat_stream", "openai"),
    "responses": ("instant", "/v1/responses", "responses", "openai"),
    "responses_stream": ("instant", "/v1/responses", "responses_stream", "openai"),
    "messages": ("instant", "/v1/messages", "messages", "anthropic"),
    "messages_stream": ("instant", "/v1/messages", "messages_stream", "anthropic"),
    "slow_chat": ("slow", "/v1/chat/completions", "slow_chat", "openai"),
    "native_stream": ("frames", "/v1/chat/completions", "frames_chat_stream", "openai"),
    "translated_stream": ("frames", "/v1/messages", "frames_messages_translated_stream", "openai"),
}


class Target:
    name = "?"
    translates = True

    def __init__(self, tmp, mocks, bodies_):
        self.tmp, self.mocks, self.bodies = tmp, mocks, bodies_
        self.proc = None
        self.addr = None
        self.cold_start_ms = None

    def argv_env(self):
        raise NotImplementedError

    def start(self):
        """Starts the target and times spawn -> first 200 on a chat request."""
        argv, env, cwd = self.argv_env()
        t0 = time.perf_counter()
        self.proc = Proc(self.name, argv, self.tmp, env=env, cwd=cwd)
        self.cold_start_ms = self.first_200(t0, timeout=120)

    def first_200(self, t0, timeout):
        url, headers, body = self.request("chat")
        path = url.split(self.addr, 1)[1]
        with open(body, "rb") as f:
            data = f.read()
        deadline = t0 + timeout
        last = ""
        while time.perf_counter() < deadline:
            if not self.proc.alive():
                raise SystemExit(f"{self.name} exited:\n{self.proc.tail()}")
            try:
                status, out = post(self.addr, path, data, headers, timeout=10)
                if status == 200:
                    return (time.perf_counter() - t0) * 1e3
                last = f"HTTP {status}: {out[:300]!r}"
            except OSError as e:
                last = str(e)
            time.sleep(0.001)
        raise SystemExit(f"{self.name}: no 200 within {timeout}s ({last})\n{self.proc.tail()}")

    def pids(self):
        return self.proc.pids() if self.proc else []

    def stop(self):
        if self.proc:
            self.proc.stop()
            self.proc = None

    def headers_for(self, route):
        return dict(BASE_HEADERS)

    def url_for(self, route):
        mock, path, _, _ = ROUTES[route]
        return f"http://{self.addr}{path}"

    def supports(self, route):
        return True

    def request(self, route):
        """(url, headers, body file) for a scenario's request on this target, or None."""
        if not self.supports(route):
            return None
        return self.url_for(route), self.headers_for(route), self.bodies[ROUTES[route][2]]

    def version(self):
        return ""

    def size(self):
        return None


class Direct(Target):
    name = "direct"

    def start(self):
        self.addr = self.mocks.addr["instant"]
        self.cold_start_ms = None

    def url_for(self, route):
        mock, path, _, _ = ROUTES[route]
        return f"http://{self.mocks.addr[mock]}{path}"

    def supports(self, route):
        return route != "translated_stream"

    def pids(self):
        return []

    def stop(self):
        pass


def nginx_hop(name, mock_addr, port):
    """An nginx upstream named `name` (the mock, kept-alive connections) and the server on
    `port` that proxies to it: a plain keep-alive reverse proxy, no buffering."""
    return (f"  upstream {name} {{ server {mock_addr}; keepalive 4096; }}",
            f"  server {{ listen 127.0.0.1:{port} backlog=4096; location / {{ proxy_pass http://{name}; "
            f"proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_buffering off; }} }}")


def nginx_conf(d, hops, one_process=False):
    """nginx.conf for `hops` with its files under `d`: one worker per core, or with
    `one_process` a single process and no master (what a tool attached to it follows)."""
    workers = "master_process off;\nworker_processes 1;" if one_process else "worker_processes auto;"
    return f"""{workers}
worker_rlimit_nofile 30000;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log warn;
events {{ worker_connections 14000; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  keepalive_requests 100000;
  proxy_read_timeout 60s;
{chr(10).join(u for u, _ in hops)}
{chr(10).join(s for _, s in hops)}
}}
"""


class Nginx(Target):
    name = "nginx"

    def argv_env(self):
        d = os.path.join(self.tmp, "nginx")
        os.makedirs(d, exist_ok=True)
        self.ports = {k: free_port() for k in ("instant", "slow", "frames")}
        hops = [nginx_hop(kind, self.mocks.addr[kind], port) for kind, port in self.ports.items()]
        conf = os.path.join(d, "nginx.conf")
        with open(conf, "w") as f:
            f.write(nginx_conf(d, hops))
        self.addr = f"127.0.0.1:{self.ports['instant']}"
        return ["nginx", "-p", d + "/", "-c", conf, "-e", f"{d}/error.log"], None, None

    def url_for(self, route):
        mock, path, _, _ = ROUTES[route]
        return f"http://127.0.0.1:{self.ports[mock]}{path}"

    def supports(self, route):
        return route != "translated_stream"

    def version(self):
        out = subprocess.run(["nginx", "-v"], capture_output=True, text=True).stderr
        return out.strip().split("/")[-1]

    def size(self):
        return {"kind": "binary", "bytes": os.path.getsize(shutil.which("nginx"))}


class Hyper(Target):
    """The hyper floor: a reverse proxy doing only the two HTTP/1 exchanges with hyper, as
    Trimgate serves (a single-threaded runtime per core). What hyper alone costs a hop."""
    name = "hyper"

    def argv_env(self):
        port = free_port()
        self.addr = f"127.0.0.1:{port}"
        return [HYPERHOP, self.addr, self.mocks.addr["instant"]], None, None

    def supports(self, route):
        return route in ("chat", "responses", "messages")


class Trimgate(Target):
    name = "trimgate"

    def config(self):
        a = self.mocks.addr
        path = os.path.join(self.tmp, "trimgate.toml")
        with open(path, "w") as f:
            f.write(f"""# Passthrough: one provider per mock and dialect, routed by model name.
[providers.mock]
kind = "openai"
base_url = "http://{a['instant']}/v1"
api_key = {{ env = "MOCK_OPENAI_KEY" }}

[providers.mock_anthropic]
kind = "anthropic"
base_url = "http://{a['instant']}/v1"
api_key = {{ env = "MOCK_OPENAI_KEY" }}

[providers.slow]
kind = "openai"
base_url = "http://{a['slow']}/v1"
api_key = {{ env = "MOCK_OPENAI_KEY" }}

[providers.frames]
kind = "openai"
base_url = "http://{a['frames']}/v1"
api_key = {{ env = "MOCK_OPENAI_KEY" }}

[[routes]]
match = "gpt-5-mini"
provider = "mock"

[[routes]]
match = "claude-bench"
provider = "mock_anthropic"

[[routes]]
match = "slow-gpt"
provider = "slow"

[[routes]]
match = "stream-gpt"
provider = "frames"
""")
            extra = os.environ.get("CAMPAIGN_TRIMGATE_TOML")
            if extra:
                with open(extra) as more:
                    f.write("\n" + more.read())
        return path

    def argv_env(self):
        port = free_port()
        self.addr = f"127.0.0.1:{port}"
        data = os.path.join(self.tmp, "trimgate-data")
        os.makedirs(data, exist_ok=True)
        env = {"MOCK_OPENAI_KEY": KEY, "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": data}
        return [BIN, "serve", "--config", self.config(), "--listen", self.addr], env, None

    def cold_starts(self, n):
        """n more starts, each a fresh process on the ledger the first start made (a
        restart, as a user's is): ms to the first 200."""
        times = []
        data = os.path.join(self.tmp, "trimgate-data")
        for i in range(int(n)):
            port = free_port()
            saved = (self.proc, self.addr)
            self.addr = f"127.0.0.1:{port}"
            t0 = time.perf_counter()
            self.proc = Proc(f"trimgate-cold-{i}", [BIN, "serve", "--config", self.config(), "--listen", self.addr],
                             self.tmp, env={"MOCK_OPENAI_KEY": KEY, "TRIMGATE_LOG": "warn", "XDG_DATA_HOME": data})
            try:
                times.append(round(self.first_200(t0, timeout=20), 2))
            finally:
                self.proc.stop()
                self.proc, self.addr = saved
        return times

    def version(self):
        commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return commit + ("+changes" if dirty else "")

    def size(self):
        return {"kind": "binary", "bytes": os.path.getsize(BIN)}


class Portkey(Target):
    name = "portkey"
    root = os.path.join(PEERS, "portkey")

    def argv_env(self):
        port = free_port()
        self.addr = f"127.0.0.1:{port}"
        start = os.path.join(self.root, "node_modules", "@portkey-ai", "gateway", "build", "start-server.js")
        return ["node", start, f"--port={port}", "--headless"], {"NODE_ENV": "production"}, self.root

    def supports(self, route):
        # Its /v1/messages serves Anthropic-kind providers only: with provider openai it
        # answers {"status":"failure","message":"messages is not supported by openai"}.
        return route != "translated_stream"

    def headers_for(self, route):
        mock, _, _, provider = ROUTES[route]
        return {**BASE_HEADERS, "x-portkey-provider": provider,
                "x-portkey-custom-host": f"http://{self.mocks.addr[mock]}/v1"}

    def version(self):
        with open(os.path.join(self.root, "node_modules", "@portkey-ai", "gateway", "package.json")) as f:
            v = json.load(f)["version"]
        with open(os.path.join(self.root, "node_modules", "@hono", "node-server", "package.json")) as f:
            h = json.load(f)["version"]
        node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
        return f"{v} (node {node}, @hono/node-server {h})"

    def size(self):
        return {"kind": "node_modules", "bytes": du(os.path.join(self.root, "node_modules"))}


class LiteLLM(Target):
    name = "litellm"
    root = os.path.join(PEERS, "litellm")
    workers = 2

    def config(self):
        a = self.mocks.addr
        models = [("gpt-5-mini", "openai/gpt-5-mini", f"http://{a['instant']}/v1"),
                  ("claude-bench", "anthropic/claude-bench", f"http://{a['instant']}"),
                  ("slow-gpt", "openai/slow-gpt", f"http://{a['slow']}/v1"),
                  ("stream-gpt", "openai/stream-gpt", f"http://{a['frames']}/v1")]
        path = os.path.join(self.tmp, "litellm.yaml")
        with open(path, "w") as f:
            f.write("model_list:\n")
            for name, model, base in models:
                f.write(f"  - model_name: {name}\n    litellm_params:\n      model: {model}\n"
                        f"      api_base: {base}\n      api_key: {KEY}\n")
            f.write("litellm_settings:\n  num_retries: 0\n  request_timeout: 60\n  telemetry: false\n"
                    f"general_settings:\n  master_key: {KEY}\n")
        return path

    def argv_env(self):
        port = free_port()
        self.addr = f"127.0.0.1:{port}"
        env = {"LITELLM_LOG": "ERROR", "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
               "DISABLE_SCHEMA_UPDATE": "True", "NO_DOCS": "True"}
        return [os.path.join(self.root, "bin", "litellm"), "--config", self.config(), "--host", "127.0.0.1",
                "--port", str(port), "--num_workers", str(self.workers)], env, self.tmp

    def version(self):
        out = subprocess.run([os.path.join(self.root, "bin", "python"), "-c",
                              "import importlib.metadata as m, sys; print(m.version('litellm'), sys.version.split()[0])"],
                             capture_output=True, text=True).stdout.split()
        return f"{out[0]} (Python {out[1]}, {self.workers} workers)" if len(out) == 2 else "?"

    def size(self):
        return {"kind": "venv", "bytes": du(self.root)}


def du(path):
    total = 0
    for d, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(d, f)).st_size
            except OSError:
                pass
    return total


CLASSES = {"direct": Direct, "nginx": Nginx, "hyper": Hyper, "trimgate": Trimgate, "portkey": Portkey, "litellm": LiteLLM}


# --- measuring -----------------------------------------------------------------------------

def pid_ticks(pids):
    return {p: cpu_ticks([p]) for p in pids}


class Window:
    """CPU of the named process sets, the load generator and the whole host across one cell.
    Each set is a function giving its pids, read at both edges: a process that started
    within the window counts from zero, one that ended is lost (never negative)."""

    def __init__(self, groups):
        self.groups = groups  # {name: callable -> [pids]}

    def __enter__(self):
        self.t0 = time.perf_counter()
        self.idle0 = idle_ticks()
        self.child0 = children_cpu_s()
        self.ticks0 = {k: pid_ticks(f()) for k, f in self.groups.items()}
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        idle = idle_ticks() - self.idle0
        self.loadgen_s = children_cpu_s() - self.child0
        self.cpu_s = {}
        for k, f in self.groups.items():
            before = self.ticks0[k]
            after = pid_ticks(f())
            self.cpu_s[k] = sum(max(0, t - before.get(p, 0)) for p, t in after.items()) / HZ
        busy_s = NPROC * self.wall - idle / HZ
        self.other_cores = (busy_s - sum(self.cpu_s.values()) - self.loadgen_s) / self.wall
        return False

    def facts(self, completions):
        out = {"wall_s": round(self.wall, 3), "loadgen_cpu_s": round(self.loadgen_s, 3),
               "cpu_s": {k: round(v, 3) for k, v in self.cpu_s.items()},
               "other_cores": round(self.other_cores, 3)}
        if completions:
            out["cpu_us_per_completion"] = {k: round(v * 1e6 / completions, 1) for k, v in self.cpu_s.items()}
        return out


def wrk(url, headers, body, conc, duration, threads=None):
    threads = threads or (1 if conc == 1 else 2)
    env = {**os.environ, "BENCH_BODY_FILE": body,
           "BENCH_HEADERS": "\n".join(f"{k}: {v}" for k, v in headers.items() if k != "Authorization")}
    out = subprocess.run(["wrk", f"-t{threads}", f"-c{conc}", f"-d{duration}s", "--timeout", "10s",
                          "-s", os.path.join(HERE, "post.lua"), url], capture_output=True, text=True, env=env).stdout
    m = re.search(r"BENCH_JSON (\{.*\})", out)
    if not m:
        raise SystemExit(f"wrk gave no result for {url}:\n{out}")
    d = json.loads(m.group(1))
    lat = d["latency_us"]
    return {"requests": d["requests"], "rps": d["requests"] / (d["duration_us"] / 1e6),
            "errors": sum(d["errors"].values()), "error_kinds": d["errors"],
            "ms": {k: lat[k] / 1e3 for k in ("mean", "p50", "p90", "p95", "p99", "p999", "max")}}


def closed(req, conc, duration, warmup):
    """The driver's closed loop, warm-up then measurement on the same connections, in
    wrk()'s shape."""
    r = driver(["closed", *driver_args(req), "--conc", str(conc), "--duration", str(duration),
                "--warmup", str(warmup), "--timeout", "10"])
    lat = r["latency_us"] or {}
    return {"requests": r["counts"]["ok"], "rps": r["rps"], "errors": sum(r["counts"].values()) - r["counts"]["ok"],
            "error_kinds": r["counts"], "first_error": r["first_error"],
            "ms": {k: lat.get(k, 0) / 1e3 for k in ("mean", "p50", "p90", "p95", "p99", "p999", "max")}}


def driver(args):
    out = subprocess.run([DRIVER, *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"driver failed: {out.stderr}")
    return json.loads(out.stdout)


def driver_args(req):
    url, headers, body = req
    args = ["--url", url, "--body", body]
    for k, v in headers.items():
        args += ["--header", f"{k}: {v}"]
    return args


def williams(n, rows):
    """A Williams design: sequences of n treatments balanced for first-order carry-over."""
    first = [0]
    lo, hi = 1, n - 1
    for i in range(1, n):
        if i % 2:
            first.append(lo)
            lo += 1
        else:
            first.append(hi)
            hi -= 1
    square = [[(x + r) % n for x in first] for r in range(n)]
    if n % 2:
        square += [list(reversed(s)) for s in square]
    return [square[i % len(square)] for i in range(rows)]


T95 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131]


def mean_ci(xs):
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return {"mean": round(m, 4), "ci95": None, "blocks": [round(x, 4) for x in xs]}
    t = T95[min(len(xs) - 2, len(T95) - 1)]
    half = t * statistics.stdev(xs) / math.sqrt(len(xs))
    return {"mean": round(m, 4), "ci95": [round(m - half, 4), round(m + half, 4)], "blocks": [round(x, 4) for x in xs]}


# --- scenarios -----------------------------------------------------------------------------

def settle(t, limit_s=15.0):
    """Waits until the target has worked off what an earlier cell left queued (an
    overloaded peer goes on answering requests whose clients have gone): under a tenth of
    a core over 200 ms, or `limit_s`."""
    deadline = time.perf_counter() + limit_s
    while time.perf_counter() < deadline:
        pids = t.pids()
        if not pids:
            return
        before = cpu_ticks(pids)
        time.sleep(0.2)
        if (cpu_ticks(pids) - before) / HZ < 0.02:
            return


def run_blocks(what, order, gws, cell):
    """Each block: a direct cell, the gateways in the block's order, a direct cell.
    `cell(block, position, target)` measures one."""
    for b, seq in enumerate(order):
        log(f"{what} block {b + 1}/{len(order)}: {' '.join(gws[i] for i in seq)}")
        cell(b, 0, "direct")
        for pos, i in enumerate(seq, 1):
            cell(b, pos, gws[i])
        cell(b, len(seq) + 1, "direct")


def scenario_latency(targets, mocks):
    """Williams blocks of the gateways at c=1, each block between two direct cells."""
    direct = targets["direct"]
    gws = [t for t in GATEWAYS]
    order = williams(len(gws), int(PLAN["blocks"]))
    groups = {"mocks": mocks.pids, **{t: targets[t].pids for t in gws}}
    cells = []

    def cell(block, pos, tname):
        req = targets[tname].request("chat")
        with Window(groups) as w:
            r = closed(req, 1, PLAN["lat_cell"], PLAN["lat_warm"])
        c = {"block": block, "pos": pos, "target": tname, **r, **w.facts(r["requests"])}
        cells.append(c)
        return c

    run_blocks("latency", order, gws, cell)

    per_target = {}
    for t in gws:
        added = {q: [] for q in ("p50", "p95", "p99", "p999")}
        client = {q: [] for q in added}
        for b in range(len(order)):
            d = [c for c in cells if c["block"] == b and c["target"] == "direct"]
            g = next(c for c in cells if c["block"] == b and c["target"] == t)
            for q in added:
                ref = statistics.fmean(x["ms"][q] for x in d)
                added[q].append(g["ms"][q] - ref)
                client[q].append(g["ms"][q])
        mine = [c for c in cells if c["target"] == t]
        per_target[t] = {
            "added_ms": {q: mean_ci(v) for q, v in added.items()},
            "client_ms": {q: round(statistics.fmean(v), 4) for q, v in client.items()},
            "requests_per_cell": round(statistics.fmean(c["requests"] for c in mine)),
            "errors": sum(c["errors"] for c in mine),
            "cpu_us_per_completion": round(statistics.fmean(c["cpu_us_per_completion"][t] for c in mine), 1),
        }
    d = [c for c in cells if c["target"] == "direct"]
    before = [c for c in d if c["pos"] == 0]
    after = [c for c in d if c["pos"] != 0]
    per_target["direct"] = {
        "client_ms": {q: round(statistics.fmean(c["ms"][q] for c in d), 4) for q in ("p50", "p95", "p99", "p999")},
        "before_p99_ms": round(statistics.fmean(c["ms"]["p99"] for c in before), 4),
        "after_p99_ms": round(statistics.fmean(c["ms"]["p99"] for c in after), 4),
        "p50_ms_range": [min(c["ms"]["p50"] for c in d), max(c["ms"]["p50"] for c in d)],
        "requests_per_cell": round(statistics.fmean(c["requests"] for c in d)),
        "rps": round(statistics.fmean(c["rps"] for c in d), 1),
    }
    idle = {t: round(sum(c["cpu_s"].get(t, 0) for c in cells if c["target"] != t) /
                     max(1e-9, sum(c["wall_s"] for c in cells if c["target"] != t)), 4) for t in gws}
    return {"order": [[gws[i] for i in seq] for seq in order], "cells": cells, "per_target": per_target,
            "idle_target_cores": idle,
            "other_cores_mean": round(statistics.fmean(c["other_cores"] for c in cells), 3)}


def capacity_gateways():
    """The gateways measured in the capacity blocks: nginx and Trimgate, whose rates are within
    a factor of two of each other. Portkey's and LiteLLM's are 50-300 times lower, and an
    overloaded peer's backlog would spill into the next cell; the sweep measures them."""
    return [t for t in GATEWAYS if t in ("nginx", "trimgate")]


def scenario_capacity(targets, mocks):
    """Closed loop at c=50 in interleaved blocks: direct, the gateways in a Williams order,
    direct again; each gateway's rate as a share of nginx's and of direct's in the same block.
    The sweep measures each target alone, minutes apart, and this box's rate at c=50 drifts
    by a fifth over minutes; within a block the cells are seconds apart."""
    gws = capacity_gateways()
    conc = int(PLAN["cap_conc"])
    order = williams(len(gws), int(PLAN["cap_blocks"]))
    groups = {"mocks": mocks.pids, **{t: targets[t].pids for t in gws}}
    cells = []

    def cell(block, pos, tname):
        req = targets[tname].request("chat")
        wrk(req[0], req[1], req[2], conc, PLAN["cap_w"])
        settle(targets[tname])
        with Window(groups) as w:
            r = wrk(req[0], req[1], req[2], conc, PLAN["cap_d"])
        cells.append({"block": block, "pos": pos, "target": tname, **r, **w.facts(r["requests"])})

    run_blocks("capacity", order, gws, cell)

    def rate(b, t):
        return statistics.fmean(c["rps"] for c in cells if c["block"] == b and c["target"] == t)

    per_target = {}
    for t in gws:
        mine = [c for c in cells if c["target"] == t]
        per_target[t] = {
            "rps": round(statistics.fmean(c["rps"] for c in mine), 1),
            "vs_direct": mean_ci([rate(b, t) / rate(b, "direct") for b in range(len(order))]),
            "p99_ms": round(statistics.fmean(c["ms"]["p99"] for c in mine), 3),
            "errors": sum(c["errors"] for c in mine),
            "cpu_us_per_completion": round(statistics.fmean(c["cpu_us_per_completion"][t] for c in mine), 1),
        }
        if t != "nginx" and "nginx" in gws:
            per_target[t]["vs_nginx"] = mean_ci([rate(b, t) / rate(b, "nginx") for b in range(len(order))])
    d = [c for c in cells if c["target"] == "direct"]
    per_target["direct"] = {"rps": round(statistics.fmean(c["rps"] for c in d), 1),
                            "rps_range": [round(min(c["rps"] for c in d)), round(max(c["rps"] for c in d))]}
    return {"conc": conc, "order": [[gws[i] for i in seq] for seq in order], "cells": cells,
            "per_target": per_target,
            "other_cores_mean": round(statistics.fmean(c["other_cores"] for c in cells), 3)}


def scenario_sweep(t, mocks):
    req = t.request("chat")
    rows = {}
    for conc in PLAN["sweep_conc"]:
        conc = int(conc)
        wrk(req[0], req[1], req[2], conc, PLAN["sweep_w"])
        settle(t)
        with Window({"target": t.pids, "mocks": mocks.pids}) as w:
            r = wrk(req[0], req[1], req[2], conc, PLAN["sweep_d"])
        rows[str(conc)] = {**r, **w.facts(r["requests"])}
        log(f"  {t.name} c={conc}: {r['rps']:.0f} rps, p99 {r['ms']['p99']:.3f} ms, errors {r['errors']}")
    return rows


def warm(req):
    """One request on a route before it is measured, waited for (a peer's first request on
    a route can take seconds: clients built, tables loaded)."""
    url, headers, body = req
    addr, path = url[len("http://"):].split("/", 1)
    with open(body, "rb") as f:
        data = f.read()
    try:
        post(addr, "/" + path, data, headers, timeout=30)
    except OSError:
        pass


def scenario_endpoints(t):
    out = {}
    for ep in ("chat", "responses", "messages"):
        for stream in (False, True):
            route = ep + ("_stream" if stream else "")
            req = t.request(route)
            if req is None:
                out[route] = {"unsupported": True}
                continue
            warm(req)
            settle(t)
            args = driver_args(req) + ["--conc", str(PLAN["ep_conc"]), "--duration", str(PLAN["ep_d"]),
                                       "--warmup", str(PLAN["ep_w"]), "--timeout", "10"]
            out[route] = driver(["closed", *args] + (["--stream"] if stream else []))
            r = out[route]
            log(f"  {t.name} {route}: {r['rps']:.0f} rps, ok {r['counts']['ok']}, "
                f"failed {sum(v for k, v in r['counts'].items() if k != 'ok')} {r['first_error'] or ''}")
    return out


def scenario_stream(t):
    out = {}
    for kind in ("native_stream", "translated_stream"):
        req = t.request(kind)
        if req is None:
            out[kind] = {"unsupported": True}
            continue
        warm(req)
        settle(t)
        args = driver_args(req) + ["--conc", str(PLAN["stream_conc"]), "--duration", str(PLAN["stream_d"]),
                                   "--warmup", str(PLAN["stream_w"]), "--timeout", "10", "--stream"]
        out[kind] = driver(["closed", *args])
        r = out[kind]
        ft = (r.get("first_token_us") or {}).get("p50")
        log(f"  {t.name} {kind}: {r['rps']:.0f} streams/s, ttft p50 {ft} us, ok {r['counts']['ok']} "
            f"{r['first_error'] or ''}")
    return out


def scenario_open(t, mocks, capacity=None):
    """The ladder starts at its highest rate under 5 % of the target's closed-loop
    capacity at c=50 (when measured), but never above the target rate (2,000/s), so every
    target that reaches it has that rung beside direct's: rungs far below what a target
    holds tell nothing."""
    req = t.request("slow_chat")
    rates = [int(r) for r in PLAN["open_rates"]]
    if capacity:
        below = [r for r in rates if r <= min(capacity * 0.05, compare.OPEN_TARGET_RATE)]
        rates = rates[rates.index(below[-1]):] if below else rates
    args = driver_args(req) + ["--rates", ",".join(str(r) for r in rates),
                               "--duration", str(PLAN["open_d"]), "--warmup", str(PLAN["open_w"]),
                               "--timeout", str(PLAN["open_timeout"]), "--stop-on-fail"]
    settle(t)
    with Window({"target": t.pids, "mocks": mocks.pids}) as w:
        r = driver(["open", *args])
    limit_us = (PLAN["open_delay_ms"] + PLAN["open_slack_ms"]) * 1000
    held = None
    for s in r["steps"]:
        s["held"] = bool(s["all_ok"] and s["latency_us"] and s["latency_us"]["p99"] <= limit_us)
        if s["held"]:
            held = s["rate"]
        log(f"  {t.name} open {s['rate']:.0f}/s: ok {s['counts']['ok']}/{s['sent']}, "
            f"p99 {(s['latency_us'] or {}).get('p99', 0) / 1e3:.1f} ms, held {s['held']} {s['first_error'] or ''}")
        if not s["held"]:
            break
    return {"steps": r["steps"], "held_rate": held, "peak_rss_kib": status_kib(t.pids(), "VmHWM"), **w.facts(0)}


# --- the run -------------------------------------------------------------------------------

def machine():
    def run(*argv):
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            return ""
    lscpu = run("lscpu")
    pick = lambda k: next((l.split(":", 1)[1].strip() for l in lscpu.splitlines() if l.startswith(k + ":")), "")
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    return {"cpu_model": pick("Model name"), "cpus": pick("CPU(s)"), "threads_per_core": pick("Thread(s) per core"),
            "hypervisor": pick("Hypervisor vendor"), "kernel": os.uname().release,
            "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "os": run("sh", "-c", ". /etc/os-release && echo $PRETTY_NAME"),
            "loadavg_at_start": load, "wrk": run("sh", "-c", "wrk -v 2>&1 | head -1"),
            "python": sys.version.split()[0], "rustc": run("rustc", "--version")}


def main():
    ts = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    tmp = tempfile.mkdtemp(prefix="trimgate-campaign-")
    t_start = time.perf_counter()
    run = {"meta": {"timestamp": ts, "command": os.environ.get("CAMPAIGN_COMMAND", "bench/campaign.sh"),
                    "quick": QUICK, "plan": PLAN, "targets": TARGETS, "scenarios": SCENARIOS,
                    "machine": machine()}}
    log(f"targets {', '.join(TARGETS)}; scenarios {', '.join(SCENARIOS)}{' (QUICK: smoke test only)' if QUICK else ''}")
    mocks = Mocks(tmp)
    body_files = bodies(tmp)
    targets = {name: CLASSES[name](tmp, mocks, body_files) for name in TARGETS}
    run["meta"]["versions"] = {}
    try:
        if "latency" in SCENARIOS or "capacity" in SCENARIOS:
            for t in targets.values():
                t.start()
            log("all targets up: " + ", ".join(f"{n} {t.addr}" for n, t in targets.items()))
            if "latency" in SCENARIOS:
                run["latency"] = scenario_latency(targets, mocks)
            if "capacity" in SCENARIOS and "direct" in targets and len(capacity_gateways()) > 0:
                run["capacity"] = scenario_capacity(targets, mocks)
            for t in targets.values():
                t.stop()

        run["targets"] = {}
        for name, t in targets.items():
            log(f"{name}: start")
            t.start()
            r = {"cold_start_ms": t.cold_start_ms}
            run["meta"]["versions"][name] = t.version()
            time.sleep(1.0)
            r["idle_rss_kib"] = status_kib(t.pids(), "VmRSS")
            # The split: the process's own memory, and the pages of its binary and libraries
            # the kernel mapped (how many depends on the page cache, not only on the code run).
            r["idle_rss_anon_kib"] = status_kib(t.pids(), "RssAnon")
            r["idle_rss_file_kib"] = status_kib(t.pids(), "RssFile")
            r["processes"] = len(t.pids())
            if "sweep" in SCENARIOS:
                r["sweep"] = scenario_sweep(t, mocks)
            if "endpoints" in SCENARIOS:
                r["endpoints"] = scenario_endpoints(t)
            if "stream" in SCENARIOS:
                r["stream"] = scenario_stream(t)
            r["peak_rss_kib_closed_loop"] = status_kib(t.pids(), "VmHWM")
            r["rss_after_closed_loop_kib"] = status_kib(t.pids(), "VmRSS")
            if "open" in SCENARIOS:
                r["open"] = scenario_open(t, mocks, (r.get("sweep") or {}).get("50", {}).get("rps"))
            if "footprint" in SCENARIOS:
                r["size"] = t.size()
                if name == "trimgate":
                    t.stop()
                    log("trimgate: cold starts")
                    r["cold_starts_ms"] = t.cold_starts(PLAN["cold_starts"])
            t.stop()
            run["targets"][name] = r

        if "sweep" in SCENARIOS and "direct" in targets:
            log("direct control after")
            d = targets["direct"]
            d.start()
            req = d.request("chat")
            run["control_after"] = {
                "1": wrk(req[0], req[1], req[2], 1, PLAN["control_d"]),
                "50": wrk(req[0], req[1], req[2], 50, PLAN["control_d"]),
            }

        if "optimizer" in SCENARIOS and "trimgate" in targets:
            log("optimizer matrix (bench/optimize_matrix.py)")
            run["optimizer"] = optimizer_matrix(tmp)
    finally:
        for t in targets.values():
            t.stop()
        mocks.stop()
        if os.environ.get("CAMPAIGN_KEEP_TMP") == "1":
            log(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)

    run["meta"]["elapsed_s"] = round(time.perf_counter() - t_start, 1)
    with open("/proc/loadavg") as f:
        run["meta"]["machine"]["loadavg_at_end"] = f.read().split()[:3]
    run["summary"] = compare.summarize(run)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    out = os.path.join(HERE, "results", f"campaign-{ts}.json")
    with open(out, "w") as f:
        json.dump(run, f, indent=1)
        f.write("\n")
    md = compare.report(run, out)
    with open(out[:-5] + ".md", "w") as f:
        f.write(md)
    print(md)
    log(f"done in {run['meta']['elapsed_s']:.0f} s: {out}")


def optimizer_matrix(tmp):
    requests_dir = os.path.join(HERE, "corpus", "requests")
    if not os.path.isdir(requests_dir) or not os.listdir(requests_dir):
        subprocess.run([sys.executable, os.path.join(HERE, "corpus", "build.py")], check=True,
                       stdout=subprocess.DEVNULL)
    out = os.path.join(tmp, "matrix.json")
    t0 = time.perf_counter()
    md = subprocess.run([sys.executable, os.path.join(HERE, "optimize_matrix.py"), BIN, requests_dir,
                         str(int(PLAN["matrix_n"])), out], capture_output=True, text=True, check=True).stdout
    with open(out) as f:
        data = json.load(f)
    return {"n": int(PLAN["matrix_n"]), "elapsed_s": round(time.perf_counter() - t0, 1), "markdown": md, "data": data}


if __name__ == "__main__":
    main()
