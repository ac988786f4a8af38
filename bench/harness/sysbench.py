"""sysbench's OLTP workloads (Debian's sysbench 1.0, its own Lua scripts),
run against the system under test; sysbench is the client here.

One table sbtest1 of --table-size rows (sysbench's schema: id INTEGER
PRIMARY KEY, k INTEGER with a secondary index, c CHAR(120), pad CHAR(60)),
prepared by sysbench itself, with sysbench's default --auto_inc=on: id is
an AUTO_INCREMENT column, prepare inserts rows without ids and oltp_insert
inserts id 0, so the server generates ids (as in real sysbench runs).
Percentiles come from sysbench's latency histogram (--histogram=on), which
holds every transaction of the run.

Answers checked: after prepare the table holds table-size rows; the read
workloads leave COUNT(*) and SUM(k) unchanged; write_only and read_write
(each transaction deletes a row and inserts it back with its id) leave
COUNT(*) unchanged; oltp_insert adds exactly the rows sysbench reports as
writes; sysbench itself fails on any SQL error it does not retry.
"""
import re
import shutil
import subprocess

from .driver import Measurement, WorkloadError, require
from .workload import Workload

NAMES = ["oltp_point_select", "oltp_read_only", "oltp_read_write", "oltp_write_only", "oltp_insert"]
READ_ONLY = {"oltp_point_select", "oltp_read_only"}


class Sysbench(Workload):
    def __init__(self, scale, name):
        super().__init__(scale)
        self.name = name
        self.description = "sysbench " + name
        self.table_size = scale.pick(50000, 1000)
        self.before = {}

    def command(self, system, *extra):
        # sysbench spreads its connections round-robin over the listed
        # host:port pairs (a cluster's nodes).
        ports = system.ports
        return ["sysbench", self.name, "--db-driver=mysql", "--mysql-host=" + ",".join(["127.0.0.1"] * len(ports)),
                "--mysql-port=" + ",".join(str(p) for p in ports), "--mysql-user=root", "--mysql-password=",
                "--mysql-db=%s" % self.database(), "--tables=1",
                "--table-size=%d" % self.table_size,
                # sysbench restarts a transaction that fails with one of
                # these: deadlock and lock wait timeout (its default), and
                # a Shale cluster's "cluster changed, nothing was committed,
                # retry" (1047) and "table definition changed" (1412), which
                # docs/cluster.md tells clients to retry. MariaDB never
                # returns the last two.
                "--mysql-ignore-errors=1213,1020,1205,1047,1412"] + list(extra)

    def sysbench(self, system, *extra, timeout=None):
        if shutil.which("sysbench") is None:
            raise WorkloadError("sysbench is not installed (scripts/install-deps.sh installs it)")
        p = subprocess.run(self.command(system, *extra), capture_output=True, text=True,
                           timeout=timeout)
        if p.returncode != 0 or "FATAL" in p.stdout or "FATAL" in p.stderr:
            lines = [l for l in (p.stderr + p.stdout).splitlines() if "FATAL" in l or "error" in l.lower()]
            raise WorkloadError("sysbench %s failed: %s" % (extra[-1] if extra else "",
                                                            " | ".join(lines[:3])[:600]))
        return p.stdout

    def state(self, system):
        with system.connect(self.database()) as c, c.cursor() as cur:
            cur.execute("SELECT COUNT(*), SUM(k) FROM sbtest1")
            count, total = cur.fetchone()
        return int(count), int(total or 0)

    def prepare(self, system):
        self.create_database(system)
        self.sysbench(system, "--threads=1", "prepare", timeout=1800)
        count, total = self.state(system)
        want = self.table_size
        require(count == want, "sbtest1 has %d rows after prepare, expected %d" % (count, want))
        self.before[system.name] = (count, total)
        return []

    def run(self, system, rep):
        out = self.sysbench(system, "--threads=%d" % self.scale.threads,
                            "--time=%d" % max(1, round(self.scale.duration)),
                            "--histogram=on", "--report-interval=0", "run",
                            timeout=self.scale.duration + 600)
        m = re.search(r"transactions:\s+(\d+)\s+\(([\d.]+) per sec", out)
        t = re.search(r"total time:\s+([\d.]+)s", out)
        w = re.search(r"write:\s+(\d+)", out)
        if not (m and t and w):
            raise WorkloadError("cannot parse sysbench output:\n" + out[-1500:])
        transactions, seconds, writes = int(m.group(1)), float(t.group(1)), int(w.group(1))
        latencies = histogram(out)
        require(len(latencies) >= transactions * 0.99,
                "sysbench histogram holds %d events for %d transactions" % (len(latencies), transactions))
        count, total = self.state(system)
        b_count, b_total = self.before[system.name]
        if self.name in READ_ONLY:
            require((count, total) == (b_count, b_total),
                    "read-only run changed sbtest1: (COUNT, SUM(k)) %s -> %s" % ((b_count, b_total), (count, total)))
        elif self.name == "oltp_insert":
            require(count == b_count + writes,
                    "sbtest1 has %d rows after %d inserts on %d rows" % (count, writes, b_count))
        else:
            require(count == b_count, "sbtest1 has %d rows after the run, expected %d" % (count, b_count))
        self.before[system.name] = (count, total)
        return [Measurement("run", "tx/s", transactions, seconds, latencies)]


def histogram(out):
    """The run's latencies (ms) from sysbench's --histogram table: each row
    is a bucket's value and its count; returns the bucket values repeated."""
    values = []
    in_table = False
    for line in out.splitlines():
        if line.startswith("Latency histogram"):
            in_table = True
            continue
        if in_table:
            m = re.match(r"\s*([\d.]+)\s+\|[* ]*\s(\d+)\s*$", line)
            if m:
                values.extend([float(m.group(1))] * int(m.group(2)))
            elif values:
                break
    return values


def workloads(scale):
    return [Sysbench(scale, name) for name in NAMES]
