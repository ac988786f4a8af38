"""Real shaled processes joined into one cluster, as tests/cluster/
cluster_fixture.py starts them (node 1 bootstraps, the others --join it,
short Raft timings, --ssl OFF), either each in its own network namespace
(netns.Network: fixed ports, one address per node, links can be cut) or all
on loopback with free ports (no partitions).

Every node is started with PR_SET_PDEATHSIG=SIGKILL, so nodes die with the
runner even when it is SIGKILLed itself (a ctest timeout). Processes are
started from the runner's main thread only: the death signal fires when the
thread that forked the child exits.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
sys.path.insert(0, os.path.join(HERE, "..", "cluster"))
from shaled_fixture import free_port  # noqa: E402
from cluster_fixture import wait_until  # noqa: E402,F401 (run.py and nemesis.py use it from here)

# The same short timings as tests/cluster/cluster_fixture.py.
TIMING = ["--election-timeout-ms", "500", "--heartbeat-interval-ms", "50", "--node-timeout-ms", "2000"]
START_TIMEOUT = 60.0
MYSQL_PORT = 3306   # inside a namespace every node has its own address
RPC_PORT = 4306

_libc = ctypes.CDLL(None, use_errno=True)
PR_SET_PDEATHSIG = 1


def _die_with_parent():
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


class Node:
    def __init__(self, binary, index, root_dir, net=None, join=None, extra_args=()):
        self.binary = binary
        self.index = index
        self.name = "node%d" % index
        self.net = net
        self.data_dir = os.path.join(root_dir, self.name)
        os.makedirs(self.data_dir, exist_ok=True)
        self.log_path = os.path.join(self.data_dir, "shaled.log")
        self.extra_args = list(extra_args)
        if net is not None:
            self.host = net.ip(index)
            self.port = MYSQL_PORT
            self.rpc_port = RPC_PORT
        else:
            self.host = "127.0.0.1"
            self.port = free_port()
            self.rpc_port = free_port()
        self.join = join
        self.proc = None
        self.paused = False
        self.started_once = False

    @property
    def rpc_address(self):
        return "%s:%d" % (self.host, self.rpc_port)

    def command(self):
        cmd = [self.binary, "--node-name", self.name, "--bind-address", self.host,
               "--advertise-address", self.host, "--port", str(self.port), "--rpc-port", str(self.rpc_port),
               "--datadir", os.path.join(self.data_dir, "data"), "--ssl", "OFF"] + TIMING + self.extra_args
        # A node that was ever a member rejoins by itself: --join only on
        # the first start.
        if self.join and not self.started_once:
            cmd += ["--join", self.join]
        if self.net is not None:
            cmd = self.net.exec_prefix(self.index) + cmd
        return cmd

    def start(self, timeout=START_TIMEOUT):
        for attempt in range(5):
            try:
                return self._start_once(timeout)
            except RuntimeError as e:
                # Loopback only: another test may take a free port before we
                # bind it (never after the first start: the cluster knows the
                # address).
                if ("cannot listen on" not in str(e) or self.net is not None or self.started_once
                        or attempt == 4):
                    raise
                self.port, self.rpc_port = free_port(), free_port()

    def _start_once(self, timeout):
        log_start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
        with open(self.log_path, "ab") as log:
            log.write(b"=== jepsen: starting %s: %s\n" % (self.name.encode(), " ".join(self.command()).encode()))
            log.flush()
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, preexec_fn=_die_with_parent)
        self.paused = False
        needle = b"listening for MySQL clients on %s:%d\n" % (self.host.encode(), self.port)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited with %s; log:\n%s" % (self.name, self.proc.returncode,
                                                                    self.log_tail(log_start)))
            with open(self.log_path, "rb") as f:
                f.seek(log_start)
                if needle in f.read():
                    self.started_once = True
                    return
            time.sleep(0.05)
        raise RuntimeError("%s did not listen within %.0f s; log:\n%s" % (self.name, timeout, self.log_tail(log_start)))

    def log_tail(self, since=0, chars=4000):
        try:
            with open(self.log_path, "rb") as f:
                f.seek(since)
                return f.read().decode(errors="replace")[-chars:]
        except OSError:
            return ""

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
        self.proc = None
        self.paused = False

    def pause(self):
        if self.running():
            self.proc.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self):
        if self.running() and self.paused:
            self.proc.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self):
        """SIGTERM, then SIGKILL if it does not end within 60 s."""
        if self.running():
            self.resume()
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def connect(self, connect_timeout=5, read_timeout=15, autocommit=True, database=None):
        import pymysql
        return pymysql.connect(host=self.host, port=self.port, user="root", password="", database=database,
                               autocommit=autocommit, connect_timeout=connect_timeout,
                               read_timeout=read_timeout, write_timeout=read_timeout)

    def query(self, sql, timeout=15):
        conn = self.connect(read_timeout=timeout)
        try:
            cur = conn.cursor()
            cur.execute(sql)
            return cur.fetchall()
        finally:
            conn.close()


class Cluster:
    def __init__(self, binary, n, net=None, log=print, root_dir=None):
        self.net = net
        self.log = log
        self.own_root = root_dir is None
        self.root_dir = root_dir or tempfile.mkdtemp(prefix="shale-jepsen-%d-" % os.getpid())
        # A private copy: a node restarted by the nemesis runs the same
        # binary even if the file is replaced by a newer build meanwhile.
        self.binary = os.path.join(self.root_dir, "shaled")
        shutil.copy2(os.path.abspath(binary), self.binary)
        self.nodes = []
        first = Node(self.binary, 1, self.root_dir, net)
        self.nodes.append(first)
        for i in range(2, n + 1):
            self.nodes.append(Node(self.binary, i, self.root_dir, net, join=None))

    def start(self):
        first = self.nodes[0]
        first.start()
        for node in self.nodes[1:]:
            node.join = first.rpc_address
            node.start()
        self.wait_all_members(90)
        self.log("cluster: %s" % ", ".join("%s %s:%d" % (n.name, n.host, n.port) for n in self.nodes))

    def names(self):
        return {n.name for n in self.nodes}

    def members_agree(self):
        """Every node shows exactly every node as a member, with one leader."""
        for node in self.nodes:
            rows = node.query("SELECT name, state, is_leader FROM system.nodes", timeout=5)
            if {r[0] for r in rows} != self.names() or sum(1 for r in rows if r[2]) != 1:
                return False
        return True

    def wait_all_members(self, timeout):
        wait_until("all %d nodes members on every node" % len(self.nodes), self.members_agree, timeout)

    def heal_processes(self):
        """Every node running and not paused (restarted if it died)."""
        for node in self.nodes:
            node.resume()
            if not node.running():
                node.start()

    def collect_logs(self, out_dir):
        for node in self.nodes:
            if os.path.exists(node.log_path):
                shutil.copy(node.log_path, os.path.join(out_dir, "%s.log" % node.name))

    def kill_all(self):
        for node in self.nodes:
            try:
                node.kill()
            except Exception:  # noqa: BLE001 - best effort at exit
                pass

    def shutdown(self, keep_data=False):
        self.kill_all()
        if self.own_root and not keep_data:
            shutil.rmtree(self.root_dir, ignore_errors=True)


def _alive(pid):
    """pid is a running process (not a zombie)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def cleanup_stale_data(log=print):
    """Removes the data directories (shale-jepsen-<pid>-*) of runs that are
    gone: a runner killed with SIGKILL cannot remove its own."""
    tmp = tempfile.gettempdir()
    for name in os.listdir(tmp):
        parts = name.split("-")
        if len(parts) < 4 or parts[:2] != ["shale", "jepsen"] or not parts[2].isdigit():
            continue
        pid = int(parts[2])
        if _alive(pid):
            continue
        log("removing %s (its run, pid %d, is gone)" % (os.path.join(tmp, name), pid))
        shutil.rmtree(os.path.join(tmp, name), ignore_errors=True)
