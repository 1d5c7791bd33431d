#!/usr/bin/env python3
"""Warm `aam_source_candidates` calls through one running `aam mcp serve --root
PROJECT` over stdio (issue #19), as benches/project.sh runs it:

    python3 benches/mcp_project.py AAM_BIN PROJECT RUNS

Prints, in benches/timing.sh's format: the first call (the server sets its
watches and checks the files), warm calls (nothing changed: answered from the
watches), calls right after one SKILL.md was replaced by rename, and calls
right after one new skill folder appeared. Restores the project's skills
afterwards (git checkout, new folders removed). AAM_HOME is inherited.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def report(label, times):
    times = sorted(times)
    median = times[(len(times) + 1) // 2 - 1]
    print(f"{label:<44} min {times[0]:6.0f} ms   median {median:6.0f} ms   ({len(times)} runs)")


class Server:
    def __init__(self, aam, project):
        self.proc = subprocess.Popen(
            [aam, "mcp", "serve", "--root", project, "--log-level", "warn"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 1
        self.request("initialize", {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0"},
        })
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method, params):
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the server closed its output")
            message = json.loads(line)
            if message.get("id") == rid:
                return message

    def candidates_ms(self):
        start = time.perf_counter()
        answer = self.request("tools/call", {
            "name": "aam_source_candidates",
            "arguments": {"limit": 50},
        })
        elapsed = (time.perf_counter() - start) * 1000
        result = answer.get("result", {})
        if "error" in answer or result.get("isError"):
            raise SystemExit(f"candidates failed: {answer}")
        return elapsed, result["structuredContent"]["total"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def main():
    aam, project, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    skills = os.path.join(project, "skills")
    server = Server(aam, project)
    try:
        first, total = server.candidates_ms()
        report("mcp candidates, first call", [first])
        report("mcp candidates --limit 50, warm", [server.candidates_ms()[0] for _ in range(runs)])

        names = sorted(os.listdir(skills))[:runs]
        edited = []
        for i, name in enumerate(names):
            path = os.path.join(skills, name, "SKILL.md")
            with open(path) as f:
                text = f.read()
            lines = [f"name: edited-{i}" if l.startswith("name: ") else l for l in text.split("\n")]
            with open(path + ".tmp", "w") as f:
                f.write("\n".join(lines))
            os.rename(path + ".tmp", path)
            edited.append(server.candidates_ms()[0])
        report("mcp candidates right after one file changed", edited)

        added = []
        for i in range(runs):
            folder = os.path.join(skills, f"bench-new-{i}")
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "SKILL.md"), "w") as f:
                f.write(f"---\nname: bench-new-{i}\ndescription: new\n---\n")
            elapsed, now = server.candidates_ms()
            if now != total + i + 1:
                raise SystemExit(f"the new skill is not listed: total {now}, expected {total + i + 1}")
            added.append(elapsed)
        report("mcp candidates right after one skill added", added)
        report("mcp candidates, warm again", [server.candidates_ms()[0] for _ in range(runs)])
    finally:
        server.close()
        subprocess.run(["git", "-C", project, "checkout", "-q", "--", "skills"], check=True)
        for i in range(runs):
            shutil.rmtree(os.path.join(skills, f"bench-new-{i}"), ignore_errors=True)


if __name__ == "__main__":
    main()
