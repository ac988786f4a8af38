#!/usr/bin/python3
"""End-to-end tests of introspection over the real shaled: information_schema
(privilege filtering, PROCESSLIST, the Shale-specific columns), SHOW TABLE
STATUS / CREATE DATABASE / ENGINES, and SQLAlchemy's MySQL dialect (Debian's
python3-sqlalchemy over PyMySQL) reflecting tables with indexes and doing ORM
round trips. Run as:
    python3 tests/e2e/test_information_schema.py --shaled build/src/shaled
"""
import os
import sys

import pymysql

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from shaled_fixture import NodeTestCase, main  # noqa: E402


def rows(conn, sql, args=None):
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return cur.fetchall()


class InformationSchemaTest(NodeTestCase):
    def test_tables_columns_and_row_counts(self):
        conn, cur = self.fresh_db("is_basic")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(10) NOT NULL DEFAULT 'x', d DOUBLE) SLICES=3")
        cur.execute("INSERT INTO t (id) VALUES (1), (2), (3), (4), (5)")
        self.assertEqual(
            rows(conn, "SELECT table_type, engine, table_rows, create_options FROM information_schema.tables "
                       "WHERE table_schema = 'is_basic' AND table_name = 't'"),
            (("BASE TABLE", "Shale", 5, "SLICES=3"),))
        self.assertEqual(
            rows(conn, "SELECT column_name, column_default, character_set_name, collation_name, "
                       "character_octet_length FROM information_schema.columns "
                       "WHERE table_schema = 'is_basic' AND table_name = 't' ORDER BY ordinal_position"),
            (("id", None, None, None, None), ("v", "x", "utf8mb4", "utf8mb4_general_ci", 40),
             ("d", None, None, None, None)))
        # information_schema lists itself.
        self.assertIn(("COLUMNS", "SYSTEM VIEW"),
                      rows(conn, "SELECT table_name, table_type FROM information_schema.tables "
                                 "WHERE table_schema = 'information_schema'"))
        self.assertEqual(rows(conn, "SELECT schema_name FROM information_schema.schemata "
                                    "WHERE schema_name IN ('information_schema', 'is_basic') ORDER BY 1"),
                         (("information_schema",), ("is_basic",)))
        # USE information_schema resolves unqualified names there.
        cur.execute("USE information_schema")
        self.assertEqual(rows(conn, "SELECT COUNT(*) FROM TABLES WHERE TABLE_SCHEMA = 'is_basic'"), ((1,),))
        self.assertIn(("information_schema",), rows(conn, "SHOW DATABASES"))

    def test_show_table_status_create_database_engines(self):
        conn, cur = self.fresh_db("is_show")
        cur.execute("CREATE TABLE a (id INT PRIMARY KEY) SLICES=2")
        cur.execute("CREATE TABLE b (id INT PRIMARY KEY)")
        cur.execute("INSERT INTO a VALUES (1), (2), (3)")
        cur.execute("SHOW TABLE STATUS")
        names = [d[0] for d in cur.description]
        self.assertEqual(names[:5], ["Name", "Engine", "Version", "Row_format", "Rows"])
        self.assertIn("Create_options", names)
        status = {r[0]: dict(zip(names, r)) for r in cur.fetchall()}
        self.assertEqual(sorted(status), ["a", "b"])
        self.assertEqual(status["a"]["Rows"], 3)
        self.assertEqual(status["a"]["Engine"], "Shale")
        self.assertEqual(status["a"]["Create_options"], "SLICES=2")
        self.assertEqual([r[0] for r in rows(conn, "SHOW TABLE STATUS FROM is_show LIKE 'b'")], ["b"])
        self.assertSqlError(cur, "SHOW TABLE STATUS FROM no_such_db", 1049)

        self.assertEqual(rows(conn, "SHOW CREATE DATABASE is_show"),
                         (("is_show", "CREATE DATABASE `is_show` /*!40100 DEFAULT CHARACTER SET utf8mb4 "
                                      "COLLATE utf8mb4_general_ci */"),))
        self.assertIn("IF NOT EXISTS", rows(conn, "SHOW CREATE SCHEMA IF NOT EXISTS is_show")[0][1])
        self.assertSqlError(cur, "SHOW CREATE DATABASE no_such_db", 1049)

        cur.execute("SHOW ENGINES")
        self.assertEqual([d[0] for d in cur.description],
                         ["Engine", "Support", "Comment", "Transactions", "XA", "Savepoints"])
        self.assertEqual([(r[0], r[1], r[3], r[4], r[5]) for r in cur.fetchall()],
                         [("Shale", "DEFAULT", "YES", "NO", "YES")])  # transactions, no XA, savepoints
        self.assertEqual(rows(conn, "SELECT engine FROM information_schema.engines WHERE support = 'DEFAULT'"),
                         (("Shale",),))

    def test_processlist(self):
        conn, cur = self.fresh_db("is_proc")
        other = self.connect(db="is_proc")
        my_id = rows(conn, "SELECT CONNECTION_ID()")[0][0]
        other_id = rows(other, "SELECT CONNECTION_ID()")[0][0]
        got = rows(conn, "SELECT id, user, db, command, info FROM information_schema.processlist "
                         "WHERE id IN (%d, %d) ORDER BY id" % (my_id, other_id))
        self.assertEqual(len(got), 2)
        mine = [r for r in got if r[0] == my_id][0]
        self.assertEqual(mine[1:4], ("root", "is_proc", "Query"))
        self.assertIn("information_schema.processlist", mine[4])
        theirs = [r for r in got if r[0] == other_id][0]
        self.assertEqual(theirs[3], "Sleep")
        # Same threads as SHOW PROCESSLIST.
        shown = sorted(r[0] for r in rows(conn, "SHOW PROCESSLIST"))
        listed = sorted(r[0] for r in rows(conn, "SELECT id FROM information_schema.processlist"))
        self.assertEqual(shown, listed)
        other.close()

    def test_privileges_filter_rows(self):
        conn, cur = self.fresh_db("is_priv")
        cur.execute("CREATE TABLE open_t (id INT PRIMARY KEY, k INT, KEY k (k))")
        cur.execute("CREATE TABLE secret_t (id INT PRIMARY KEY, s VARCHAR(5))")
        cur.execute("DROP DATABASE IF EXISTS is_priv_hidden")
        cur.execute("CREATE DATABASE is_priv_hidden")
        cur.execute("CREATE TABLE is_priv_hidden.h (id INT PRIMARY KEY)")
        cur.execute("DROP USER IF EXISTS carol")
        cur.execute("CREATE USER carol IDENTIFIED BY 'c'")
        cur.execute("GRANT SELECT ON is_priv.open_t TO carol")
        carol = pymysql.connect(host="127.0.0.1", port=self.node.port, user="carol", password="c",
                                autocommit=True)
        self.assertEqual(rows(carol, "SELECT table_schema, table_name FROM information_schema.tables "
                                     "WHERE table_type = 'BASE TABLE'"), (("is_priv", "open_t"),))
        self.assertEqual(rows(carol, "SELECT DISTINCT table_name FROM information_schema.columns "
                                     "WHERE table_schema LIKE 'is_priv%'"), (("open_t",),))
        self.assertEqual(sorted(rows(carol, "SELECT index_name FROM information_schema.statistics "
                                            "WHERE table_schema LIKE 'is_priv%'")), [("PRIMARY",), ("k",)])
        self.assertEqual(rows(carol, "SELECT schema_name FROM information_schema.schemata ORDER BY 1"),
                         (("information_schema",), ("is_priv",)))
        self.assertEqual([r[0] for r in rows(carol, "SHOW DATABASES")], ["information_schema", "is_priv"])
        with carol.cursor() as c:
            self.assertSqlError(c, "DELETE FROM information_schema.tables", 1044)
            self.assertSqlError(c, "SELECT * FROM is_priv.secret_t", 1142)
        # carol sees only her own threads.
        listed = rows(carol, "SELECT DISTINCT user FROM information_schema.processlist")
        self.assertEqual(listed, (("carol",),))
        carol.close()
        cur.execute("DROP USER carol")
        cur.execute("DROP DATABASE is_priv_hidden")


