"""The systems under test: a shaled from the build directory and a private
MariaDB from Debian, each on a free loopback port with its own data directory.

Both are started durable and with the same memory: shaled with
--wal-sync=durable (a commit is acknowledged once its WAL record is synced,
group commit) and --buffer-pool-mb=--memory-mb; MariaDB with
innodb_flush_log_at_trx_commit=1, no binlog and
innodb_buffer_pool_size=--memory-mb.

A System is used as: start(); connect() any number of times; stop().
`ports` lists the MySQL ports a client may use (one per node); connect()
spreads connections over them round-robin, and sysbench gets the list.

ShaleCluster (system name "shale-N") is N shaled processes on loopback
forming one cluster the way `./shale up --nodes N` and
tests/cluster/cluster_fixture.py do: node 1 bootstraps, the others start
with --join <node 1's cluster port>; tables get the default 2 replicas, so
every write is applied synchronously on two nodes before it is
acknowledged.
"""
import itertools
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pymysql

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Ports come from the tests' helper: below the kernel's ephemeral range,
# checked free (a bind(0) port is in that range, where any outgoing
# connection on the machine -- gRPC channels, other tests' clients -- can
# take it before the server binds).
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))
from shaled_fixture import free_port  # noqa: E402

# What a server logs when another process took its port between
# free_port() and its bind: shaled (MySQL or cluster port), mariadbd.
BIND_FAILURES = ("cannot listen on", "Address already in use")
START_ATTEMPTS = 5


