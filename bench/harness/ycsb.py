"""YCSB core workloads A-F, in the repo: the same operations, key choice and
record shape as YCSB's CoreWorkload with its JDBC/MySQL binding.

Table usertable(YCSB_KEY VARCHAR(64) PRIMARY KEY, FIELD0..FIELD9 VARCHAR(100)):
10 fields of 100 bytes, a 1 KB record. Keys are "user" + FNV-1a-64 hash of
the insert sequence number (YCSB's insertorder=hashed).

  A  update heavy   50% read, 50% update                zipfian
  B  read mostly    95% read,  5% update                zipfian
  C  read only     100% read                            zipfian
  D  read latest    95% read,  5% insert                latest
  E  short ranges   95% scan (1-100 rows), 5% insert    zipfian
  F  read-modify-write 50% read, 50% read-modify-write  zipfian

zipfian is YCSB's scrambled zipfian (theta 0.99 over 10^10 items, hashed
onto the records); latest is YCSB's skewed-latest (zipfian counted back from
the newest acknowledged insert).

Answers checked: every read finds its one record with 10 fields of 100
bytes; every scan returns at most its length, in key order, from its start
key on; an update or read-modify-write changes exactly one row; after the
load and at the end the row count is the loaded records plus the inserts.
"""
import random
import string
import threading
import time

from . import driver
from .driver import Measurement, require
from .workload import Workload

FIELDS = 10
FIELD_LENGTH = 100
THETA = 0.99
FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
MASK64 = (1 << 64) - 1

# name -> (read, update, insert, scan, read-modify-write, distribution)
MIXES = {
    "a": (0.50, 0.50, 0.00, 0.00, 0.00, "zipfian"),
    "b": (0.95, 0.05, 0.00, 0.00, 0.00, "zipfian"),
    "c": (1.00, 0.00, 0.00, 0.00, 0.00, "zipfian"),
    "d": (0.95, 0.00, 0.05, 0.00, 0.00, "latest"),
    "e": (0.00, 0.00, 0.05, 0.95, 0.00, "zipfian"),
    "f": (0.50, 0.00, 0.00, 0.00, 0.50, "zipfian"),
}
MAX_SCAN_LENGTH = 100


def fnv_hash64(value):
    h = FNV_OFFSET
    for _ in range(8):
        h ^= value & 0xFF
        h = (h * FNV_PRIME) & MASK64
        value >>= 8
    # YCSB returns Math.abs() of the signed 64-bit result.
    return (1 << 64) - h if h >= (1 << 63) else h


def key_of(n):
    return "user%d" % fnv_hash64(n)


def zeta(start, end, theta, initial=0.0):
    s = initial
    for i in range(start, end):
        s += 1.0 / ((i + 1) ** theta)
    return s


class Zipfian:
    """YCSB's ZipfianGenerator (Gray et al., "Quickly generating
    billion-record synthetic databases"): values 0..n-1, 0 the most popular.
    The item count may grow (zeta is extended incrementally)."""

    def __init__(self, items, zetan=None):
        self.items = items
        self.alpha = 1.0 / (1.0 - THETA)
        self.zeta2 = zeta(0, 2, THETA)
        self.zetan = zetan if zetan is not None else zeta(0, items, THETA)
        self.lock = threading.Lock()
        self._eta()

    def _eta(self):
        self.eta = (1 - (2.0 / self.items) ** (1 - THETA)) / (1 - self.zeta2 / self.zetan)

    def next(self, rng, items=None):
        if items is not None and items > self.items:
            with self.lock:
                if items > self.items:
                    self.zetan = zeta(self.items, items, THETA, self.zetan)
                    self.items = items
                    self._eta()
        n, zetan, eta = self.items, self.zetan, self.eta
        u = rng.random()
        uz = u * zetan
        if uz < 1.0:
            return 0
        if uz < 1.0 + 0.5 ** THETA:
            return 1
        return min(n - 1, int(n * ((eta * u - eta + 1) ** self.alpha)))


class ScrambledZipfian:
    """YCSB's ScrambledZipfianGenerator: zipfian over 10^10 items (zeta
    precomputed as YCSB does), hashed onto 0..count-1 so the popular items
    are spread over the key space."""
    ITEM_COUNT = 10_000_000_000
    ZETAN = 26.46902820178302

    def __init__(self):
        self.zipf = Zipfian(self.ITEM_COUNT, self.ZETAN)

    def next(self, rng, count):
        return fnv_hash64(self.zipf.next(rng)) % count


class InsertSequence:
    """Insert numbers handed to threads, and the highest number below which
    every insert has been acknowledged (reads only go there, as YCSB's
    AcknowledgedCounterGenerator)."""

    def __init__(self, start):
        self.lock = threading.Lock()
        self.next_number = start
        self.acked_limit = start  # every n < acked_limit exists
        self.done = set()

    def take(self):
        with self.lock:
            n = self.next_number
            self.next_number += 1
            return n

    def ack(self, n):
        with self.lock:
            self.done.add(n)
            while self.acked_limit in self.done:
                self.done.remove(self.acked_limit)
                self.acked_limit += 1

    def inserted(self, start):
        with self.lock:
            return self.acked_limit - start + len(self.done)


