// shaled's allocator settings. shaled links jemalloc (src/CMakeLists.txt),
// which reads this string at its first allocation (jemalloc's
// `malloc_conf` symbol; MALLOC_CONF in the environment still overrides it).
//
//  - background_thread: a jemalloc thread returns unused dirty pages to the
//    OS on its own, so memory freed after a statement or a DROP is given back
//    even when the node then sits idle (without it, purging happens only as
//    a side effect of later allocations).
//  - dirty_decay_ms: freed pages are returned within about a second (the
//    default is 10 s), muzzy pages at once.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's interface.
extern const char* malloc_conf;
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}
