"""files: the file-metadata workload of the Clustrix vs MongoDB comparison.

  files(id BIGINT PRIMARY KEY, path VARCHAR(255) NOT NULL, size BIGINT NOT NULL,
        server_id INT NOT NULL, deleted SMALLINT NOT NULL,
        last_updated DATETIME NOT NULL, created DATETIME NOT NULL,
        user_id BIGINT NOT NULL,
        KEY server_id_deleted (server_id, deleted),
        KEY user_id_updated (user_id, last_updated),
        KEY user_id_path (user_id, path))

path random, 32-128 characters; server_id 0-32; deleted = 1 for 1% of rows;
about 20 files per user.

Phases (each a Measurement):
  load           concurrent loaders (--threads), multi-row INSERTs; rows/s
  read           the two queries, alternating, from --threads readers:
                   SELECT * FROM files WHERE user_id = ? ORDER BY last_updated DESC LIMIT 10
                   SELECT COUNT(1) FROM files WHERE server_id = ? AND deleted = 1
  read+writer    the same readers while one more thread writes (inserts new
                 files of new users, updates last_updated of existing ones);
                 read throughput here against `read` is the cost of the writes
  writer         the writer's own throughput during read+writer

Answers checked against the model kept by the loader: the count query gives
the exact number of deleted files of that server (writes never change it);
a user query returns min(10, that user's files) rows, all of that user,
newest first; after the load and at the end COUNT(*) and SUM(size) match.
"""
import random
import string
import threading
import time
from datetime import datetime, timedelta

from . import driver
from .driver import Measurement, require
from .workload import Workload

SCHEMA = """CREATE TABLE files (
  id BIGINT NOT NULL PRIMARY KEY,
  path VARCHAR(255) NOT NULL,
  size BIGINT NOT NULL,
  server_id INT NOT NULL,
  deleted SMALLINT NOT NULL,
  last_updated DATETIME NOT NULL,
  created DATETIME NOT NULL,
  user_id BIGINT NOT NULL,
  KEY server_id_deleted (server_id, deleted),
  KEY user_id_updated (user_id, last_updated),
  KEY user_id_path (user_id, path))"""
EPOCH = datetime(2024, 1, 1)
SERVERS = 33  # server_id 0..32
PATH_CHARS = string.ascii_lowercase + string.digits + "/_."


class FileRow:
    @staticmethod
    def make(rng, file_id, user_id):
        created = EPOCH + timedelta(seconds=rng.randrange(365 * 86400))
        updated = created + timedelta(seconds=rng.randrange(30 * 86400))
        return (file_id, "/" + "".join(rng.choices(PATH_CHARS, k=rng.randint(31, 127))),
                rng.randrange(1, 1 << 30), rng.randrange(SERVERS),
                1 if rng.random() < 0.01 else 0,
                updated.strftime("%Y-%m-%d %H:%M:%S"), created.strftime("%Y-%m-%d %H:%M:%S"),
                user_id)


