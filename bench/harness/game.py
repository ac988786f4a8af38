"""game: an online game's back end, after MemSQL's game benchmark.

  players(id BIGINT PRIMARY KEY, games_started INT, games_won INT)
  games(id BIGINT PRIMARY KEY, player1 BIGINT, player2 BIGINT, turn INT,
        length INT, finished SMALLINT, KEY(player1), KEY(player2))
  game_lengths(turns INT PRIMARY KEY, games INT)      histogram of finished games
  events(id BIGINT PRIMARY KEY, description VARCHAR(32), ts DATETIME,
         player_id BIGINT, KEY(player_id), KEY(ts))

Each client thread plays a few games at a time. One action is one
transaction (BEGIN ... COMMIT) that reads and writes several tables:
  start   read both players; insert the game; games_started + 1 for both
          players; log an event
  move    read the game (its turn must be the one the client last wrote) and
          the player's latest events; turn + 1; log an event
  finish  (the last move of a game) as move, plus finished = 1, the
          winner's games_won + 1 and the histogram bucket of its length + 1
A transaction that fails with a deadlock (1213) or lock wait timeout (1205)
is rolled back and retried, and so, on a Shale cluster, is one that fails
with 1047 (08S01: the cluster changed under it -- a replica moved, a node
did not answer, a table is being changed by DDL -- and nothing was
committed) or 1412 (a table's definition changed before COMMIT), as
docs/cluster.md tells clients to; any other error fails the workload.

Answers checked at the end: COUNT(games) and COUNT(events) equal the
committed starts and actions; SUM(games_started) = 2 * COUNT(games);
SUM(games_won) = finished games = SUM(game_lengths.games); every finished
game's bucket holds what the clients finished.
"""
import random
import threading
import time
from datetime import datetime, timedelta

import pymysql

from . import driver
from .driver import Measurement, require
from .workload import Workload

MAX_TURNS = 40
ACTIVE_GAMES = 4
RETRY_CODES = (1205, 1213, 1047, 1412)
EPOCH = datetime(2025, 1, 1)

SCHEMA = [
    """CREATE TABLE players (id BIGINT NOT NULL PRIMARY KEY, games_started INT NOT NULL,
       games_won INT NOT NULL)""",
    """CREATE TABLE games (id BIGINT NOT NULL PRIMARY KEY, player1 BIGINT NOT NULL,
       player2 BIGINT NOT NULL, turn INT NOT NULL, length INT NOT NULL, finished SMALLINT NOT NULL,
       KEY games_player1 (player1), KEY games_player2 (player2))""",
    """CREATE TABLE game_lengths (turns INT NOT NULL PRIMARY KEY, games INT NOT NULL)""",
    """CREATE TABLE events (id BIGINT NOT NULL PRIMARY KEY, description VARCHAR(32) NOT NULL,
       ts DATETIME NOT NULL, player_id BIGINT NOT NULL,
       KEY events_player (player_id), KEY events_ts (ts))""",
]


