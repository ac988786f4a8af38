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

    def prepare(self, system):
        return []

    def run(self, system, rep):
        raise NotImplementedError

    def verify(self, system):
        pass

    def cleanup(self, system):
        with system.connect() as c, c.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS %s" % self.database())
