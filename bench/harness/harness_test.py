"""Unit tests of bench/run's own parts that need no server: percentiles,
sysbench histogram parsing, YCSB key hashing and key distributions, the
acknowledged-insert watermark, and that a failing check raises.
Run: /usr/bin/python3 bench/harness/harness_test.py (ctest bench_harness)."""
import collections
import os
import random
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import tempfile  # noqa: E402

from harness import driver, report, sysbench, ycsb  # noqa: E402
from harness.systems import ShaleCluster, make_shale  # noqa: E402


class PercentileTest(unittest.TestCase):
    def test_nearest_rank(self):
        values = list(range(1, 101))
        self.assertEqual(driver.percentile(values, 50), 50)
        self.assertEqual(driver.percentile(values, 95), 95)
        self.assertEqual(driver.percentile(values, 99), 99)
        self.assertEqual(driver.percentile(values, 100), 100)
        self.assertEqual(driver.percentile([7.0], 99), 7.0)
        self.assertIsNone(driver.percentile([], 50))


class ReportTest(unittest.TestCase):
    def test_one_ratio_pair_per_shale_system(self):
        rows = []
        for system, tput in (("shale", 50.0), ("shale-3", 25.0), ("mariadb", 100.0)):
            m = driver.Measurement("run", "tx/s", int(tput * 10), 10.0, [1.0, 2.0, 4.0])
            rows.append(report.measurement_row("w", system, 1, m))
        rows.append(report.failure_row("v", "shale-3", "run 1", "ERROR 1205: lock wait timeout"))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "results.md")
            report.write_markdown(path, rows, ["shale", "shale-3", "mariadb"], ["# t"], None)
            text = open(path).read()
        header = next(l for l in text.splitlines() if l.startswith("| workload"))
        self.assertIn("shale ratio throughput", header)
        self.assertIn("shale-3 ratio throughput", header)
        line = next(l for l in text.splitlines() if l.startswith("| w |"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        self.assertEqual(cells[-4:], ["0.500", "1.000", "0.250", "1.000"])
        self.assertIn("| v | shale-3 | run 1 | ERROR 1205: lock wait timeout |", text)

    def test_cluster_commands(self):
        with tempfile.TemporaryDirectory() as d:
            c = make_shale(d, 64, "/bin/shaled", 3)
            self.assertIsInstance(c, ShaleCluster)
            self.assertEqual(c.name, "shale-3")
            self.assertEqual(len(set(c.ports)), 3)
            first, second = c.node_command(0), c.node_command(1)
            self.assertNotIn("--join", first)
            self.assertEqual(second[second.index("--join") + 1], "127.0.0.1:%d" % c.rpc_ports[0])
            self.assertEqual(make_shale(d, 64, "/bin/shaled", 1).name, "shale")
            # sysbench gets every node's port.
            cmd = sysbench.Sysbench(driver_scale(), "oltp_point_select").command(c)
            self.assertIn("--mysql-port=" + ",".join(str(p) for p in c.ports), cmd)


def driver_scale():
    from harness.workload import Scale
    return Scale(True, 1.0, 1)


class SysbenchHistogramTest(unittest.TestCase):
    OUT = """Threads started!

Latency histogram (values are in milliseconds)
       value  ------------- distribution ------------- count
       0.036 |                                         5
       0.040 |*************                            90
      15.545 |                                         4
      36.236 |                                         1
 
SQL statistics:
"""

    def test_buckets_become_latencies(self):
        lat = sysbench.histogram(self.OUT)
        self.assertEqual(len(lat), 100)
        self.assertEqual(driver.percentile(lat, 50), 0.040)
        self.assertEqual(driver.percentile(lat, 99), 15.545)
        self.assertEqual(max(lat), 36.236)

    def test_no_histogram(self):
        self.assertEqual(sysbench.histogram("transactions: 5 (1.0 per sec.)"), [])


class YcsbTest(unittest.TestCase):
    def test_fnv_hash_is_ycsbs(self):
        # FNV-1a 64 over the 8 little-endian bytes of the number, as YCSB's
        # Utils.fnvhash64: 0 hashes the offset basis through eight zero bytes.
        # Utils.fnvhash64 returns Math.abs() of the signed result.
        h = ycsb.FNV_OFFSET
        for _ in range(8):
            h = (h * ycsb.FNV_PRIME) & ycsb.MASK64
        signed = h - (1 << 64) if h >= (1 << 63) else h
        self.assertEqual(ycsb.fnv_hash64(0), abs(signed))
        self.assertTrue(all(0 <= ycsb.fnv_hash64(i) < (1 << 63) for i in range(1000)))
        self.assertNotEqual(ycsb.key_of(1), ycsb.key_of(2))
        self.assertEqual(len({ycsb.key_of(i) for i in range(10000)}), 10000)

    def test_zipfian_is_skewed_and_in_range(self):
        rng = random.Random(1)
        z = ycsb.Zipfian(1000)
        draws = [z.next(rng) for _ in range(20000)]
        self.assertTrue(all(0 <= d < 1000 for d in draws))
        counts = collections.Counter(draws)
        self.assertEqual(counts.most_common(1)[0][0], 0)
        # theta 0.99 over 1000 items: item 0 draws about 1/zeta(1000) = 13%.
        self.assertGreater(counts[0] / len(draws), 0.10)
        self.assertLess(counts[0] / len(draws), 0.17)
        self.assertGreater(counts[0], counts[10] * 5)

    def test_zipfian_grows(self):
        rng = random.Random(2)
        z = ycsb.Zipfian(10)
        draws = [z.next(rng, 1000) for _ in range(5000)]
        self.assertEqual(z.items, 1000)
        self.assertTrue(any(d >= 10 for d in draws))
        self.assertTrue(all(0 <= d < 1000 for d in draws))

    def test_scrambled_zipfian_spreads_hot_keys(self):
        rng = random.Random(3)
        z = ycsb.ScrambledZipfian()
        draws = [z.next(rng, 500) for _ in range(20000)]
        self.assertTrue(all(0 <= d < 500 for d in draws))
        hottest = collections.Counter(draws).most_common(1)[0]
        self.assertGreater(hottest[1], 20000 / 500 * 5)  # skewed, not uniform

    def test_insert_watermark_waits_for_gaps(self):
        seq = ycsb.InsertSequence(100)
        a, b, c = seq.take(), seq.take(), seq.take()
        self.assertEqual((a, b, c), (100, 101, 102))
        seq.ack(b)
        self.assertEqual(seq.acked_limit, 100)  # 100 not acknowledged yet
        seq.ack(a)
        self.assertEqual(seq.acked_limit, 102)
        self.assertEqual(seq.inserted(100), 2)
        seq.ack(c)
        self.assertEqual(seq.acked_limit, 103)


class DriverTest(unittest.TestCase):
    def test_require(self):
        driver.require(True, "fine")
        with self.assertRaises(driver.WorkloadError):
            driver.require(False, "wrong answer")

    def test_run_threads_counts_and_stops_on_error(self):
        ops, seconds, lat = driver.run_threads(2, 0.2, lambda i: (lambda: None))
        self.assertGreater(ops, 0)
        self.assertEqual(ops, len(lat))
        self.assertGreaterEqual(seconds, 0.2)

        def make(i):
            def step():
                if i == 1:
                    raise driver.WorkloadError("bad answer from thread 1")
            return step
        with self.assertRaisesRegex(driver.WorkloadError, "thread 1"):
            driver.run_threads(2, 5.0, make)


if __name__ == "__main__":
    unittest.main(verbosity=2)
