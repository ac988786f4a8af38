"""bulk: the statements that move many rows at once, and the memory they leave.

One repetition, on a fresh database each time:

  bulk(id BIGINT PRIMARY KEY, k INT NOT NULL, v INT NOT NULL, pad VARCHAR(60) NOT NULL)

  load_data      LOAD DATA LOCAL INFILE of `rows` rows (ids 1..rows, k random)
  insert_select  INSERT INTO copy SELECT * FROM bulk        (all rows)
  create_index   CREATE INDEX k_idx ON bulk (k)             (all rows)
  update_10pct   UPDATE bulk SET v = v + 1 WHERE id <= rows/10
  update_all     UPDATE copy SET v = v + 1                  (all rows)
  delete_10pct   DELETE FROM bulk WHERE id <= rows/10
  delete_all     DELETE FROM copy                           (all rows)

Each phase is one statement on one connection (autocommit), measured in
rows/s; the answers are checked after each (counts and sums against the
model, and an indexed count after CREATE INDEX).

Memory (unit MiB, one "operation" per MiB so the table shows the size):
  rss_before     the server's resident set before the load
  rss_peak       after the last statement, before DROP DATABASE
  rss_after_drop after DROP DATABASE, once it settles (the smallest of the
                 samples taken for up to 10 s, plus 5 s per million rows
                 beyond the first: the pool's frames go back after the
                 checkpoint that follows the drop, allocators' heap after a
                 delay; sampling stops early once within 20% of rss_before)
The server's resident set is the sum over its process group (shaled; for
MariaDB the mariadbd under its wrapper script).

Scale: 1,000,000 rows (--smoke: 2,000); SHALE_BENCH_BULK_ROWS overrides,
e.g. 10000000 for the 10M-row run.
"""
import os
import random
import string
import tempfile
import time

from .driver import Measurement, require
from .workload import Workload

SCHEMA = ("CREATE TABLE %s (id BIGINT NOT NULL PRIMARY KEY, k INT NOT NULL, v INT NOT NULL, "
          "pad VARCHAR(60) NOT NULL)")
PAD_CHARS = string.ascii_lowercase + string.digits


def process_group_rss_mib(pid):
    """Resident MiB of every process whose process group is `pid`."""
    total_kb = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if int(fields[2]) != pid:  # pgrp is the 5th field; [0] after ')' is state
                continue
            with open("/proc/%s/status" % entry) as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total_kb += int(line.split()[1])
                        break
        except (OSError, ValueError, IndexError):
            continue
    return total_kb / 1024.0


def server_rss_mib(system):
    proc = getattr(system, "proc", None)
    if proc is None:
        return None
    return process_group_rss_mib(proc.pid)


