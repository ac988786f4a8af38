// Named kill points for the crash driver (tests/crash/crash_driver.py): with
// SHALE_TEST_KILL_AT=<name>:<n> in the environment, the process SIGKILLs
// itself the n-th time it passes the kill point <name>, so a crash can be
// placed exactly inside a checkpoint, a page flush or a WAL write instead of
// at a random moment. Without the variable a kill point costs one
// predictable branch.
//
// Points (docs/storage.md "Testing recovery"): checkpoint-dw (half of the
// double-write file written), checkpoint-inplace (half of the pages written
// in place, not yet synced), checkpoint-meta (pages synced, meta page not
// yet written), checkpoint-done (meta page synced, double-write file not yet
// retired, no checkpoint record, no segment recycled), checkpoint-cow and
// checkpoint-capture (buffer_pool.cc), spill-write (a page evicted to the
// spill file), wal-write (half of a WAL write reached the segment: the torn
// write a SIGKILL in the middle of write(2) leaves), wal-roll (a new segment
// created, nothing in it yet), data-file-create (half of a new data file's
// meta page written).
//
// Thread-safety: may be called from any thread.
#pragma once

#include <string>

namespace shale::storage {

void TEST_KillPoint(const char* name);
// Counts a pass of `name` like TEST_KillPoint but, on the armed pass,
// returns true instead of killing: the caller does the part of its work a
// kill would interrupt, then calls TEST_KillNow().
bool TEST_KillPointDue(const char* name);
[[noreturn]] void TEST_KillNow();
// Arms `name` for the n-th pass from now, as SHALE_TEST_KILL_AT would (unit
// tests, in a child process they fork).
void TEST_ArmKillPoint(const std::string& name, long n);

}  // namespace shale::storage
