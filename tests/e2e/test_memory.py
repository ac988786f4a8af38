"""Memory given back after a drop (docs/storage.md, "Memory given back"),
on a real shaled with a 64 MiB buffer pool: a table that filled the pool
is dropped, and within seconds the resident set falls by most of what the
table's pages held (the checkpoint after the drop releases the frames of
the freed pages, and jemalloc returns the freed heap), as SHOW GLOBAL
STATUS also says (Shale_buffer_pool_resident_bytes,
Shale_buffer_pool_frames_released, Shale_heap_*). The tables that
stay are intact, the freed pages are reused by a new table, and all of it
survives a restart."""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402

ROWS = 160000
PAD = 200


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    raise AssertionError("no VmRSS for pid %d" % pid)


class MemoryTest(NodeTestCase):
    extra_args = ("--buffer-pool-mb", "64", "--checkpoint-interval-ms", "30000")

    def load(self, cur, table, rows):
        cur.execute("CREATE TABLE %s (id INT PRIMARY KEY, k INT NOT NULL, pad VARCHAR(250) NOT NULL)" % table)
        for start in range(0, rows, 2000):
            cur.execute("INSERT INTO %s VALUES " % table + ",".join(
                "(%d, %d, '%s')" % (i, i * 7 % 1000, chr(97 + i % 26) * PAD) for i in range(start, start + 2000)))

    def status(self, cur, like):
        cur.execute("SHOW GLOBAL STATUS LIKE '%s'" % like)
        return {name: int(value) for name, value in cur.fetchall()}

    def check(self, cur, table, rows):
        cur.execute("SELECT COUNT(*), SUM(k), MIN(LENGTH(pad)) FROM %s" % table)
        self.assertEqual(cur.fetchone(), (rows, sum(i * 7 % 1000 for i in range(rows)), PAD))

    def test_drop_gives_the_pool_frames_back(self):
        conn, cur = self.fresh_db("mem")
        self.load(cur, "keep", 2000)
        time.sleep(2)
        before = rss_mib(self.node.proc.pid)
        self.load(cur, "big", ROWS)
        self.check(cur, "big", ROWS)
        time.sleep(2)  # the allocator's decay after the load's statements
        loaded = rss_mib(self.node.proc.pid)
        pool_loaded = self.status(cur, "Shale_buffer_pool%")
        self.assertEqual(pool_loaded["Shale_buffer_pool_frames_released"], 0)
        self.assertGreaterEqual(pool_loaded["Shale_buffer_pool_resident_bytes"], 20 << 20)
        heap = self.status(cur, "Shale_heap%")  # jemalloc's figures (shaled links it)
        self.assertEqual(sorted(heap), ["Shale_heap_allocated_bytes", "Shale_heap_metadata_bytes",
                                        "Shale_heap_resident_bytes", "Shale_heap_retained_bytes"])
        self.assertGreater(heap["Shale_heap_allocated_bytes"], 64 << 20)  # the pool's 64 MiB at least
        cur.execute("DROP TABLE big")
        lowest = loaded
        deadline = time.time() + 20
        while time.time() < deadline:
            time.sleep(0.5)
            lowest = min(lowest, rss_mib(self.node.proc.pid))
            if lowest - before <= 10:
                break
        # The table's pages (~35 MiB of rows) took most of the 64 MiB pool;
        # after the drop the process is back within 10 MiB of where it was
        # before the load (it stayed ~30 MiB above with the frames kept).
        what = "RSS %.0f MiB before the load, %.0f MiB with the table, %.0f MiB after the drop" % (
            before, loaded, lowest)
        self.assertGreaterEqual(loaded - before, 20, what)
        self.assertLessEqual(lowest - before, 10, what)
        pool = self.status(cur, "Shale_buffer_pool%")
        self.assertGreater(pool["Shale_buffer_pool_frames_released"], 1000)
        self.assertLess(pool["Shale_buffer_pool_resident_bytes"], pool_loaded["Shale_buffer_pool_resident_bytes"] // 2)
        self.check(cur, "keep", 2000)
        # The freed pages (on the free list, their frames released) are
        # taken again by a new table; the data is intact after a restart.
        self.load(cur, "again", 40000)
        self.check(cur, "again", 40000)
        conn.close()
        self.node.stop()
        self.node.start()
        conn = self.connect("mem")
        cur = conn.cursor()
        self.check(cur, "keep", 2000)
        self.check(cur, "again", 40000)
        cur.execute("SHOW TABLES")
        self.assertEqual(sorted(r[0] for r in cur.fetchall()), ["again", "keep"])


if __name__ == "__main__":
    main()