class Bulk(Workload):
    name = "bulk"
    description = "bulk statements (LOAD DATA, INSERT...SELECT, CREATE INDEX, UPDATE, DELETE) and memory"

    def __init__(self, scale):
        super().__init__(scale)
        env = os.environ.get("SHALE_BENCH_BULK_ROWS")
        self.rows = int(env) if env else scale.pick(1000000, 2000)
        self.tenth = max(1, self.rows // 10)
        self.file = None
        self.sum_k = 0
        self.k_range = (0, 0, 0)  # (low, high, rows with k in [low, high])

    def settle_seconds(self):
        """How long the resident set is watched after DROP DATABASE: 10 s,
        plus 5 s per million rows beyond the first (dropping 10M rows makes
        the checkpoint that precedes the release take about 20 s)."""
        return 10.0 + 5.0 * max(0, self.rows - 1000000) / 1e6

    def make_file(self):
        if self.file is not None:
            return
        rng = random.Random(11)
        fd, path = tempfile.mkstemp(prefix="shale-bench-bulk-", suffix=".tsv")
        ks = []
        with os.fdopen(fd, "w") as f:
            chunk = []
            for i in range(1, self.rows + 1):
                k = rng.randrange(1 << 30)
                ks.append(k)
                pad = "".join(rng.choices(PAD_CHARS, k=rng.randint(20, 60)))
                chunk.append("%d\t%d\t0\t%s\n" % (i, k, pad))
                if len(chunk) == 10000:
                    f.write("".join(chunk))
                    chunk = []
            f.write("".join(chunk))
        self.file = path
        self.sum_k = sum(ks)
        low = 1 << 28
        high = low + (1 << 25)
        self.k_range = (low, high, sum(1 for k in ks if low <= k <= high))

    def prepare(self, system):
        self.make_file()
        return []

    def connect(self, system):
        import pymysql
        port = system.ports[0]
        return pymysql.connect(host="127.0.0.1", port=port, user="root", password="", autocommit=True,
                               local_infile=True, connect_timeout=10, read_timeout=3600, write_timeout=3600)

    def run(self, system, rep):
        db = self.database()
        n = self.rows
        out = []
        with self.connect(system) as c, c.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS %s" % db)
            time.sleep(1.0)
            rss_before = server_rss_mib(system)
            cur.execute("CREATE DATABASE %s" % db)
            cur.execute("USE %s" % db)
            cur.execute(SCHEMA % "bulk")
            cur.execute(SCHEMA % "copy")

            def timed(phase, rows, sql):
                t0 = time.perf_counter()
                cur.execute(sql)
                out.append(Measurement(phase, "rows/s", rows, time.perf_counter() - t0, []))

            def one(sql):
                cur.execute(sql)
                return cur.fetchone()

            timed("load_data", n, "LOAD DATA LOCAL INFILE '%s' INTO TABLE bulk" % self.file)
            count, sum_k = one("SELECT COUNT(*), SUM(k) FROM bulk")
            require((count, int(sum_k)) == (n, self.sum_k),
                    "after LOAD DATA: (COUNT, SUM(k)) = (%s, %s), expected (%d, %d)" % (count, sum_k, n, self.sum_k))

            timed("insert_select", n, "INSERT INTO copy SELECT * FROM bulk")
            count, sum_k = one("SELECT COUNT(*), SUM(k) FROM copy")
            require((count, int(sum_k)) == (n, self.sum_k),
                    "after INSERT...SELECT: copy has (COUNT, SUM(k)) = (%s, %s), expected (%d, %d)"
                    % (count, sum_k, n, self.sum_k))

            timed("create_index", n, "CREATE INDEX k_idx ON bulk (k)")
            low, high, want = self.k_range
            got = one("SELECT COUNT(*) FROM bulk WHERE k BETWEEN %d AND %d" % (low, high))[0]
            require(got == want, "after CREATE INDEX: %s rows with k in [%d, %d], expected %d" % (got, low, high, want))

            timed("update_10pct", self.tenth, "UPDATE bulk SET v = v + 1 WHERE id <= %d" % self.tenth)
            got = one("SELECT SUM(v) FROM bulk")[0]
            require(int(got) == self.tenth, "after UPDATE of %d rows: SUM(v) = %s" % (self.tenth, got))

            timed("update_all", n, "UPDATE copy SET v = v + 1")
            got = one("SELECT SUM(v) FROM copy")[0]
            require(int(got) == n, "after UPDATE of every row: SUM(v) = %s, expected %d" % (got, n))

            timed("delete_10pct", self.tenth, "DELETE FROM bulk WHERE id <= %d" % self.tenth)
            got = one("SELECT COUNT(*) FROM bulk")[0]
            require(got == n - self.tenth, "after DELETE of %d rows: COUNT = %s" % (self.tenth, got))

            timed("delete_all", n, "DELETE FROM copy")
            got = one("SELECT COUNT(*) FROM copy")[0]
            require(got == 0, "after DELETE of every row: COUNT = %s" % got)

            rss_peak = server_rss_mib(system)
            cur.execute("DROP DATABASE %s" % db)
            rss_after = rss_peak
            deadline = time.time() + self.settle_seconds()
            while time.time() < deadline:
                time.sleep(0.5)
                now = server_rss_mib(system)
                if now is None:
                    break
                rss_after = min(rss_after, now)
                if rss_before is not None and rss_after <= rss_before * 1.2:
                    break
        if rss_before is not None:
            for phase, mib in (("rss_before", rss_before), ("rss_peak", rss_peak), ("rss_after_drop", rss_after)):
                out.append(Measurement(phase, "MiB", round(mib, 1), 1.0, []))
        return out

    def __del__(self):
        if self.file is not None:
            try:
                os.unlink(self.file)
            except OSError:
                pass


def workloads(scale):
    return [Bulk(scale)]