class SqlAlchemyTest(NodeTestCase):
    """SQLAlchemy 1.4's MySQL dialect: reflection reads SHOW CREATE TABLE,
    SHOW FULL TABLES, information_schema.tables (has_table) and variables."""

    def engine(self, db):
        import sqlalchemy
        return sqlalchemy.create_engine("mysql+pymysql://root@127.0.0.1:%d/%s" % (self.node.port, db))

    def test_reflect_tables_and_indexes(self):
        import sqlalchemy as sa
        conn, cur = self.fresh_db("sa_reflect")
        cur.execute("CREATE TABLE users (id INT NOT NULL, name VARCHAR(40) NOT NULL, email VARCHAR(80), "
                    "score DECIMAL(8,2) DEFAULT 1.50, PRIMARY KEY (id), UNIQUE KEY email_u (email), "
                    "KEY name_score (name, score))")
        cur.execute("CREATE TABLE posts (post_id BIGINT NOT NULL PRIMARY KEY, user_id INT NOT NULL, "
                    "body VARCHAR(200), rating DOUBLE, KEY by_user (user_id))")
        engine = self.engine("sa_reflect")
        insp = sa.inspect(engine)
        self.assertEqual(sorted(insp.get_table_names()), ["posts", "users"])
        self.assertTrue(insp.has_table("users"))
        self.assertFalse(insp.has_table("nope"))
        self.assertIn("sa_reflect", insp.get_schema_names())
        cols = {c["name"]: c for c in insp.get_columns("users")}
        self.assertEqual(list(cols), ["id", "name", "email", "score"])
        self.assertIsInstance(cols["id"]["type"], sa.types.Integer)
        self.assertIsInstance(cols["name"]["type"], sa.types.String)
        self.assertEqual(cols["name"]["type"].length, 40)
        self.assertFalse(cols["name"]["nullable"])
        self.assertTrue(cols["email"]["nullable"])
        self.assertIsInstance(cols["score"]["type"], sa.types.Numeric)
        self.assertEqual((cols["score"]["type"].precision, cols["score"]["type"].scale), (8, 2))
        self.assertEqual(insp.get_pk_constraint("users")["constrained_columns"], ["id"])
        indexes = {i["name"]: i for i in insp.get_indexes("users")}
        self.assertEqual(indexes["name_score"]["column_names"], ["name", "score"])
        self.assertFalse(indexes["name_score"]["unique"])
        self.assertTrue(indexes["email_u"]["unique"])
        self.assertEqual(insp.get_foreign_keys("posts"), [])
        meta = sa.MetaData()
        posts = sa.Table("posts", meta, autoload_with=engine)
        self.assertEqual([c.name for c in posts.columns], ["post_id", "user_id", "body", "rating"])
        self.assertEqual([i.name for i in posts.indexes], ["by_user"])
        engine.dispose()

    def test_orm_round_trips(self):
        import sqlalchemy as sa
        from sqlalchemy import orm
        self.fresh_db("sa_orm")
        engine = self.engine("sa_orm")
        Base = orm.declarative_base()

        class Author(Base):
            __tablename__ = "author"
            id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
            name = sa.Column(sa.String(50), nullable=False, index=True)
            books = orm.relationship("Book", back_populates="author", order_by="Book.id",
                                     primaryjoin="Author.id == foreign(Book.author_id)")

        class Book(Base):
            __tablename__ = "book"
            id = sa.Column(sa.Integer, primary_key=True, autoincrement=False)
            author_id = sa.Column(sa.Integer, nullable=False, index=True)
            title = sa.Column(sa.String(100), nullable=False)
            price = sa.Column(sa.Numeric(8, 2))
            author = orm.relationship("Author", back_populates="books",
                                      primaryjoin="Author.id == foreign(Book.author_id)")

        Base.metadata.create_all(engine)  # has_table, then CREATE TABLE / CREATE INDEX
        Base.metadata.create_all(engine)  # a second time: every table exists, nothing happens
        insp = sa.inspect(engine)
        self.assertEqual(sorted(insp.get_table_names()), ["author", "book"])
        self.assertEqual(sorted(i["name"] for i in insp.get_indexes("book")), ["ix_book_author_id"])

        with orm.Session(engine) as session:
            ann = Author(id=1, name="Ann")
            ann.books = [Book(id=10, title="First", price=12.5), Book(id=11, title="Second")]
            session.add_all([ann, Author(id=2, name="Bob")])
            session.commit()
        with orm.Session(engine) as session:
            ann = session.get(Author, 1)
            self.assertEqual([b.title for b in ann.books], ["First", "Second"])
            self.assertEqual(str(ann.books[0].price), "12.50")
            ann.books[1].title = "Second, revised"
            session.delete(session.get(Author, 2))
            session.commit()
        with orm.Session(engine) as session:
            titles = session.execute(sa.select(Book.title).join(Author, Author.id == Book.author_id)
                                     .where(Author.name == "Ann").order_by(Book.id)).scalars().all()
            self.assertEqual(titles, ["First", "Second, revised"])
            self.assertIsNone(session.get(Author, 2))
            count = session.execute(sa.select(sa.func.count()).select_from(Book)).scalar()
            self.assertEqual(count, 2)
        Base.metadata.drop_all(engine)
        self.assertEqual(sa.inspect(engine).get_table_names(), [])
        engine.dispose()


if __name__ == "__main__":
    main()
