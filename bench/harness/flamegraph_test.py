"""Unit tests of bench/harness/flamegraph.py (bench/profile --flamegraph):
folding perf script text, C++ symbol shortening, the SVG. No perf needed.
Run: /usr/bin/python3 bench/harness/flamegraph_test.py (ctest bench_flamegraph)."""
import io
import os
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from harness import flamegraph  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"

# perf script of `perf record -g`: four samples, leaf first. The first two
# have the same stack; the third is a thread whose name has spaces and ends
# in frames without symbols; the fourth has no tid and one frame.
PERF_SCRIPT = """\
shaled 100/101 [000] 1000.000001:   10101010 cpu-clock:pppH: 
\tffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
\t           f82ad write+0xd (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          4a1b2c shale::txn::Committer::commit(shale::txn::WriteSet const&)+0x1c (/work/build/src/shaled)
\t          4a0000 void boost::asio::detail::scheduler::run<boost::asio::any_io_executor>(boost::system::error_code&)+0x40 (/work/build/src/shaled)
\t          400000 main+0x10 (/work/build/src/shaled)

shaled 100/101 [001] 1000.010001:   10101010 cpu-clock:pppH: 
\tffffffff81000130 entry_SYSCALL_64_after_hwframe+0x76 ([kernel.kallsyms])
\t           f82ad write+0xd (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t          4a1b2c shale::txn::Committer::commit(shale::txn::WriteSet const&)+0x1c (/work/build/src/shaled)
\t          4a0000 void boost::asio::detail::scheduler::run<boost::asio::any_io_executor>(boost::system::error_code&)+0x40 (/work/build/src/shaled)
\t          400000 main+0x10 (/work/build/src/shaled)

shale worker 1 100/102 [001] 1000.020001:   10101010 cpu-clock:pppH: 
\t          4b0000 shale::exec::Executor::run(std::vector<int, std::allocator<int> > const&) const+0x5 (/work/build/src/shaled)
\t           29d90 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t               0 [unknown] ([unknown])

other 200 1000.030001:   10101010 cpu-clock:pppH: 
\t           a1b2c __memcpy_avx_unaligned_erms+0x10 (/usr/lib/x86_64-linux-gnu/libc.so.6)
"""

HOT = ("main", "boost::asio::detail::scheduler::run<>", "shale::txn::Committer::commit", "write",
       "entry_SYSCALL_64_after_hwframe_[k]")
EXEC = ("[unknown]", "[libc.so.6]", "shale::exec::Executor::run")


def frames_of(svg):
    root = ET.fromstring(svg)
    return [(g.find(SVG + "title").text, g.find(SVG + "rect")) for g in root.iter(SVG + "g")
            if g.get("class") == "f"]


class FoldTest(unittest.TestCase):
    def test_folds_root_first_without_addresses(self):
        stacks, modules = flamegraph.fold_perf_script(io.StringIO(PERF_SCRIPT))
        self.assertEqual(dict(stacks), {HOT: 2, EXEC: 1, ("__memcpy_avx_unaligned_erms",): 1})
        self.assertEqual(modules["write"], "libc")
        self.assertEqual(modules["shale::txn::Committer::commit"], "shaled")
        self.assertEqual(modules["entry_SYSCALL_64_after_hwframe_[k]"], "[k]")

    def test_folded_text_round_trip(self):
        stacks, _ = flamegraph.fold_perf_script(PERF_SCRIPT.splitlines())
        out = io.StringIO()
        flamegraph.write_folded(stacks, out)
        self.assertIn(";".join(HOT) + " 2\n", out.getvalue())
        self.assertEqual(flamegraph.read_folded(io.StringIO(out.getvalue())), stacks)

    def test_group_by_thread_and_process(self):
        by_thread, _ = flamegraph.fold_perf_script(PERF_SCRIPT.splitlines(), group="thread")
        self.assertEqual(by_thread[("shaled",) + HOT], 2)
        self.assertEqual(by_thread[("shale worker 1",) + EXEC], 1)
        self.assertEqual(by_thread[("other", "__memcpy_avx_unaligned_erms")], 1)
        by_process, _ = flamegraph.fold_perf_script(PERF_SCRIPT.splitlines(), group="process")
        self.assertEqual(by_process[("shaled 100",) + HOT], 2)
        self.assertEqual(by_process[("shaled 100",) + EXEC], 1)
        self.assertEqual(by_process[("other 200", "__memcpy_avx_unaligned_erms")], 1)

    def test_no_shorten_keeps_symbols(self):
        stacks, _ = flamegraph.fold_perf_script(PERF_SCRIPT.splitlines(), shorten_symbols=False)
        self.assertIn("shale::txn::Committer::commit(shale::txn::WriteSet const&)", next(iter(stacks)))


