// prepared_client: checks shaled's binary protocol (server-side prepared
// statements) with github.com/go-sql-driver/mysql and interpolateParams=false,
// so every query with arguments is a COM_STMT_PREPARE + COM_STMT_EXECUTE.
// Run by tests/e2e/test_protocol.py: prepared_client -port N [-tls]. Prints one
// line per failed check and exits 1 if any failed, else prints "ok".
package main

import (
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/go-sql-driver/mysql"
)

var failures int

func fail(format string, args ...any) {
	failures++
	fmt.Printf("FAIL: "+format+"\n", args...)
}

func must(err error, what string) {
	if err != nil {
		fmt.Printf("FATAL: %s: %v\n", what, err)
		os.Exit(1)
	}
}

func errCode(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// countRows runs a prepared query and counts its rows (Shale has no COUNT
// yet).
func countRows(db *sql.DB, query string, args ...any) (int, error) {
	rs, err := db.Query(query, args...)
	if err != nil {
		return 0, err
	}
	defer rs.Close()
	n := 0
	for rs.Next() {
		n++
	}
	return n, rs.Err()
}

func main() {
	port := flag.Int("port", 3306, "shaled MySQL port")
	useTLS := flag.Bool("tls", false, "connect over TLS (certificate not verified)")
	flag.Parse()
	dsn := fmt.Sprintf("root@tcp(127.0.0.1:%d)/?interpolateParams=false&timeout=10s", *port)
	if *useTLS {
		dsn += "&tls=skip-verify"
	}
	db, err := sql.Open("mysql", dsn)
	must(err, "open")
	defer db.Close()
	db.SetMaxOpenConns(1)

	_, err = db.Exec("DROP DATABASE IF EXISTS gop")
	must(err, "drop database")
	_, err = db.Exec("CREATE DATABASE gop")
	must(err, "create database")
	_, err = db.Exec("CREATE TABLE gop.t (id BIGINT PRIMARY KEY, n INT, s VARCHAR(64))")
	must(err, "create table")

	// Parameters of every Go kind the driver binds.
	ins, err := db.Prepare("INSERT INTO gop.t (id, n, s) VALUES (?, ?, ?)")
	must(err, "prepare insert")
	rows := []struct {
		id any
		n  any
		s  any
	}{
		{int64(1), int32(-7), "plain"},
		{uint64(2), int8(8), "it's \\ \"quoted\""},
		{int16(3), nil, nil},
		{int(4), uint32(4000000000 % 2147483647), []byte("bytes")},
		{float64(5), true, "ünïcödé"},
		{int64(9223372036854775807), int64(-2147483648), "max"},
	}
	for _, r := range rows {
		res, err := ins.Exec(r.id, r.n, r.s)
		if err != nil {
			fail("insert %v: %v", r, err)
			continue
		}
		if n, _ := res.RowsAffected(); n != 1 {
			fail("insert %v: %d rows affected", r, n)
		}
	}
	must(ins.Close(), "close insert")

	// Read back through a prepared SELECT (binary result rows).
	var n sql.NullInt64
	var s sql.NullString
	check := func(id any, wantN sql.NullInt64, wantS sql.NullString) {
		err := db.QueryRow("SELECT n, s FROM gop.t WHERE id = ?", id).Scan(&n, &s)
		if err != nil {
			fail("select id %v: %v", id, err)
			return
		}
		if n != wantN || s != wantS {
			fail("select id %v: got (%v, %v), want (%v, %v)", id, n, s, wantN, wantS)
		}
	}
	check(1, sql.NullInt64{Int64: -7, Valid: true}, sql.NullString{String: "plain", Valid: true})
	check(2, sql.NullInt64{Int64: 8, Valid: true},
		sql.NullString{String: "it's \\ \"quoted\"", Valid: true})
	check(3, sql.NullInt64{}, sql.NullString{})
	check("4", sql.NullInt64{Int64: 4000000000 % 2147483647, Valid: true},
		sql.NullString{String: "bytes", Valid: true})
	check(5, sql.NullInt64{Int64: 1, Valid: true}, sql.NullString{String: "ünïcödé", Valid: true})
	check(int64(9223372036854775807), sql.NullInt64{Int64: -2147483648, Valid: true},
		sql.NullString{String: "max", Valid: true})

	// A BIGINT column read as int64 through the binary protocol.
	var id int64
	err = db.QueryRow("SELECT id FROM gop.t WHERE s = ?", "max").Scan(&id)
	if err != nil || id != 9223372036854775807 {
		fail("bigint column: %v %v", id, err)
	}

	// Many rows, reused statement, several executions.
	sel, err := db.Prepare("SELECT id FROM gop.t WHERE id >= ? ORDER BY id")
	must(err, "prepare select")
	for i := 0; i < 3; i++ {
		rs, err := sel.Query(2)
		if err != nil {
			fail("query: %v", err)
			break
		}
		count := 0
		for rs.Next() {
			count++
		}
		rs.Close()
		if count != 5 {
			fail("reused statement: %d rows, want 5", count)
		}
	}
	must(sel.Close(), "close select")

	// A time.Time parameter arrives as date-time text.
	var ts string
	when := time.Date(2024, 1, 31, 10, 20, 30, 0, time.UTC)
	err = db.QueryRow("SELECT ?", when).Scan(&ts)
	if err != nil || ts != "2024-01-31 10:20:30" {
		fail("time parameter: %q %v", ts, err)
	}

	// An injection attempt stays a value.
	cnt, err := countRows(db, "SELECT id FROM gop.t WHERE s = ?", "x' OR '1'='1")
	if err != nil || cnt != 0 {
		fail("injection: count %d, %v", cnt, err)
	}

	// Errors keep their MySQL codes.
	_, err = db.Query("SELECT nosuch FROM gop.t WHERE id = ?", 1)
	if errCode(err) != 1054 {
		fail("unknown column: want 1054, got %v", err)
	}
	_, err = db.Exec("INSERT INTO gop.t (id, n, s) VALUES (?, ?, ?)", 1, 1, "dup")
	if errCode(err) != 1062 {
		fail("duplicate key: want 1062, got %v", err)
	}
	_, err = db.Prepare("SELECT ?; SELECT ?")
	if errCode(err) != 1064 {
		fail("two statements: want 1064, got %v", err)
	}

	// User variables and LAST_INSERT_ID(expr) through prepared statements:
	// the OK packet of the SET carries the insert id.
	res, err := db.Exec("SET @g = LAST_INSERT_ID(?)", 33)
	if err != nil {
		fail("set user variable: %v", err)
	} else if id, _ := res.LastInsertId(); id != 33 {
		fail("LAST_INSERT_ID(33): insert id %d", id)
	}
	var g, lid int64
	err = db.QueryRow("SELECT @g + ?, LAST_INSERT_ID()", 1).Scan(&g, &lid)
	if err != nil || g != 34 || lid != 33 {
		fail("user variable: %d %d %v", g, lid, err)
	}
	// Column types as the prepared statement's result describes them.
	ct, err := db.Query("SELECT id, n, s FROM gop.t WHERE id = ?", 1)
	if err != nil {
		fail("column types query: %v", err)
	} else {
		types, _ := ct.ColumnTypes()
		var names []string
		for _, t := range types {
			names = append(names, t.DatabaseTypeName())
		}
		if fmt.Sprint(names) != "[BIGINT INT VARCHAR]" {
			fail("column types: %v", names)
		}
		ct.Close()
	}

	// The connection still works after the errors.
	cnt, err = countRows(db, "SELECT id FROM gop.t WHERE id > ?", 0)
	if err != nil || cnt != 6 {
		fail("after errors: count %d, %v", cnt, err)
	}

	everyColumnType(db)

	if failures > 0 {
		os.Exit(1)
	}
	fmt.Println("ok")
}

// everyColumnType writes a row of every Shale column type through a
// prepared INSERT (binary parameters) and reads it back through a prepared
// SELECT (binary rows), as text, so each value is checked exactly as the
// server encodes it.
func everyColumnType(db *sql.DB) {
	_, err := db.Exec("CREATE TABLE gop.types (id INT PRIMARY KEY, ti TINYINT, tu TINYINT UNSIGNED, " +
		"si SMALLINT, mi MEDIUMINT, bu BIGINT UNSIGNED, f FLOAT, d DOUBLE, de DECIMAL(12,3), " +
		"c CHAR(5), vc VARCHAR(20), vb VARBINARY(10), tx TEXT, bl BLOB, e ENUM('a','b'), j JSON, " +
		"dt DATE, dtt DATETIME(3), ts TIMESTAMP, tm TIME, y YEAR)")
	must(err, "create types table")
	ins, err := db.Prepare("INSERT INTO gop.types VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)")
	must(err, "prepare types insert")
	values := []any{1, int8(-128), uint8(255), int16(-32768), int32(-8388608), uint64(9223372036854775807),
		float32(1.5), float64(-2.25), "123456789.125", "abc", "ünï", []byte{0, 1, 255}, "long text",
		[]byte("blob\x00data"), "b", `{"k": [1, 2]}`, "2024-02-29", "2024-01-31 10:20:30.123",
		time.Date(2024, 1, 31, 10, 20, 30, 0, time.UTC), "-12:34:56", int16(2024)}
	if _, err := ins.Exec(values...); err != nil {
		fail("insert every type: %v", err)
		return
	}
	// NULL in every column.
	nulls := make([]any, len(values))
	nulls[0] = 2
	if _, err := ins.Exec(nulls...); err != nil {
		fail("insert NULLs: %v", err)
		return
	}
	ins.Close()
	want := []string{"1", "-128", "255", "-32768", "-8388608", "9223372036854775807", "1.5", "-2.25",
		"123456789.125", "abc", "ünï", "\x00\x01\xff", "long text", "blob\x00data", "b", `{"k": [1, 2]}`,
		"2024-02-29", "2024-01-31 10:20:30.123", "2024-01-31 10:20:30", "-12:34:56", "2024"}
	for id := 1; id <= 2; id++ {
		rows, err := db.Query("SELECT * FROM gop.types WHERE id = ?", id)
		if err != nil {
			fail("select every type: %v", err)
			return
		}
		cols, _ := rows.Columns()
		got := make([]sql.RawBytes, len(cols))
		ptrs := make([]any, len(cols))
		for i := range got {
			ptrs[i] = &got[i]
		}
		if !rows.Next() {
			fail("select every type: no row %d", id)
			rows.Close()
			return
		}
		if err := rows.Scan(ptrs...); err != nil {
			fail("scan every type: %v", err)
		}
		for i, c := range cols {
			if id == 1 && string(got[i]) != want[i] {
				fail("column %s: got %q, want %q", c, string(got[i]), want[i])
			}
			if id == 2 && i > 0 && got[i] != nil {
				fail("column %s: got %q, want NULL", c, string(got[i]))
			}
		}
		rows.Close()
	}
}