class System:
    """One server process. Subclasses fill in command() and version()."""
    name = "?"

    def __init__(self, workdir, memory_mb):
        self.dir = os.path.join(workdir, self.name)
        self.memory_mb = memory_mb
        self.port = free_port()
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.out")
        self._next = itertools.count()

    @property
    def ports(self):
        return [self.port]

    def command(self):
        raise NotImplementedError

    def start(self, timeout=120.0):
        """Starts the server and waits until it accepts connections. free_port()
        cannot reserve a port: if another process binds it first, the server
        exits with a bind failure and start() tries again on new ports."""
        for attempt in range(START_ATTEMPTS):
            try:
                return self._start_once(timeout)
            except RuntimeError as e:
                if attempt == START_ATTEMPTS - 1 or not any(b in str(e) for b in BIND_FAILURES):
                    raise
                self.stop()
                self.move_ports()

    def move_ports(self):
        self.port = free_port()

    def _start_once(self, timeout):
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s; log:\n%s" % (self.name, self.proc.returncode, self.log()))
            try:
                self.connect().close()
                return
            except pymysql.MySQLError as e:
                last = e
                time.sleep(0.1)
        raise RuntimeError("%s did not accept connections within %.0fs (%s); log:\n%s"
                           % (self.name, timeout, last, self.log()))

    def connect(self, db=None, autocommit=True):
        ports = self.ports
        port = ports[next(self._next) % len(ports)]
        return pymysql.connect(host="127.0.0.1", port=port, user="root", password="",
                               database=db, autocommit=autocommit, connect_timeout=10,
                               read_timeout=120, write_timeout=120)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def cleanup(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def log(self):
        for path in self.log_files():
            try:
                with open(path, "r", errors="replace") as f:
                    text = f.read()[-3000:]
                if text:
                    return text
            except OSError:
                pass
        return ""

    def log_files(self):
        return [self.log_path]

    def version(self):
        with self.connect() as c, c.cursor() as cur:
            cur.execute("SELECT VERSION()")
            return cur.fetchone()[0]


class Shale(System):
    name = "shale"

    def __init__(self, workdir, memory_mb, shaled, nodes=1):
        super().__init__(workdir, memory_mb)
        self.shaled = shaled
        if nodes != 1:
            raise RuntimeError("Shale is one node; use ShaleCluster (make_shale) for --nodes=%d" % nodes)

    def command(self):
        return shaled_command(self.shaled, self.port, "0", os.path.join(self.dir, "data"), self.memory_mb)


def shaled_command(shaled, port, rpc_port, datadir, memory_mb):
    """shaled as bench/run starts it: durable, the given buffer pool."""
    return [shaled, "--port", str(port), "--rpc-port", str(rpc_port),
            "--datadir", datadir, "--log-level", "warn",
            "--max-connections", "1000", "--wal-sync", "durable",
            "--buffer-pool-mb", str(memory_mb)]


class ShaleCluster(System):
    """N shaled processes on loopback joined into one cluster. Each node
    gets --memory-mb of buffer pool (the cluster has N times the memory of
    the one-node runs: each node stands for a server of its own). Node
    timeouts are raised over the defaults (election 1 s, removal 3 s) so a
    node starved of CPU by the benchmark on a shared machine is not removed
    mid-run: the run measures the data path, not failure handling."""

    TIMING = ["--election-timeout-ms", "2000", "--heartbeat-interval-ms", "100",
              "--node-timeout-ms", "15000"]

    def __init__(self, workdir, memory_mb, shaled, nodes):
        self.nodes = nodes
        self.name = "shale-%d" % nodes
        super().__init__(workdir, memory_mb)
        self.shaled = shaled
        self.node_ports = [self.port] + [free_port() for _ in range(nodes - 1)]
        self.rpc_ports = [free_port() for _ in range(nodes)]
        self.procs = []
        self.schema_waits = []  # (db, node, seconds) of wait_for_schema

    @property
    def ports(self):
        return self.node_ports

    def node_command(self, i):
        cmd = shaled_command(self.shaled, self.node_ports[i], self.rpc_ports[i],
                             os.path.join(self.dir, "node%d" % (i + 1)), self.memory_mb)
        cmd += ["--node-name", "node%d" % (i + 1)] + self.TIMING
        if i > 0:
            cmd += ["--join", "127.0.0.1:%d" % self.rpc_ports[0]]
        return cmd

    def node_log(self, i):
        return os.path.join(self.dir, "node%d.out" % (i + 1))

    def move_ports(self):
        super().move_ports()
        self.node_ports = [self.port] + [free_port() for _ in range(self.nodes - 1)]
        self.rpc_ports = [free_port() for _ in range(self.nodes)]

    def _start_once(self, timeout):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        deadline = time.time() + timeout
        for i in range(self.nodes):
            with open(self.node_log(i), "ab") as log:
                self.procs.append(subprocess.Popen(self.node_command(i), stdout=log,
                                                   stderr=subprocess.STDOUT, start_new_session=True))
            self.proc = self.procs[0]
            # Node 1 must lead before the others ask to join; each node must
            # answer before the next joins (one membership change at a time).
            self._wait(lambda: self._node_connect(i).close() or True, deadline,
                       "node%d to accept connections" % (i + 1))
        want = {"node%d" % (i + 1) for i in range(self.nodes)}
        for i in range(self.nodes):
            self._wait(lambda: self._members(i) == want, deadline,
                       "node%d to see all %d members" % (i + 1, self.nodes))

    def _node_connect(self, i):
        return pymysql.connect(host="127.0.0.1", port=self.node_ports[i], user="root", password="",
                               autocommit=True, connect_timeout=10, read_timeout=30)

    def _members(self, i):
        with self._node_connect(i) as c, c.cursor() as cur:
            cur.execute("SELECT name FROM system.nodes")
            return {r[0] for r in cur.fetchall()}

    def _wait(self, predicate, deadline, what):
        last = None
        while time.time() < deadline:
            dead = [i + 1 for i, p in enumerate(self.procs) if p.poll() is not None]
            if dead:
                raise RuntimeError("%s: node%d exited; log:\n%s" % (self.name, dead[0], self.log()))
            try:
                if predicate():
                    return
            except pymysql.MySQLError as e:
                last = e
            time.sleep(0.1)
        raise RuntimeError("%s: timed out waiting for %s (%s); log:\n%s" % (self.name, what, last, self.log()))

    def wait_for_schema(self, db, tables, timeout=60.0):
        """Waits until every node sees database `db` and its `tables`.
        Shale's DDL returns once it is applied on the node that ran it; the
        other nodes apply it from the Raft log a moment later, and a client
        connected to one of them meanwhile gets 1049/1146. The harness waits
        here so the cluster's data path can be measured at all; each wait is
        recorded in schema_waits (db, node, seconds) and reported."""
        for i in range(self.nodes):
            start = time.time()

            def visible():
                with self._node_connect(i) as c, c.cursor() as cur:
                    cur.execute("USE %s" % db)
                    for t in tables:
                        cur.execute("SELECT 1 FROM %s LIMIT 0" % t)
                return True

            last = None
            while True:
                try:
                    visible()
                    break
                except pymysql.MySQLError as e:
                    last = e
                    if time.time() - start > timeout:
                        raise RuntimeError("%s: node%d does not see %s.%s after %.0f s (%s)"
                                           % (self.name, i + 1, db, ",".join(tables), timeout, last))
                    time.sleep(0.02)
            if last is not None:
                self.schema_waits.append((db, i + 1, time.time() - start))

    def alive(self):
        return bool(self.procs) and all(p.poll() is None for p in self.procs)

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs:
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []
        self.proc = None

    def log_files(self):
        # The first node that died, else node 1.
        dead = [i for i, p in enumerate(self.procs) if p.poll() is not None]
        return [self.node_log(i) for i in dead + list(range(self.nodes))]

    def version(self):
        return "%s, %d nodes" % (super().version(), self.nodes)


def make_shale(workdir, memory_mb, shaled, nodes):
    """The Shale system of `nodes` nodes: "shale" (1) or "shale-N"."""
    if nodes == 1:
        return Shale(workdir, memory_mb, shaled)
    return ShaleCluster(workdir, memory_mb, shaled, nodes)


class MariaDB(System):
    name = "mariadb"

    def command(self):
        return ["bash", os.path.join(REPO, "scripts", "mariadb-private.sh"), "serve", self.dir,
                str(self.port),
                "--innodb-buffer-pool-size=%dM" % self.memory_mb,
                "--innodb-flush-log-at-trx-commit=1",
                "--innodb-log-file-size=256M",
                "--max-connections=1000",
                "--max-prepared-stmt-count=1000000"]

    def log_files(self):
        return [os.path.join(self.dir, "mariadbd.log"), self.log_path]

    @staticmethod
    def install():
        subprocess.run(["bash", os.path.join(REPO, "scripts", "mariadb-private.sh"), "install"],
                       check=True)

    @staticmethod
    def installed():
        return shutil.which("mariadbd") is not None or os.access("/usr/sbin/mariadbd", os.X_OK)


def make_workdir():
    return tempfile.mkdtemp(prefix="shale-bench-")