def random_value(rng):
    return "".join(rng.choices(string.ascii_letters + string.digits, k=FIELD_LENGTH))


class Ycsb(Workload):
    def __init__(self, scale, letter):
        super().__init__(scale)
        self.letter = letter
        self.name = "ycsb_" + letter
        self.mix = MIXES[letter]
        self.description = "YCSB workload %s" % letter.upper()
        self.records = scale.pick(20000, 500)
        self.state = {}  # system name -> InsertSequence

    def prepare(self, system):
        self.create_database(system)
        db = self.database()
        cols = ", ".join("FIELD%d VARCHAR(%d) NOT NULL" % (i, FIELD_LENGTH) for i in range(FIELDS))
        with system.connect(db) as c, c.cursor() as cur:
            cur.execute("CREATE TABLE usertable (YCSB_KEY VARCHAR(64) NOT NULL PRIMARY KEY, %s)" % cols)
        self.schema_ready(system, ["usertable"])
        loaders = self.scale.threads
        batch = 50
        placeholders = "(" + ", ".join(["%s"] * (FIELDS + 1)) + ")"

        def load(i):
            rng = random.Random(1000 + i)
            with system.connect(db) as c, c.cursor() as cur:
                numbers = list(range(i, self.records, loaders))
                for b in range(0, len(numbers), batch):
                    rows = []
                    for n in numbers[b:b + batch]:
                        rows.append(key_of(n))
                        rows.extend(random_value(rng) for _ in range(FIELDS))
                    count = len(rows) // (FIELDS + 1)
                    cur.execute("INSERT INTO usertable VALUES " + ", ".join([placeholders] * count), rows)

        t0 = time.perf_counter()
        driver.parallel(loaders, load)
        seconds = time.perf_counter() - t0
        self.check_count(system, self.records, "after the load")
        self.state[system.name] = InsertSequence(self.records)
        return [Measurement("load", "rows/s", self.records, seconds, [])]

    def check_count(self, system, expected, when):
        with system.connect(self.database()) as c, c.cursor() as cur:
            cur.execute("SELECT COUNT(*) FROM usertable")
            got = cur.fetchone()[0]
        require(got == expected, "usertable has %s rows %s, expected %d" % (got, when, expected))

    def run(self, system, rep):
        read_p, update_p, insert_p, scan_p, rmw_p, dist = self.mix
        seq = self.state[system.name]
        scrambled = ScrambledZipfian()
        latest = Zipfian(self.records)
        db = self.database()
        select = "SELECT * FROM usertable WHERE YCSB_KEY = %s"
        scan_sql = "SELECT * FROM usertable WHERE YCSB_KEY >= %s ORDER BY YCSB_KEY LIMIT %s"
        placeholders = ", ".join(["%s"] * (FIELDS + 1))

        def make_step(i):
            rng = random.Random(rep * 1000 + i)
            conn = system.connect(db)
            cur = conn.cursor()

            def choose():
                limit = seq.acked_limit
                if dist == "latest":
                    return limit - 1 - latest.next(rng, limit)
                return scrambled.next(rng, limit)

            def read(key):
                cur.execute(select, (key,))
                rows = cur.fetchall()
                require(len(rows) == 1, "read of %s returned %d rows" % (key, len(rows)))
                row = rows[0]
                require(row[0] == key and len(row) == FIELDS + 1
                        and all(len(v) == FIELD_LENGTH for v in row[1:]),
                        "read of %s returned a wrong record %r" % (key, row[:2]))

            def update(key):
                field = rng.randrange(FIELDS)
                n = cur.execute("UPDATE usertable SET FIELD%d = %%s WHERE YCSB_KEY = %%s" % field,
                                (random_value(rng), key))
                require(n == 1, "update of %s changed %d rows" % (key, n))

            def step():
                r = rng.random()
                if r < read_p:
                    read(key_of(choose()))
                elif r < read_p + update_p:
                    update(key_of(choose()))
                elif r < read_p + update_p + insert_p:
                    n = seq.take()
                    values = [key_of(n)] + [random_value(rng) for _ in range(FIELDS)]
                    cur.execute("INSERT INTO usertable VALUES (%s)" % placeholders, values)
                    seq.ack(n)
                elif r < read_p + update_p + insert_p + scan_p:
                    start = key_of(choose())
                    length = rng.randint(1, MAX_SCAN_LENGTH)
                    cur.execute(scan_sql, (start, length))
                    rows = cur.fetchall()
                    keys = [row[0] for row in rows]
                    require(1 <= len(rows) <= length,
                            "scan from %s returned %d rows" % (start, len(rows)))
                    require(not keys or keys[0] == start,
                            "scan from %s began at %s" % (start, keys[0] if keys else None))
                    require(keys == sorted(keys), "scan from %s is not in key order" % start)
                else:
                    key = key_of(choose())
                    read(key)
                    update(key)

            return step, conn.close

        ops, seconds, lat = driver.run_threads(self.scale.threads, self.scale.duration, make_step)
        return [Measurement("run", "ops/s", ops, seconds, lat)]

    def verify(self, system):
        seq = self.state[system.name]
        self.check_count(system, self.records + seq.inserted(self.records), "at the end")


def workloads(scale):
    return [Ycsb(scale, letter) for letter in "abcdef"]
