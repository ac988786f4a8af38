"""Builds and runs checker/ (a Go program around porcupine v1.3.1, the
linearizability checker) on register histories.

The checker is built on first use into a cache directory (--cache-dir, else
$SHALE_JEPSEN_CACHE, else ~/.cache/shale-jepsen), named by a hash of its
sources, with GOPATH and GOCACHE there too and GOFLAGS=-mod=mod; porcupine
comes from the Go module proxy (go.sum pins it). Debian's Go (/usr/bin/go,
1.19, what scripts/install-deps.sh installs) is preferred, then
/usr/local/go, then PATH. Parallel runs share one build (a file lock).
"""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "checker")
SOURCES = ("main.go", "go.mod", "go.sum")
FETCH_ERRORS = ("dial tcp", "i/o timeout", "TLS handshake timeout", "connection reset", "unexpected EOF",
                "proxy.golang.org")


class CheckerUnavailable(Exception):
    """The checker could not be built (no Go, or the module proxy is out of
    reach): not a verdict on the history."""


def default_cache_dir():
    return os.environ.get("SHALE_JEPSEN_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "shale-jepsen")


def find_go():
    for go in ("/usr/bin/go", "/usr/local/go/bin/go"):
        if os.access(go, os.X_OK):
            return go
    return shutil.which("go")


def build(cache_dir=None, log=print):
    """Path to the built checker (building it if needed)."""
    cache_dir = os.path.abspath(cache_dir or default_cache_dir())
    os.makedirs(cache_dir, exist_ok=True)
    h = hashlib.sha256()
    for name in SOURCES:
        with open(os.path.join(SOURCE, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read() + b"\0")
    binary = os.path.join(cache_dir, "register-checker-" + h.hexdigest()[:16])
    if os.access(binary, os.X_OK):
        return binary
    with open(os.path.join(cache_dir, "build.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(binary, os.X_OK):
            return binary
        go = find_go()
        if go is None:
            raise CheckerUnavailable("no Go toolchain (scripts/install-deps.sh installs golang-go)")
        env = dict(os.environ, GOPATH=os.path.join(cache_dir, "gopath"), GOCACHE=os.path.join(cache_dir, "gocache"),
                   GOFLAGS="-mod=mod", GOTOOLCHAIN="local", CGO_ENABLED="0")
        tmp = binary + ".tmp%d" % os.getpid()
        log("checker: building %s with %s" % (os.path.basename(binary), go))
        # The first build fetches porcupine from the module proxy: a network
        # hiccup there is tried again (twice, 5 s apart); a compile error is not.
        for attempt in range(3):
            r = subprocess.run([go, "build", "-o", tmp, "."], cwd=SOURCE, env=env, capture_output=True, text=True,
                               timeout=900)
            fetch_failed = any(m in r.stderr for m in FETCH_ERRORS)
            if r.returncode == 0 or not fetch_failed or attempt == 2:
                break
            time.sleep(5)
        if r.returncode != 0:
            raise CheckerUnavailable("go build of %s failed:\n%s" % (SOURCE, r.stderr[-3000:]))
        os.replace(tmp, binary)
        return binary


def check(ops, out_dir, cache_dir=None, timeout_s=120, log=print):
    """Runs the checker on the register operations in `ops`; returns
    {"valid": True | False | "unknown", "keys": [...], "report": text}."""
    binary = build(cache_dir, log=log)
    os.makedirs(out_dir, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix="register-ops-", suffix=".jsonl", dir=out_dir)
    try:
        with os.fdopen(fd, "w") as f:
            for op in ops:
                if op.get("wrong_rows") is not None:
                    continue  # a point read answered with other rows: register.py reports it
                if op.get("process") == "nemesis" or op.get("f") in ("read", "write", "cas"):
                    f.write(json.dumps(op) + "\n")
        r = subprocess.run([binary, "-history", path, "-out", out_dir, "-timeout", "%ds" % timeout_s],
                           capture_output=True, text=True)
    finally:
        os.unlink(path)
    if r.returncode not in (0, 1, 3):
        raise RuntimeError("register checker failed (%d):\n%s" % (r.returncode, r.stderr[-3000:]))
    summary = json.loads(r.stdout)
    valid = {"true": True, "false": False}.get(summary["valid"], "unknown")
    return {"valid": valid, "keys": summary.get("keys") or [], "report": r.stderr}
