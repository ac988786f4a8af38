// Named kill points for the crash driver (tests/crash/crash_driver.py): with
// SHALE_TEST_KILL_AT=<name>:<n> in the environment, the process SIGKILLs
// itself the n-th time it passes the kill point <name>, so a crash can be
// placed exactly inside a checkpoint or a page flush instead of at a random
// moment. Without the variable a kill point costs one predictable branch.
//
// Points (docs/storage.md "Testing recovery"): checkpoint-dw (half of the
// double-write file written), checkpoint-inplace (half of the pages written
// in place, not yet synced), checkpoint-meta (pages synced, meta page not
// yet written), spill-write (a page evicted to the spill file).
//
// Thread-safety: may be called from any thread.
#pragma once

namespace shale::storage {

void TEST_KillPoint(const char* name);

}  // namespace shale::storage