class Files(Workload):
    name = "files"
    description = "files (Clustrix vs MongoDB)"

    def __init__(self, scale):
        super().__init__(scale)
        self.rows = scale.pick(50000, 1000)
        self.users = max(1, self.rows // 20)
        self.model = {}

    def prepare(self, system):
        self.create_database(system)
        db = self.database()
        with system.connect(db) as c, c.cursor() as cur:
            cur.execute(SCHEMA)
        self.schema_ready(system, ["files"])
        loaders = self.scale.threads
        parts = [None] * loaders
        batch = 100
        ph = "(" + ", ".join(["%s"] * 8) + ")"

        def load(i):
            rng = random.Random(7 + i)
            rows = [FileRow.make(rng, n, rng.randrange(self.users)) for n in range(i, self.rows, loaders)]
            parts[i] = rows
            with system.connect(db) as c, c.cursor() as cur:
                for b in range(0, len(rows), batch):
                    chunk = rows[b:b + batch]
                    cur.execute("INSERT INTO files VALUES " + ", ".join([ph] * len(chunk)),
                                [v for row in chunk for v in row])

        t0 = time.perf_counter()
        driver.parallel(loaders, load)
        seconds = time.perf_counter() - t0
        deleted = [0] * SERVERS
        per_user = [0] * self.users
        total_size = 0
        for part in parts:
            for row in part:
                deleted[row[3]] += row[4]
                per_user[row[7]] += 1
                total_size += row[2]
        self.model[system.name] = {"deleted": deleted, "per_user": per_user, "count": self.rows,
                                   "size": total_size, "next_id": self.rows,
                                   "next_user": self.users}
        self.check_totals(system, "after the load")
        return [Measurement("load", "rows/s", self.rows, seconds, [])]

    def check_totals(self, system, when):
        m = self.model[system.name]
        with system.connect(self.database()) as c, c.cursor() as cur:
            cur.execute("SELECT COUNT(*), SUM(size) FROM files")
            count, size = cur.fetchone()
        require((count, int(size or 0)) == (m["count"], m["size"]),
                "files has (COUNT, SUM(size)) = (%s, %s) %s, expected (%d, %d)"
                % (count, size, when, m["count"], m["size"]))

    def readers(self, system, rep, stop_event=None):
        m = self.model[system.name]
        db = self.database()

        def make_step(i):
            rng = random.Random(rep * 100 + i)
            conn = system.connect(db)
            cur = conn.cursor()
            turn = [i % 2]

            def step():
                turn[0] ^= 1
                if turn[0]:
                    user = rng.randrange(self.users)
                    cur.execute("SELECT * FROM files WHERE user_id = %s ORDER BY last_updated DESC LIMIT 10",
                                (user,))
                    rows = cur.fetchall()
                    want = min(10, m["per_user"][user])
                    require(len(rows) == want, "user %d: %d rows, expected %d" % (user, len(rows), want))
                    require(all(r[7] == user for r in rows), "user %d: rows of another user" % user)
                    stamps = [r[5] for r in rows]
                    require(stamps == sorted(stamps, reverse=True), "user %d: not newest first" % user)
                else:
                    server = rng.randrange(SERVERS)
                    cur.execute("SELECT COUNT(1) FROM files WHERE server_id = %s AND deleted = 1", (server,))
                    got = cur.fetchone()[0]
                    require(got == m["deleted"][server],
                            "server %d: %s deleted files, expected %d" % (server, got, m["deleted"][server]))

            return step, conn.close

        return driver.run_threads(self.scale.threads, self.scale.duration, make_step, stop_event)

    def run(self, system, rep):
        m = self.model[system.name]
        ops, seconds, lat = self.readers(system, rep)
        result = [Measurement("read", "queries/s", ops, seconds, lat)]

        stop = threading.Event()
        writer = {"ops": 0, "lat": [], "error": None}

        def write():
            rng = random.Random(9000 + rep)
            try:
                with system.connect(self.database()) as c, c.cursor() as cur:
                    while not stop.is_set():
                        t0 = time.perf_counter()
                        if rng.random() < 0.5:
                            row = FileRow.make(rng, m["next_id"], m["next_user"])
                            row = row[:4] + (0,) + row[5:]  # new files are never deleted: counts stay exact
                            cur.execute("INSERT INTO files VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", row)
                            m["next_id"] += 1
                            m["next_user"] += 1
                            m["count"] += 1
                            m["size"] += row[2]
                        else:
                            file_id = rng.randrange(self.rows)
                            stamp = (EPOCH + timedelta(days=400, seconds=writer["ops"])).strftime("%Y-%m-%d %H:%M:%S")
                            n = cur.execute("UPDATE files SET last_updated = %s WHERE id = %s", (stamp, file_id))
                            require(n == 1, "update of file %d changed %d rows" % (file_id, n))
                        writer["lat"].append((time.perf_counter() - t0) * 1000.0)
                        writer["ops"] += 1
            except Exception as e:  # noqa: BLE001 - reported below
                writer["error"] = e
                stop.set()

        t = threading.Thread(target=write, daemon=True)
        t0 = time.perf_counter()
        t.start()
        try:
            ops, seconds, lat = self.readers(system, rep, stop)
        finally:
            stop.set()
            t.join(timeout=300)
        writer_seconds = time.perf_counter() - t0
        if writer["error"] is not None:
            e = writer["error"]
            raise e if isinstance(e, driver.WorkloadError) else driver.WorkloadError(
                "writer: %s: %s" % (type(e).__name__, e))
        result.append(Measurement("read+writer", "queries/s", ops, seconds, lat))
        result.append(Measurement("writer", "writes/s", writer["ops"], writer_seconds, writer["lat"]))
        return result

    def verify(self, system):
        self.check_totals(system, "at the end")


def workloads(scale):
    return [Files(scale)]
