"""End-to-end tests of transactions (docs/transactions.md): several real
pymysql connections against one shaled — visibility of uncommitted and
committed writes, REPEATABLE READ vs READ COMMITTED snapshots, rollback
(also of secondary-index entries), statement rollback, ROLLBACK TO
SAVEPOINT keeping row locks, row locks (lost
updates, lock wait timeout 1205, deadlock 1213, KILL QUERY of a waiter,
locks released by a closed connection), and kill -9 with an open
transaction."""
import random
import threading
import time

import pymysql

from shaled_fixture import NodeTestCase, main


class TransactionTest(NodeTestCase):
    def setUp(self):
        self.conn, self.cur = self.fresh_db("txn")
        self.cur.execute("CREATE TABLE acct (id INT PRIMARY KEY, owner VARCHAR(20), bal INT, "
                         "UNIQUE KEY owner_uq (owner), KEY bal_ix (bal))")
        self.cur.execute("INSERT INTO acct VALUES (1, 'ann', 100), (2, 'bob', 200), (3, 'cat', 300)")
        self.others = []

    def tearDown(self):
        for c in self.others:
            try:
                c.close()
            except Exception:
                pass
        self.conn.close()

    def other(self, **kw):
        c = self.connect("txn", **kw)
        self.others.append(c)
        return c, c.cursor()

    def rows(self, cur, sql):
        cur.execute(sql)
        return [tuple(r) for r in cur.fetchall()]

    def wait_running(self, conn, sql):
        """Waits until connection `conn` is inside statement `sql` (the
        process list shows it), instead of sleeping and hoping the thread
        that sends it got there: on a loaded machine it may not have."""
        deadline = time.time() + 30
        while time.time() < deadline:
            got = self.rows(self.cur, "SELECT INFO FROM information_schema.PROCESSLIST WHERE ID = %d"
                            % conn.thread_id())
            if got == [(sql,)]:
                return
            time.sleep(0.05)
        self.fail("connection %d never ran %r" % (conn.thread_id(), sql))

    def test_uncommitted_writes_are_invisible_until_commit(self):
        a, ac = self.other()
        b, bc = self.other()
        ac.execute("BEGIN")
        ac.execute("INSERT INTO acct VALUES (4, 'dan', 400)")
        ac.execute("UPDATE acct SET bal = 101 WHERE id = 1")
        ac.execute("DELETE FROM acct WHERE id = 2")
        # Its own writes, through point gets, scans and index scans.
        self.assertEqual(self.rows(ac, "SELECT id, bal FROM acct ORDER BY id"), [(1, 101), (3, 300), (4, 400)])
        self.assertEqual(self.rows(ac, "SELECT id FROM acct WHERE owner = 'dan'"), [(4,)])
        self.assertEqual(self.rows(ac, "SELECT id FROM acct WHERE bal = 101"), [(1,)])
        self.assertEqual(self.rows(ac, "SELECT a.id, b.id FROM acct a JOIN acct b ON a.bal = b.bal "
                                       "WHERE a.id = 4"), [(4, 4)])
        # Nobody else sees them.
        self.assertEqual(self.rows(bc, "SELECT id, bal FROM acct ORDER BY id"), [(1, 100), (2, 200), (3, 300)])
        self.assertEqual(self.rows(bc, "SELECT id FROM acct WHERE owner = 'dan'"), [])
        self.assertEqual(self.rows(bc, "SELECT id FROM acct WHERE id = 2"), [(2,)])
        ac.execute("COMMIT")
        self.assertEqual(self.rows(bc, "SELECT id, bal FROM acct ORDER BY id"), [(1, 101), (3, 300), (4, 400)])

    def test_server_status_in_trans(self):
        a, ac = self.other()
        IN_TRANS, AUTOCOMMIT = 0x0001, 0x0002
        ac.execute("SELECT 1")
        self.assertEqual(a.server_status & (IN_TRANS | AUTOCOMMIT), AUTOCOMMIT)
        ac.execute("BEGIN")
        self.assertTrue(a.server_status & IN_TRANS)
        ac.execute("COMMIT")
        self.assertFalse(a.server_status & IN_TRANS)
        ac.execute("SET autocommit = 0")
        self.assertEqual(a.server_status & (IN_TRANS | AUTOCOMMIT), 0)
        ac.execute("DELETE FROM acct WHERE id = -1")  # an OK packet (pymysql reads its status)
        self.assertTrue(a.server_status & IN_TRANS)
        ac.execute("ROLLBACK")
        self.assertFalse(a.server_status & IN_TRANS)

    def test_repeatable_read_keeps_its_snapshot_read_committed_does_not(self):
        rr, rrc = self.other()
        rc, rcc = self.other()
        w, wc = self.other()
        rcc.execute("SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED")
        rrc.execute("BEGIN")
        rcc.execute("BEGIN")
        self.assertEqual(self.rows(rrc, "SELECT bal FROM acct WHERE id = 3"), [(300,)])
        self.assertEqual(self.rows(rcc, "SELECT bal FROM acct WHERE id = 3"), [(300,)])
        wc.execute("UPDATE acct SET bal = 333 WHERE id = 3")
        wc.execute("INSERT INTO acct VALUES (9, 'zed', 9)")
        self.assertEqual(self.rows(rrc, "SELECT bal FROM acct WHERE id = 3"), [(300,)])
        self.assertEqual(self.rows(rrc, "SELECT COUNT(*) FROM acct"), [(3,)])
        self.assertEqual(self.rows(rcc, "SELECT bal FROM acct WHERE id = 3"), [(333,)])
        self.assertEqual(self.rows(rcc, "SELECT COUNT(*) FROM acct"), [(4,)])
        # A locking read sees the newest committed version (InnoDB).
        self.assertEqual(self.rows(rrc, "SELECT bal FROM acct WHERE id = 3 FOR UPDATE"), [(333,)])
        rrc.execute("COMMIT")
        rcc.execute("COMMIT")
        self.assertEqual(self.rows(rrc, "SELECT bal FROM acct WHERE id = 3"), [(333,)])

    def test_consistent_snapshot_is_taken_at_start(self):
        a, ac = self.other()
        ac.execute("START TRANSACTION WITH CONSISTENT SNAPSHOT")
        self.cur.execute("UPDATE acct SET bal = 1 WHERE id = 1")
        self.assertEqual(self.rows(ac, "SELECT bal FROM acct WHERE id = 1"), [(100,)])
        ac.execute("COMMIT")

    def test_rollback_of_inserts_updates_deletes_and_index_entries(self):
        self.cur.execute("BEGIN")
        self.cur.execute("INSERT INTO acct VALUES (5, 'eve', 500)")
        self.cur.execute("UPDATE acct SET owner = 'bobby', bal = 7 WHERE id = 2")
        self.cur.execute("DELETE FROM acct WHERE id = 3")
        self.cur.execute("ROLLBACK")
        self.assertEqual(self.rows(self.cur, "SELECT * FROM acct ORDER BY id"),
                         [(1, "ann", 100), (2, "bob", 200), (3, "cat", 300)])
        self.assertEqual(self.rows(self.cur, "SELECT id FROM acct WHERE owner = 'bob'"), [(2,)])
        self.assertEqual(self.rows(self.cur, "SELECT id FROM acct WHERE owner = 'bobby'"), [])
        self.assertEqual(self.rows(self.cur, "SELECT id FROM acct WHERE bal = 7"), [])
        self.assertEqual(self.rows(self.cur, "SELECT id FROM acct WHERE owner = 'cat'"), [(3,)])
        # The unique values are free / taken exactly as before.
        self.assertSqlError(self.cur, "INSERT INTO acct VALUES (6, 'bob', 1)", 1062)
        self.cur.execute("INSERT INTO acct VALUES (6, 'eve', 1)")

    def test_failing_statement_rolls_back_only_itself(self):
        self.cur.execute("BEGIN")
        self.cur.execute("INSERT INTO acct VALUES (7, 'gus', 700)")
        self.assertSqlError(self.cur, "INSERT INTO acct VALUES (8, 'hal', 800), (1, 'dup', 0)", 1062)
        self.assertSqlError(self.cur, "UPDATE acct SET owner = 'ann' WHERE id = 7", 1062)
        self.assertEqual(self.rows(self.cur, "SELECT id FROM acct WHERE id >= 7"), [(7,)])
        self.cur.execute("COMMIT")
        self.assertEqual(self.rows(self.cur, "SELECT id, owner FROM acct WHERE id >= 7"), [(7, "gus")])

    def test_rollback_to_savepoint_keeps_row_locks(self):
        # InnoDB keeps the locks taken after a savepoint when rolling back to
        # it; the undone write is never seen by anyone.
        a, ac = self.other()
        b, bc = self.other()
        ac.execute("BEGIN")
        ac.execute("SAVEPOINT s")
        ac.execute("UPDATE acct SET bal = 1 WHERE id = 1")
        ac.execute("ROLLBACK TO SAVEPOINT s")
        self.assertEqual(self.rows(ac, "SELECT bal FROM acct WHERE id = 1"), [(100,)])
        bc.execute("SET SESSION innodb_lock_wait_timeout = 1")
        bc.execute("BEGIN")
        self.assertSqlError(bc, "UPDATE acct SET bal = 2 WHERE id = 1", 1205)
        ac.execute("COMMIT")
        bc.execute("UPDATE acct SET bal = bal + 2 WHERE id = 1")
        bc.execute("COMMIT")
        self.assertEqual(self.rows(self.cur, "SELECT bal FROM acct WHERE id = 1"), [(102,)])

    def test_read_only_transaction(self):
        self.cur.execute("START TRANSACTION READ ONLY")
        self.assertSqlError(self.cur, "UPDATE acct SET bal = 0", 1792)
        self.cur.execute("COMMIT")
        self.cur.execute("UPDATE acct SET bal = 0 WHERE id = 1")

    def test_concurrent_increments_lose_nothing(self):
        self.cur.execute("CREATE TABLE counter (id INT PRIMARY KEY, n INT)")
        self.cur.execute("INSERT INTO counter VALUES (1, 0)")
        clients, per_client = 6, 40
        errors = []

        def work(explicit):
            try:
                c = self.connect("txn")
                cur = c.cursor()
                for _ in range(per_client):
                    if explicit:
                        cur.execute("BEGIN")
                        cur.execute("SELECT n FROM counter WHERE id = 1 FOR UPDATE")
                        n = cur.fetchone()[0]
                        cur.execute("UPDATE counter SET n = %d WHERE id = 1" % (n + 1))
                        cur.execute("COMMIT")
                    else:
                        cur.execute("UPDATE counter SET n = n + 1 WHERE id = 1")
                c.close()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.rows(self.cur, "SELECT n FROM counter"), [(clients * per_client,)])

    def test_concurrent_range_updates_lose_nothing(self):
        # Range and full-table UPDATEs read their rows with a locking scan:
        # each row is locked after the scan read it, and re-read unless no
        # commit landed on the node since the scan began. Overlapping
        # ranges from many clients, with a few explicit transactions
        # holding locks across statements, must lose no increment.
        self.cur.execute("CREATE TABLE ranges (id INT PRIMARY KEY, n INT NOT NULL)")
        self.cur.execute("INSERT INTO ranges VALUES " + ",".join("(%d, 0)" % i for i in range(1, 41)))
        clients, per_client = 6, 30
        expected = [0] * 41
        errors = []
        lock = threading.Lock()

        def work(seed):
            rng = random.Random(seed)
            try:
                c = self.connect("txn")
                cur = c.cursor()
                for _ in range(per_client):
                    lo = rng.randint(1, 40)
                    hi = min(40, lo + rng.randint(0, 15))
                    if rng.random() < 0.15:
                        cur.execute("UPDATE ranges SET n = n + 1")
                        span = range(1, 41)
                    elif rng.random() < 0.3:
                        cur.execute("BEGIN")
                        cur.execute("UPDATE ranges SET n = n + 1 WHERE id BETWEEN %d AND %d" % (lo, hi))
                        cur.execute("UPDATE ranges SET n = n + 1 WHERE id BETWEEN %d AND %d" % (lo, hi))
                        cur.execute("COMMIT")
                        span = list(range(lo, hi + 1)) * 2
                    else:
                        cur.execute("UPDATE ranges SET n = n + 1 WHERE id >= %d AND id <= %d" % (lo, hi))
                        span = range(lo, hi + 1)
                    with lock:
                        for i in span:
                            expected[i] += 1
                c.close()
            except Exception as e:  # reported below
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(self.rows(self.cur, "SELECT id, n FROM ranges ORDER BY id"),
                         [(i, expected[i]) for i in range(1, 41)])

    def test_lock_wait_timeout(self):
        a, ac = self.other()
        b, bc = self.other()
        ac.execute("BEGIN")
        ac.execute("UPDATE acct SET bal = bal + 1 WHERE id = 1")
        bc.execute("SET SESSION innodb_lock_wait_timeout = 1")
        self.assertEqual(self.rows(bc, "SELECT @@innodb_lock_wait_timeout"), [(1,)])
        bc.execute("BEGIN")
        bc.execute("UPDATE acct SET bal = 0 WHERE id = 2")
        start = time.time()
        self.assertSqlError(bc, "UPDATE acct SET bal = 0 WHERE id = 1", 1205)
        self.assertGreaterEqual(time.time() - start, 0.9)
        self.assertSqlError(bc, "SELECT * FROM acct WHERE id = 1 LOCK IN SHARE MODE", 1205)
        # Only the statement was rolled back: b's transaction and its lock stay.
        self.assertTrue(b.server_status & 0x0001)
        self.assertEqual(self.rows(bc, "SELECT bal FROM acct WHERE id = 2"), [(0,)])
        # A plain read never waits.
        self.assertEqual(self.rows(bc, "SELECT bal FROM acct WHERE id = 1"), [(100,)])
        ac.execute("COMMIT")
        bc.execute("UPDATE acct SET bal = 5 WHERE id = 1")
        bc.execute("COMMIT")
        self.assertEqual(self.rows(self.cur, "SELECT bal FROM acct WHERE id IN (1, 2) ORDER BY id"), [(5,), (0,)])

    def test_deadlock_fails_exactly_one(self):
        a, ac = self.other()
        b, bc = self.other()
        ac.execute("BEGIN")
        bc.execute("BEGIN")
        ac.execute("UPDATE acct SET bal = 11 WHERE id = 1")
        bc.execute("UPDATE acct SET bal = 22 WHERE id = 2")
        results = {}

        def second_lock(name, cur, sql):
            try:
                cur.execute(sql)
                cur.execute("COMMIT")
                results[name] = "ok"
            except pymysql.MySQLError as e:
                results[name] = e.args[0]

        ta = threading.Thread(target=second_lock, args=("a", ac, "UPDATE acct SET bal = 12 WHERE id = 2"))
        ta.start()
        self.wait_running(a, "UPDATE acct SET bal = 12 WHERE id = 2")  # a waits for b's lock
        tb = threading.Thread(target=second_lock, args=("b", bc, "UPDATE acct SET bal = 21 WHERE id = 1"))
        start = time.time()
        tb.start()
        ta.join(20)
        tb.join(20)
        self.assertLess(time.time() - start, 10)
        self.assertEqual(sorted(results.values(), key=str), sorted([1213, "ok"], key=str), results)
        winner = "a" if results["a"] == "ok" else "b"
        final = self.rows(self.cur, "SELECT bal FROM acct WHERE id IN (1, 2) ORDER BY id")
        # The victim's whole transaction was rolled back.
        self.assertEqual(final, [(11,), (12,)] if winner == "a" else [(21,), (22,)])

    def test_closed_connection_releases_locks(self):
        a, ac = self.other()
        ac.execute("BEGIN")
        ac.execute("SELECT * FROM acct WHERE id = 3 FOR UPDATE")
        ac.execute("UPDATE acct SET bal = 0 WHERE id = 3")
        a.close()
        b, bc = self.other()
        bc.execute("SET SESSION innodb_lock_wait_timeout = 5")
        bc.execute("UPDATE acct SET bal = bal + 1 WHERE id = 3")
        self.assertEqual(self.rows(bc, "SELECT bal FROM acct WHERE id = 3"), [(301,)])

    def test_kill_connection_rolls_back_and_releases_locks(self):
        a, ac = self.other()
        ac.execute("SELECT CONNECTION_ID()")
        victim = ac.fetchone()[0]
        ac.execute("BEGIN")
        ac.execute("UPDATE acct SET bal = 0 WHERE id = 2")
        self.cur.execute("KILL %d" % victim)
        b, bc = self.other()
        bc.execute("SET SESSION innodb_lock_wait_timeout = 5")
        bc.execute("UPDATE acct SET bal = bal + 1 WHERE id = 2")
        self.assertEqual(self.rows(bc, "SELECT bal FROM acct WHERE id = 2"), [(201,)])

    def test_kill_query_stops_a_lock_wait(self):
        a, ac = self.other()
        b, bc = self.other()
        ac.execute("BEGIN")
        ac.execute("UPDATE acct SET bal = 0 WHERE id = 1")
        bc.execute("SELECT CONNECTION_ID()")
        victim = bc.fetchone()[0]
        result = {}

        def wait():
            try:
                bc.execute("UPDATE acct SET bal = 9 WHERE id = 1")
                result["r"] = "ok"
            except pymysql.MySQLError as e:
                result["r"] = e.args[0]

        t = threading.Thread(target=wait)
        t.start()
        # KILL QUERY before the UPDATE arrives would kill nothing and leave
        # it waiting for the 50 s lock wait timeout.
        self.wait_running(b, "UPDATE acct SET bal = 9 WHERE id = 1")
        self.cur.execute("KILL QUERY %d" % victim)
        t.join(30)
        self.assertEqual(result.get("r"), 1317)
        ac.execute("ROLLBACK")

    def test_transaction_variables(self):
        self.assertEqual(self.rows(self.cur, "SELECT @@transaction_isolation, @@tx_isolation"),
                         [("REPEATABLE-READ", "REPEATABLE-READ")])
        self.cur.execute("SET SESSION transaction_isolation = 'READ-COMMITTED'")
        self.assertEqual(self.rows(self.cur, "SELECT @@tx_isolation"), [("READ-COMMITTED",)])
        self.assertSqlError(self.cur, "SET SESSION tx_isolation = 'SOMETIMES'", 1231)
        self.assertSqlError(self.cur, "SET SESSION innodb_lock_wait_timeout = 0", 1231)
        self.cur.execute("BEGIN")
        self.assertSqlError(self.cur, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", 1568)
        self.cur.execute("COMMIT")


    def test_old_versions_are_garbage_collected(self):
        self.cur.execute("CREATE TABLE gc (id INT PRIMARY KEY, v INT)")
        self.cur.execute("INSERT INTO gc VALUES " + ",".join("(%d, 0)" % i for i in range(10)))
        for n in range(1, 21):
            self.cur.execute("UPDATE gc SET v = %d" % n)
        self.cur.execute("DELETE FROM gc WHERE id >= 5")

        def stored():  # EXPLAIN's bound for a full scan: the versions stored
            self.cur.execute("EXPLAIN SELECT * FROM gc WHERE v = 1")
            return [rows for op, rows in self.cur.fetchall() if op.strip().startswith("SliceScan")][0]

        deadline = time.time() + 30  # the collector runs in the background
        while stored() > 5 and time.time() < deadline:
            time.sleep(0.2)
        self.assertEqual(stored(), 5)  # one version per live row; deleted rows gone entirely
        self.assertEqual(self.rows(self.cur, "SELECT COUNT(*), SUM(v) FROM gc"), [(5, 100)])


class CrashTransactionTest(NodeTestCase):
    def test_kill_9_with_an_open_transaction(self):
        conn, cur = self.fresh_db("crash")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT, KEY v_ix (v))")
        cur.execute("INSERT INTO t VALUES (1, 1), (2, 2)")
        cur.execute("BEGIN")
        cur.execute("INSERT INTO t VALUES (3, 3)")
        cur.execute("UPDATE t SET v = 10 WHERE id = 1")
        cur.execute("COMMIT")
        open_conn = self.connect("crash")
        oc = open_conn.cursor()
        oc.execute("BEGIN")
        oc.execute("INSERT INTO t VALUES (4, 4)")
        oc.execute("DELETE FROM t WHERE id = 2")
        oc.execute("UPDATE t SET v = 99 WHERE id = 3")
        self.node.kill()
        self.node.start()
        conn = self.connect("crash")
        cur = conn.cursor()
        cur.execute("SELECT id, v FROM t ORDER BY id")
        self.assertEqual([tuple(r) for r in cur.fetchall()], [(1, 10), (2, 2), (3, 3)])
        cur.execute("SELECT id FROM t WHERE v = 99")
        self.assertEqual(cur.fetchall(), ())
        # Timestamps keep increasing across the restart: new commits are seen.
        cur.execute("UPDATE t SET v = 20 WHERE id = 1")
        cur.execute("SELECT v FROM t WHERE id = 1")
        self.assertEqual(cur.fetchone()[0], 20)


if __name__ == "__main__":
    main()
