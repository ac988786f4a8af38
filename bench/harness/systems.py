"""The systems under test: a shaled from the build directory and a private
MariaDB from Debian, each on a free loopback port with its own data directory.

Both are started durable: shaled fdatasyncs every write batch before it is
acknowledged (storage/log_slice.h); MariaDB runs with
innodb_flush_log_at_trx_commit=1 and no binlog. MariaDB's buffer pool is
--memory-mb, the figure Shale's memory setting will take once the B+tree
engine with its buffer pool serves slices (today every slice is held in
memory in full, so Shale is not limited by it).

A System is used as: start(); connect() any number of times; stop().
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pymysql

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class System:
    """One server process. Subclasses fill in command() and version()."""
    name = "?"

    def __init__(self, workdir, memory_mb):
        self.dir = os.path.join(workdir, self.name)
        self.memory_mb = memory_mb
        self.port = free_port()
        self.proc = None
        self.log_path = os.path.join(self.dir, "server.out")

    def command(self):
        raise NotImplementedError

    def start(self, timeout=120.0):
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
        return pymysql.connect(host="127.0.0.1", port=self.port, user="root", password="",
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
            # Hook for the three-node local cluster: start `nodes` shaled
            # processes joined into one cluster and connect round-robin.
            # shaled cannot form a cluster yet (see docs/architecture.md).
            raise RuntimeError("shaled runs one node only today; --nodes=%d is not supported yet" % nodes)

    def command(self):
        return [self.shaled, "--port", str(self.port), "--rpc-port", "0",
                "--datadir", os.path.join(self.dir, "data"), "--log-level", "warn",
                "--max-connections", "1000"]


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
