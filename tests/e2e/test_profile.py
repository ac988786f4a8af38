"""system.profile, the per-module CPU profile (src/common/module_profile.h,
docs/operations.md "Where the time goes"), on a real shaled: the modules'
CPU time adds up to the process's CPU time (as the kernel counts it in
/proc/PID/stat, read by this test) within 10%; the statement path's
modules are entered and charged; TRUNCATE TABLE system.profile starts the
figures again; SET GLOBAL shale_module_profile = 0 stops the sampling (calls
still counted) and 1 starts it again; bad input gets its MySQL error."""
import os
import sys
import threading
import time

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_us(pid):
    """utime + stime of the whole process, from the kernel."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # Fields after the command: state is [0]; utime and stime are 14 and 15
    # of the full line, so [11] and [12] here.
    return (int(fields[11]) + int(fields[12])) * 1000000 // CLOCK_TICKS


class ProfileTest(NodeTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cur = cls.connect_class().cursor()
        cur.execute("CREATE DATABASE prof")
        cur.execute("CREATE TABLE prof.t (id INT PRIMARY KEY, k INT, c VARCHAR(100), KEY (k))")
        for start in range(0, 5000, 500):
            cur.execute("INSERT INTO prof.t VALUES " + ",".join(
                "(%d, %d, '%s')" % (i, i % 97, "x" * 60) for i in range(start, start + 500)))
        cur.execute("COMMIT")

    @classmethod
    def connect_class(cls):
        return pymysql.connect(host="127.0.0.1", port=cls.node.port, user="root", autocommit=True)

    def profile(self, cur):
        cur.execute("SELECT module, cpu_us, cpu_percent, calls, process_cpu_us, span_us FROM system.profile")
        return {r[0]: r for r in cur.fetchall()}

    def workload(self, seconds, threads=2):
        """Point selects, range scans and updates from `threads` clients."""
        stop = time.time() + seconds
        counts = []

        def run(n):
            c = self.connect()
            cur = c.cursor()
            done = 0
            i = n
            while time.time() < stop:
                cur.execute("SELECT c FROM prof.t WHERE id = %d" % (i % 5000))
                cur.fetchall()
                cur.execute("SELECT SUM(k) FROM prof.t WHERE id BETWEEN %d AND %d" % (i % 4000, i % 4000 + 100))
                cur.fetchall()
                cur.execute("UPDATE prof.t SET k = k + 1 WHERE id = %d" % (i % 5000))
                done += 3
                i += 7
            counts.append(done)
            c.close()

        ts = [threading.Thread(target=run, args=(n,)) for n in range(threads)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        return sum(counts)

    def test_modules_add_up_to_the_process_cpu_time(self):
        cur = self.connect().cursor()
        cur.execute("TRUNCATE TABLE system.profile")
        before = process_cpu_us(self.node.proc.pid)
        statements = self.workload(4.0)
        rows = self.profile(cur)
        after = process_cpu_us(self.node.proc.pid)
        kernel_cpu = after - before
        modules = sum(r[1] for r in rows.values())
        process_cpu = next(iter(rows.values()))[4]
        self.assertGreater(kernel_cpu, 500000, "the workload used too little CPU to judge")
        # What the table says the process used agrees with the kernel, and
        # the modules account for it, each within 10%.
        self.assertLess(abs(process_cpu - kernel_cpu), 0.1 * kernel_cpu, (process_cpu, kernel_cpu))
        self.assertLess(abs(modules - kernel_cpu), 0.1 * kernel_cpu, (modules, kernel_cpu, rows))
        self.assertAlmostEqual(sum(r[2] for r in rows.values()), 100.0 * modules / process_cpu, delta=0.5)
        # The statement path went through its modules.
        for m in ("protocol", "parse", "execute", "btree", "mvcc", "buffer_pool", "wal", "locks", "timestamps"):
            self.assertGreater(rows[m][3], 0, "module %s never entered: %s" % (m, rows))
        # Connection threads' event loops are network time (no calls: it is
        # their threads' module outside every scope).
        self.assertGreater(rows["network"][1], 0, rows)
        # One parse per statement (plan cache hits skip it, never add).
        self.assertLessEqual(rows["parse"][3], 2 * (statements + 10))
        # And the busy ones were charged CPU time.
        charged = sum(rows[m][1] for m in ("network", "protocol", "parse", "bind", "plan", "plan_cache", "execute",
                                           "btree", "mvcc", "buffer_pool"))
        self.assertGreater(charged, 0.3 * modules, rows)
        self.assertGreater(next(iter(rows.values()))[5], 3500000)  # span_us covers the workload

    def test_truncate_starts_again(self):
        cur = self.connect().cursor()
        self.workload(0.5, threads=1)
        cur.execute("TRUNCATE TABLE system.profile")
        self.assertEqual(cur.rowcount, 0)
        rows = self.profile(cur)
        # Only this connection's own SELECT ran since: a handful of calls.
        self.assertLess(rows["parse"][3], 5, rows)
        self.assertLess(next(iter(rows.values()))[5], 2000000)

    def test_sampling_off_and_on(self):
        cur = self.connect().cursor()
        try:
            cur.execute("SET GLOBAL shale_module_profile = 0")
            cur.execute("SELECT @@GLOBAL.shale_module_profile")
            self.assertEqual(cur.fetchall(), ((0,),))
            cur.execute("TRUNCATE TABLE system.profile")
            self.workload(1.5, threads=1)
            rows = self.profile(cur)
            self.assertEqual(sum(r[1] for r in rows.values()), 0, rows)  # no samples
            self.assertGreater(rows["parse"][3], 10)                     # calls still counted
            cur.execute("SET GLOBAL shale_module_profile = ON")
            cur.execute("SELECT @@GLOBAL.shale_module_profile")
            self.assertEqual(cur.fetchall(), ((1,),))
            self.workload(1.5, threads=1)
            rows = self.profile(cur)
            self.assertGreater(sum(r[1] for r in rows.values()), 0, rows)
        finally:
            cur.execute("SET GLOBAL shale_module_profile = 1")

    def test_bad_input(self):
        cur = self.connect().cursor()
        with self.assertRaises(pymysql.err.ProgrammingError) as e:
            cur.execute("SELECT * FROM system.profiles")
        self.assertEqual(e.exception.args[0], 1146)
        # A user without privileges cannot reset it.
        cur.execute("CREATE USER 'peek'@'%' IDENTIFIED BY 'pw'")
        cur.execute("GRANT SELECT ON prof.* TO 'peek'@'%'")
        peek = pymysql.connect(host="127.0.0.1", port=self.node.port, user="peek", password="pw")
        with self.assertRaises(pymysql.err.OperationalError) as e:
            peek.cursor().execute("TRUNCATE TABLE system.profile")
        self.assertEqual(e.exception.args[0], 1142)
        peek.close()
        # The connection and node are fine.
        cur.execute("SELECT COUNT(*) FROM system.profile")
        self.assertEqual(cur.fetchall(), ((15,),))


if __name__ == "__main__":
    main()
