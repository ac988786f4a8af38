"""Starts and stops a real shaled for end-to-end tests.

A ShaledProcess owns a temporary data directory and a free loopback port.
stop() sends SIGTERM; kill() sends SIGKILL (power loss); start() again
reuses the same data directory and port, so tests can check what survives.
"""
import argparse
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest


def ephemeral_low():
    """The first port of the kernel's ephemeral range (outgoing connections
    take their local port from it), or None if it cannot be read."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def port_bindable(port):
    """Nothing holds `port` on loopback right now (no SO_REUSEADDR, so a
    port in TIME_WAIT counts as taken too)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


_port_rng = random.SystemRandom()
FREE_PORT_FLOOR = 10000


def free_port():
    """A loopback port nobody holds now, for a server to listen on.

    It is chosen below the ephemeral range when there is room: a port that
    bind(0) hands out comes from that range, and so does the local port of
    every outgoing connection on the machine (gRPC channels, clients of
    other tests running in parallel), so such a port can be taken again
    between this call and the server's bind -- or while a killed node is
    down and must come back on the same port. Below the range only another
    free_port() caller can pick it, at random among ~20000 ports, and the
    server's bind fails loudly ("cannot listen on") if one does (start()
    retries on a new port)."""
    low = ephemeral_low()
    if low is not None and low - FREE_PORT_FLOOR >= 2000:
        for _ in range(200):
            port = _port_rng.randrange(FREE_PORT_FLOOR, low)
            if port_bindable(port):
                return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ShaledProcess:
    def __init__(self, binary, extra_args=()):
        self.binary = binary
        self.extra_args = list(extra_args)
        self.data_dir = tempfile.mkdtemp(prefix="shale-e2e-")
        self.port = free_port()
        self.proc = None
        self.log_path = os.path.join(self.data_dir, "shaled.log")
        self._scan_from = 0  # where _logged() reads on from

    # Start-up includes WAL recovery and, for a cluster node, reaching the
    # cluster: seconds on a 2-core machine running other tests, so the limit
    # is generous (a server that never comes up still fails, just later).
    START_TIMEOUT = 60.0

    def start(self, timeout=None):
        # free_port() cannot reserve the port: another test's server may take
        # it before shaled binds. shaled then exits with "cannot listen on";
        # try again on new ports (tests connect through self.port, so a
        # restart may move too).
        timeout = self.START_TIMEOUT if timeout is None else timeout
        for attempt in range(5):
            try:
                return self._start_once(timeout)
            except RuntimeError as e:
                if "cannot listen on" not in str(e) or attempt == 4:
                    raise
                self.move_ports(str(e))

    def move_ports(self, error):
        """Picks new ports after a failed bind (`error` is the start error)."""
        self.port = free_port()

    def _start_once(self, timeout):
        log_start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as log:  # the child keeps its own descriptor
            self.proc = subprocess.Popen(
                [self.binary, "--port", str(self.port), "--rpc-port", "0",
                 "--datadir", os.path.join(self.data_dir, "data")] + self.extra_args,
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + timeout
        self._scan_from = log_start
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("shaled exited with %s; log:\n%s" %
                                   (self.proc.returncode, self.log(since=log_start)))
            if self._listening():
                return
            time.sleep(0.05)
        raise RuntimeError("shaled did not listen within %.0fs; log:\n%s" % (timeout, self.log()))

    def _listening(self):
        # Ready once this shaled logs that it listens on our port: a bare
        # connect could reach whatever else holds the port. With a log level
        # that hides that INFO line, fall back to connecting.
        quiet = any(a.startswith("--log-level=") and a.split("=", 1)[1] not in ("info", "debug")
                    for a in self.extra_args)
        if not quiet:
            return self._logged(b"listening for MySQL clients on 127.0.0.1:%d\n" % self.port)
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def _logged(self, needle):
        """Whether `needle` appears in the log from self._scan_from on.

        Reads only what is new since the previous call (keeping a needle's
        length of overlap), so a line is found however much the node logs
        after it before the next poll -- a busy node (a cluster node
        rejoining, retrying statements) can write kilobytes in 50 ms, and
        looking only at the log's tail then missed the line."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(self._scan_from)
                data = f.read()
        except OSError:
            return False
        if needle in data:
            return True
        self._scan_from += max(0, len(data) - len(needle))
        return False

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise RuntimeError("shaled did not stop on SIGTERM")
        self.proc = None

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def log(self, since=0):
        """The last 4000 characters of the log, from byte offset `since`."""
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode(errors="replace")[-4000:]
        except OSError:
            return ""

    def cleanup(self, keep_log_as=None):
        """Kills the node and removes its directory. With `keep_log_as` and
        SHALE_TEST_LOG_DIR set, the whole log is first copied there under
        that name (the failure's tail printed by a test is often too short)."""
        self.kill()
        log_dir = os.environ.get("SHALE_TEST_LOG_DIR")
        if keep_log_as and log_dir:
            os.makedirs(log_dir, exist_ok=True)
            try:
                shutil.copy(self.log_path, os.path.join(log_dir, keep_log_as))
            except OSError:
                pass
        shutil.rmtree(self.data_dir, ignore_errors=True)


class NodeTestCase(unittest.TestCase):
    """A unittest class with its own shaled, started once for the class.

    The binary comes from `--shaled` (see main()); `extra_args` adds flags.
    """
    shaled = None  # the shaled binary, set by main()
    extra_args = ()

    @classmethod
    def setUpClass(cls):
        cls.node = ShaledProcess(NodeTestCase.shaled, cls.extra_args)
        cls.node.start()

    @classmethod
    def tearDownClass(cls):
        cls.node.cleanup()

    def connect(self, db=None, **kw):
        import pymysql
        return pymysql.connect(host="127.0.0.1", port=self.node.port, user="root",
                               password=kw.pop("password", ""), database=db,
                               autocommit=True, **kw)

    def fresh_db(self, name):
        """A connection and cursor on database `name`, dropped and created anew."""
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("DROP DATABASE IF EXISTS %s" % name)
        cur.execute("CREATE DATABASE %s" % name)
        conn.select_db(name)
        return conn, cur

    def assertSqlError(self, cur, sql, code):
        import pymysql
        with self.assertRaises(pymysql.MySQLError) as ctx:
            cur.execute(sql)
        self.assertEqual(ctx.exception.args[0], code, "%s -> %s" % (sql, ctx.exception))


def main():
    """Entry point of every tests/e2e/test_*.py: takes --shaled BINARY (as
    tests/CMakeLists.txt passes it) and runs the file's tests."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--shaled", required=True)
    args, rest = parser.parse_known_args()
    NodeTestCase.shaled = os.path.abspath(args.shaled)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)