class Game(Workload):
    name = "game"
    description = "game (MemSQL game benchmark)"

    def __init__(self, scale):
        super().__init__(scale)
        self.players = scale.pick(10000, 100)
        self.model = {}

    def prepare(self, system):
        self.create_database(system)
        with system.connect(self.database()) as c, c.cursor() as cur:
            for stmt in SCHEMA:
                cur.execute(stmt)
            self.schema_ready(system, ["players", "games", "game_lengths", "events"])
            for b in range(0, self.players, 500):
                ids = range(b, min(self.players, b + 500))
                cur.execute("INSERT INTO players VALUES " + ", ".join("(%d, 0, 0)" % i for i in ids))
            cur.execute("INSERT INTO game_lengths VALUES " +
                        ", ".join("(%d, 0)" % t for t in range(1, MAX_TURNS + 1)))
        # Per system: games started, events, finished per length, retries, and
        # the active games of each client thread (id -> [turn, length, p1, p2]).
        self.model[system.name] = {"games": 0, "events": 0, "finished": [0] * (MAX_TURNS + 1),
                                   "retries": 0, "active": {}, "next": {}}
        return []

    def run(self, system, rep):
        m = self.model[system.name]
        db = self.database()
        lock = threading.Lock()

        def make_step(i):
            rng = random.Random(rep * 100 + i)
            conn = system.connect(db, autocommit=False)
            cur = conn.cursor()
            active = m["active"].setdefault(i, {})
            nxt = m["next"].setdefault(i, {"game": 0, "event": 0})

            def event_id():
                nxt["event"] += 1
                return i * 10**12 + nxt["event"]

            def stamp():
                return (EPOCH + timedelta(microseconds=int(time.time() * 1e6) % (10**13))).strftime(
                    "%Y-%m-%d %H:%M:%S")

            def start():
                p1, p2 = sorted(rng.sample(range(self.players), 2))
                game = i * 10**12 + nxt["game"] + 1
                cur.execute("SELECT id, games_started, games_won FROM players WHERE id = %s OR id = %s",
                            (p1, p2))
                require(len(cur.fetchall()) == 2, "players %d and %d: not both found" % (p1, p2))
                length = rng.randint(1, MAX_TURNS)
                cur.execute("INSERT INTO games VALUES (%s, %s, %s, 0, %s, 0)", (game, p1, p2, length))
                for p in (p1, p2):
                    n = cur.execute("UPDATE players SET games_started = games_started + 1 WHERE id = %s", (p,))
                    require(n == 1, "player %d: games_started update changed %d rows" % (p, n))
                cur.execute("INSERT INTO events VALUES (%s, %s, %s, %s)",
                            (event_id(), "start game %d" % (game % 10**12), stamp(), p1))
                conn.commit()
                nxt["game"] += 1
                active[game] = [0, length, p1, p2]
                return "start"

            def move():
                game = rng.choice(list(active))
                turn, length, p1, p2 = active[game]
                player = p1 if turn % 2 == 0 else p2
                cur.execute("SELECT turn, finished FROM games WHERE id = %s", (game,))
                row = cur.fetchone()
                require(row is not None and tuple(row) == (turn, 0),
                        "game %d: read %r, expected turn %d, not finished" % (game, row, turn))
                cur.execute("SELECT description FROM events WHERE player_id = %s ORDER BY ts DESC LIMIT 3",
                            (player,))
                cur.fetchall()
                last = turn + 1 == length
                n = cur.execute("UPDATE games SET turn = turn + 1, finished = %s WHERE id = %s",
                                (1 if last else 0, game))
                require(n == 1, "game %d: update changed %d rows" % (game, n))
                if last:
                    n = cur.execute("UPDATE players SET games_won = games_won + 1 WHERE id = %s", (player,))
                    require(n == 1, "player %d: games_won update changed %d rows" % (player, n))
                    n = cur.execute("UPDATE game_lengths SET games = games + 1 WHERE turns = %s", (length,))
                    require(n == 1, "game_lengths %d: update changed %d rows" % (length, n))
                cur.execute("INSERT INTO events VALUES (%s, %s, %s, %s)",
                            (event_id(), "won game %d" % (game % 10**12) if last else "move %d" % (turn + 1),
                             stamp(), player))
                conn.commit()
                if last:
                    del active[game]
                    with lock:
                        m["finished"][length] += 1
                else:
                    active[game][0] += 1
                return "move"

            def step():
                while True:
                    saved = dict(nxt)
                    try:
                        kind = start() if len(active) < ACTIVE_GAMES else move()
                        with lock:
                            if kind == "start":
                                m["games"] += 1
                            m["events"] += 1
                        return
                    except pymysql.MySQLError as e:
                        conn.rollback()
                        if e.args and e.args[0] in RETRY_CODES:
                            nxt.update(saved)
                            with lock:
                                m["retries"] += 1
                            continue
                        raise

            def close():
                try:
                    conn.rollback()
                finally:
                    conn.close()

            return step, close

        ops, seconds, lat = driver.run_threads(self.scale.threads, self.scale.duration, make_step)
        return [Measurement("run", "actions/s", ops, seconds, lat)]

    def verify(self, system):
        m = self.model[system.name]
        with system.connect(self.database()) as c, c.cursor() as cur:
            def one(sql):
                cur.execute(sql)
                return tuple(int(v or 0) for v in cur.fetchone())
            games, finished = one("SELECT COUNT(*), SUM(finished) FROM games")
            (events,) = one("SELECT COUNT(*) FROM events")
            started, won = one("SELECT SUM(games_started), SUM(games_won) FROM players")
            (histogram,) = one("SELECT SUM(games) FROM game_lengths")
            cur.execute("SELECT turns, games FROM game_lengths ORDER BY turns")
            buckets = [0] * (MAX_TURNS + 1)
            for turns, count in cur.fetchall():
                buckets[int(turns)] = int(count)
        done = sum(m["finished"])
        require(games == m["games"], "games: %d rows, clients started %d" % (games, m["games"]))
        require(events == m["events"], "events: %d rows, clients logged %d" % (events, m["events"]))
        require(started == 2 * games, "SUM(games_started) = %d for %d games" % (started, games))
        require(finished == done and won == done and histogram == done,
                "finished games: games says %d, players %d, histogram %d; clients finished %d"
                % (finished, won, histogram, done))
        require(buckets == m["finished"], "game_lengths histogram differs from the clients' games")


def workloads(scale):
    return [Game(scale)]
