"""A byte flipped in a data file is detected and reported, never returned.

The node is stopped cleanly (so every row is in the data file), one byte of a
slice's leaf page is flipped on disk, and the node is started again: a
statement reading that slice fails with ER_INDEX_CORRUPT (1712), the log
names the data file, the page and the slice, other slices still answer, and
--verify-pages-at-start refuses to start on the damaged file.
"""
import os
import re
import struct

from shaled_fixture import NodeTestCase, ShaledProcess, main

PAGE = 16 * 1024
LEAF = 3


def leaf_pages(path):
    """Ids of the B+tree leaf pages holding rows (type byte 4, slot count at 6)."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    for pid in range(2, len(data) // PAGE):  # page 1 is the slice catalog
        page = data[pid * PAGE:(pid + 1) * PAGE]
        slots = struct.unpack_from("<H", page, 6)[0]
        if page[4] == LEAF and slots > 0:
            out.append(pid)
    return out


class CorruptionTest(NodeTestCase):
    def test_flipped_byte_is_reported_not_returned(self):
        conn = self.connect()
        cur = conn.cursor()
        cur.execute("CREATE DATABASE c")
        cur.execute("CREATE TABLE c.t (id INT PRIMARY KEY, v VARCHAR(50)) SLICES=4")
        cur.execute("INSERT INTO c.t VALUES " + ",".join("(%d,'row%d')" % (i, i) for i in range(200)))
        conn.close()
        self.node.stop()  # clean stop: a checkpoint puts every row in the data file

        data_file = os.path.join(self.node.data_dir, "data", "slices", "data.shp")
        pages = leaf_pages(data_file)
        self.assertGreaterEqual(len(pages), 2)
        victim = pages[0]
        with open(data_file, "r+b") as f:
            f.seek(victim * PAGE + PAGE - 7)  # inside the cell area: row bytes
            b = f.read(1)
            f.seek(victim * PAGE + PAGE - 7)
            f.write(bytes([b[0] ^ 0x5A]))

        self.node.start()
        conn = self.connect()
        cur = conn.cursor()
        self.assertSqlError(cur, "SELECT id, v FROM c.t", 1712)
        self.assertSqlError(cur, "SELECT COUNT(*) FROM c.t", 1712)
        log = self.node.log()
        m = re.search(r"slice (\d+): data file (\S+): page (\d+) fails its checksum", log)
        self.assertIsNotNone(m, log)
        self.assertEqual(os.path.realpath(m.group(2)), os.path.realpath(data_file))
        self.assertEqual(int(m.group(3)), victim)
        # Point reads on the healthy slices still answer; the damaged one errs.
        ok = errs = 0
        for i in range(0, 200, 7):
            try:
                cur.execute("SELECT v FROM c.t WHERE id = %d" % i)
                self.assertEqual(cur.fetchall(), (("row%d" % i,),))
                ok += 1
            except Exception as e:  # noqa: BLE001
                self.assertEqual(e.args[0], 1712, e)
                errs += 1
        self.assertGreater(ok, 0)
        self.assertGreater(errs, 0)
        conn.close()
        self.node.stop()

        # Start-up verification refuses the damaged data file.
        strict = ShaledProcess(self.node.binary, ["--verify-pages-at-start=ON"])
        strict.data_dir, strict.port, strict.log_path = self.node.data_dir, self.node.port, self.node.log_path
        with self.assertRaises(RuntimeError) as ctx:
            strict.start()
        self.assertIn("fails its checksum", str(ctx.exception))


if __name__ == "__main__":
    main()
