"""Captures what the pinned agents really send, as conformance fixtures.

    python3 tests/agents/capture.py [--bin target/debug/trimgate] [--agent gemini …]

Runs Claude Code, Codex CLI and Gemini CLI (the versions in node_modules, see
package.json) straight against the mock provider — a plain turn and a shell-tool round trip
each; Gemini CLI also with an image in the prompt (it counts its tokens first) and with its
default model, `auto` (a non-streamed classifier call picks the model) — and writes every
request they made to `fixtures/<agent>-<version>/<turn>-<n>.json`: the path, the
headers (credentials left out) and the body as sent. When an agent ships a new version:
bump package.json, `npm install`, run this, and `cargo test --test agent_fixtures` tells
what the gateway makes of the new fields.
"""

import argparse
import json
import os
import shutil
import subprocess
import urllib.request
from functools import partial

import agents

ROOT = os.path.abspath(os.path.join(agents.HERE, "..", ".."))
SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key", "host", "content-length"}


def turns(agent, url):
    """The turns captured of `agent`: (name, a call that runs it against `url`)."""
    plain = agents.plain_headers("captured")
    tool = agents.shell_call_headers(agent, "captured-marker")
    run = {"claude": partial(agents.run_claude, url, "claude-sonnet-4-6", "Say hello."),
           "codex": partial(agents.run_codex, url, "gpt-5.5", "Say hello."),
           "gemini": partial(agents.run_gemini, url, "gemini-2.5-pro", "Say hello.")}[agent]
    captured = [("plain", partial(run, plain)), ("tool", partial(run, tool))]
    if agent == "gemini":
        work = agents.work_dir_with_pixel()
        captured += [
            ("image", partial(agents.run_gemini, url, "gemini-2.5-pro", "Describe @pixel.png", plain, work=work)),
            ("auto", partial(agents.run_gemini, url, "auto", "Say hello.", plain)),
        ]
    return captured


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bin", default=os.environ.get("TRIMGATE_BIN", os.path.join(ROOT, "target", "debug", "trimgate")))
    parser.add_argument("--agent", action="append", choices=sorted(agents.PACKAGES),
                        help="capture only this agent (repeatable; all of them by default)")
    args = parser.parse_args()
    proc = subprocess.Popen([args.bin, "mock", "--listen", "127.0.0.1:0", "--any-key"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = None
    for line in proc.stdout:
        if line.startswith("mock provider listening on "):
            url = line.split(" on ", 1)[1].strip()
            break
    if not url:
        raise SystemExit("the mock did not start")
    try:
        for agent in args.agent or agents.PACKAGES:
            version = agents.installed_version(agents.PACKAGES[agent])
            out = os.path.join(agents.HERE, "fixtures", f"{agent}-{version}")
            shutil.rmtree(out, ignore_errors=True)
            os.makedirs(out)
            for turn, run in turns(agent, url):
                urllib.request.urlopen(urllib.request.Request(f"{url}/_mock/requests", method="DELETE")).read()
                code, _, log = run()
                if code != 0:
                    raise SystemExit(f"{agent} {turn} failed:\n{log}")
                sent = json.loads(urllib.request.urlopen(f"{url}/_mock/requests").read())
                for n, r in enumerate(sent):
                    if r["method"] != "POST":
                        continue
                    fixture = {
                        "path": r["path_and_query"],
                        "headers": {k: v for k, v in sorted(r["headers"].items()) if k not in SECRET_HEADERS},
                        "body": json.loads(r["body"]),
                    }
                    with open(os.path.join(out, f"{turn}-{n}.json"), "w") as f:
                        json.dump(fixture, f, indent=1, ensure_ascii=False)
                        f.write("\n")
                print(f"{agent} {version} {turn}: {len(sent)} requests → {out}")
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    main()
