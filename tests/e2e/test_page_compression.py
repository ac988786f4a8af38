"""Page compression as a table option: CREATE TABLE ... COMPRESSION='zlib'.

Two nodes load the same compressible rows, one into a table with
COMPRESSION='zlib' and one without; after a clean stop (a checkpoint puts
every page in the data file) the zlib node's data file takes far fewer
file-system blocks, and after a restart every row reads back identically.
SHOW CREATE TABLE shows the option (also after the restart); an unknown
algorithm is ER_ILLEGAL_HA_CREATE_OPTION (1478) and creates nothing;
'none' is the default and is accepted.
"""
import os

from shaled_fixture import NodeTestCase, ShaledProcess, main

ROWS = 3000


def row_text(i):
    return ("customer-%d order status shipped; " % (i % 89)) * 8


def load(cur, compression):
    cur.execute("CREATE DATABASE pc")
    option = " COMPRESSION='%s'" % compression if compression else ""
    cur.execute("CREATE TABLE pc.t (id INT PRIMARY KEY, note VARCHAR(400), n INT) SLICES=2" + option)
    for start in range(0, ROWS, 500):
        cur.execute("INSERT INTO pc.t VALUES " + ",".join(
            "(%d,'%s',%d)" % (i, row_text(i), i * 7) for i in range(start, start + 500)))


def allocated(node):
    st = os.stat(os.path.join(node.data_dir, "data", "slices", "data.shp"))
    return st.st_blocks * 512


class PageCompressionTest(NodeTestCase):
    def test_zlib_table_uses_fewer_blocks_and_reads_back_after_restart(self):
        plain = ShaledProcess(NodeTestCase.shaled)
        plain.start()
        try:
            conn = self.connect()
            load(conn.cursor(), "zlib")
            cur = conn.cursor()
            cur.execute("SHOW CREATE TABLE pc.t")
            self.assertIn("COMPRESSION='zlib'", cur.fetchone()[1])
            cur.execute("SELECT id, note, n FROM pc.t ORDER BY id")
            before = cur.fetchall()
            conn.close()
            self.assertEqual(ROWS, len(before))

            import pymysql
            pconn = pymysql.connect(host="127.0.0.1", port=plain.port, user="root", password="",
                                    autocommit=True)
            load(pconn.cursor(), None)
            pconn.close()

            self.node.stop()
            plain.stop()
            zlib_bytes, plain_bytes = allocated(self.node), allocated(plain)
            print("data file blocks: zlib %d bytes, none %d bytes" % (zlib_bytes, plain_bytes))
            self.assertLess(zlib_bytes * 2, plain_bytes)

            self.node.start()
            conn = self.connect()
            cur = conn.cursor()
            cur.execute("SELECT id, note, n FROM pc.t ORDER BY id")
            self.assertEqual(before, cur.fetchall())
            cur.execute("SHOW CREATE TABLE pc.t")
            self.assertIn("COMPRESSION='zlib'", cur.fetchone()[1])
            # Still written compressed after the restart.
            cur.execute("UPDATE pc.t SET n = n + 1 WHERE id < 100")
            cur.execute("SELECT SUM(n) FROM pc.t")
            total = cur.fetchone()[0]
            conn.close()
            self.node.stop()
            self.node.start()
            cur = self.connect().cursor()
            cur.execute("SELECT SUM(n) FROM pc.t")
            self.assertEqual(total, cur.fetchone()[0])
        finally:
            plain.cleanup()

    def test_options(self):
        conn, cur = self.fresh_db("pcopt")
        self.assertSqlError(cur, "CREATE TABLE t1 (a INT PRIMARY KEY) COMPRESSION='lz9'", 1478)
        cur.execute("SHOW TABLES")
        self.assertEqual((), cur.fetchall(), "a refused CREATE TABLE creates nothing")
        cur.execute("CREATE TABLE t2 (a INT PRIMARY KEY) COMPRESSION='None'")
        cur.execute("SHOW CREATE TABLE t2")
        self.assertNotIn("COMPRESSION", cur.fetchone()[1])
        cur.execute("CREATE TABLE t3 (a INT PRIMARY KEY, b INT, KEY kb (b)) ENGINE=InnoDB COMPRESSION=\"ZLIB\"")
        cur.execute("SHOW CREATE TABLE t3")
        self.assertIn("COMPRESSION='zlib'", cur.fetchone()[1])
        cur.execute("CREATE TABLE t5 (a INT PRIMARY KEY, b VARCHAR(300)) COMPRESSION='zstd'")
        cur.execute("INSERT INTO t5 VALUES " + ",".join("(%d,'%s')" % (i, row_text(i)) for i in range(300)))
        cur.execute("SHOW CREATE TABLE t5")
        self.assertIn("COMPRESSION='zstd'", cur.fetchone()[1])
        cur.execute("SELECT COUNT(*), SUM(LENGTH(b)) FROM t5")
        self.assertEqual((300, sum(len(row_text(i)) for i in range(300))), tuple(int(x) for x in cur.fetchone()))
        cur.execute("CREATE TABLE t4 LIKE t3")
        cur.execute("SHOW CREATE TABLE t4")
        self.assertIn("COMPRESSION='zlib'", cur.fetchone()[1])
        cur.execute("INSERT INTO t4 VALUES (1, 2), (3, 4)")
        cur.execute("SELECT a FROM t4 WHERE b = 4")
        self.assertEqual(((3,),), cur.fetchall())
        conn.close()


if __name__ == "__main__":
    main()
