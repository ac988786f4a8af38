"""What every workload provides to bench/run.

A workload runs against one system at a time, in this order:
  prepare(system)     -> [Measurement]   create the schema, load, check the load
  run(system, rep)    -> [Measurement]   one measured repetition (called `reps` times,
                                         alternating systems between repetitions)
  verify(system)                         check the end state against the model
  cleanup(system)                        drop what prepare created
Any failure raises (WorkloadError for a wrong answer); bench/run records it
for that workload and system and goes on with the next.

Scale: `Scale` gives the sizes; --smoke uses tiny ones.
"""


class Scale:
    def __init__(self, smoke, duration, threads):
        self.smoke = smoke
        self.duration = duration
        self.threads = threads

    def pick(self, full, smoke):
        return smoke if self.smoke else full


class Workload:
    name = "?"
    description = ""

    def __init__(self, scale):
        self.scale = scale

    def database(self):
        return "bench_" + self.name

    def create_database(self, system):
        with system.connect() as c, c.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS %s" % self.database())
            cur.execute("CREATE DATABASE %s" % self.database())
        self.schema_ready(system, [])

    def schema_ready(self, system, tables):
        """Called after the workload's DDL, before other connections use it:
        a cluster waits until every node sees the database and `tables`
        (ShaleCluster.wait_for_schema: Shale's DDL returns once applied on
        the node that ran it, before the other nodes have applied it)."""
        wait = getattr(system, "wait_for_schema", None)
        if wait is not None:
            wait(self.database(), tables)

    def prepare(self, system):
        return []

    def run(self, system, rep):
        raise NotImplementedError

    def verify(self, system):
        pass

    def cleanup(self, system):
        with system.connect() as c, c.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS %s" % self.database())