class ShortenTest(unittest.TestCase):
    def test_cases(self):
        cases = {
            "void boost::asio::detail::scheduler::run<boost::asio::any_io_executor>(boost::system::error_code&)":
                "boost::asio::detail::scheduler::run<>",
            "shale::exec::Executor::run(std::vector<int, std::allocator<int> > const&) const":
                "shale::exec::Executor::run",
            "shale::txn::(anonymous namespace)::Resolver::resolve(unsigned long)::{lambda(int)#1}::operator()(int) const":
                "shale::txn::(anon)::Resolver::resolve::{lambda#1}::operator()",
            "std::_Function_handler<void (int), shale::Foo::bar()::{lambda(int)#1}>::_M_invoke(std::_Any_data const&, int&&)":
                "std::_Function_handler<>::_M_invoke",
            "std::unique_ptr<shale::Plan, std::default_delete<shale::Plan> > shale::sql::make<shale::Plan>(int)":
                "shale::sql::make<>",
            "bool std::operator< <char, std::char_traits<char> >(std::basic_string<char> const&, char const*)":
                "std::operator< <>",
            "std::ostream::operator<<(int)": "std::ostream::operator<<",
            "shale::Foo::operator->() const": "shale::Foo::operator->",
            "shale::Value::operator bool() const": "shale::Value::operator bool",
            "operator delete[](void*)": "operator delete[]",
            "shale::sql::Parser::parse[abi:cxx11](std::string_view) [clone .cold]": "shale::sql::Parser::parse",
            "_PyEval_EvalFrameDefault": "_PyEval_EvalFrameDefault",
            "entry_SYSCALL_64_after_hwframe": "entry_SYSCALL_64_after_hwframe",
        }
        for sym, want in cases.items():
            self.assertEqual(flamegraph.shorten(sym), want, sym)

    def test_end_of_stack_marker_is_not_kernel(self):
        self.assertEqual(flamegraph.parse_frame("\tffffffffffffffff [unknown] ([unknown])"), ("[unknown]", ""))
        self.assertEqual(flamegraph.parse_frame("\tffffffffc0a1b2c3 nft_do_chain+0x9c ([nf_tables])"),
                         ("nft_do_chain_[k]", "[k]"))

    def test_dso_with_parentheses(self):
        self.assertEqual(flamegraph.parse_frame("\t 4a1b2c foo::bar(int)+0x1c (/tmp/shaled (deleted))"),
                         ("foo::bar", "shaled"))


class SvgTest(unittest.TestCase):
    def setUp(self):
        self.stacks, self.modules = flamegraph.fold_perf_script(PERF_SCRIPT.splitlines())

    def test_one_element_per_frame_widths_by_samples(self):
        svg = flamegraph.render_svg(self.stacks, "t <&> t", self.modules, width=1200)
        frames = frames_of(svg)
        # all, the five frames of HOT, the three of EXEC, the memcpy frame.
        self.assertEqual(len(frames), 10)
        titles = dict(frames)
        self.assertEqual(float(titles["all (4 samples, 100.00%)"].get("width")), 1180.0)
        self.assertEqual(float(titles["main (2 samples, 50.00%)"].get("width")), 590.0)
        self.assertIn("shale::exec::Executor::run (1 sample, 25.00%)", titles)
        self.assertEqual(ET.fromstring(svg).find(SVG + "text").text, "t <&> t")

    def test_narrow_frames_left_out(self):
        frames = frames_of(flamegraph.render_svg(self.stacks, modules=self.modules, min_percent=30))
        self.assertEqual(len(frames), 6)  # the 25% stacks are gone
        stacks = {("a",): 9999, ("b",): 1}  # 0.01% < 0.1% by default
        self.assertEqual([t for t, _ in frames_of(flamegraph.render_svg(stacks))],
                         ["all (10,000 samples, 100.00%)", "a (9,999 samples, 99.99%)"])

    def test_escaping_and_colours(self):
        stacks = {("std::operator< <>", "a&b", "x_[k]"): 3}
        frames = frames_of(flamegraph.render_svg(stacks))
        self.assertEqual([t.split(" (")[0] for t, _ in frames], ["all", "std::operator< <>", "a&b", "x_[k]"])
        self.assertEqual(flamegraph.colour("x_[k]"), flamegraph.colour("x_[k]"))
        self.assertEqual(flamegraph.module_key("x_[k]"), "[k]")
        self.assertEqual(flamegraph.module_key("shale::exec::Executor::run"), "shale::exec")
        self.assertEqual(flamegraph.module_key("shale::txn::Committer::commit"), "shale::txn")
        self.assertEqual(flamegraph.module_key("std::map<>::find"), "std")
        self.assertEqual(flamegraph.module_key("write", self.modules), "libc")
        self.assertNotEqual(flamegraph.colour("shale::exec::A::f"), flamegraph.colour("shale::txn::A::f"))

    def test_cli(self):
        with tempfile.TemporaryDirectory() as d:
            script, svg, folded = (os.path.join(d, n) for n in ("perf.txt", "out.svg", "out.folded"))
            with open(script, "w") as f:
                f.write(PERF_SCRIPT)
            self.assertEqual(flamegraph.main(["--perf-script", script, "--out", svg, "--title", "T",
                                              "--folded-out", folded]), 0)
            with open(svg) as f:
                self.assertEqual(len(frames_of(f.read())), 10)
            svg2 = os.path.join(d, "again.svg")
            self.assertEqual(flamegraph.main(["--folded", folded, "--out", svg2]), 0)
            with open(svg2) as f:
                self.assertEqual(len(frames_of(f.read())), 10)


if __name__ == "__main__":
    unittest.main(verbosity=2)
