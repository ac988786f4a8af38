#!/usr/bin/python3
"""Flame graphs from `perf script`: fold the call graphs, draw an SVG.

  flamegraph.py --perf-script FILE --out OUT.svg [--title T] [--folded-out F]
  flamegraph.py --folded FILE --out OUT.svg

--perf-script reads `perf script` text (from `perf record -g`, frame
pointers or DWARF: a header line per sample, then one frame per line,
leaf first, then a blank line; `-` is stdin) and folds it into stacks,
root first, one line per distinct stack: "frame1;frame2;...;leaf count".
Addresses, `+0x..` offsets and `(dso)` suffixes are dropped; a frame
without a symbol becomes `[dso]` (`[libc.so.6]`), kernel frames get `_[k]`.
C++ symbols are shortened: template argument lists become `<>`, parameter
lists and their `const`/`&` qualifiers, return types, `[abi:..]` tags and
`[clone ..]` suffixes go, `(anonymous namespace)` becomes `(anon)`; so
`void boost::asio::detail::scheduler::run<...>(boost::system::error_code&)`
becomes `boost::asio::detail::scheduler::run<>` (--no-shorten keeps them).
--group thread / process adds the thread name / "process-name pid" as the
root frame. --folded reads folded stacks instead (e.g. --folded-out's).

The SVG is self-contained: one rectangle per frame, width proportional to
its samples, the root ("all") at the bottom; each frame's <title> (the
tooltip) holds its symbol, samples and percent of all. Frames under
--min-percent (0.1) of the samples are left out. Colours come from a hash
of the frame's module: its namespace (`shale::exec`, `shale::txn`,
`boost::asio`, `std`), its library when known (`libc`, `libpython3.11`),
or `[k]` (kernel, orange); the same module gets the same colour in every
graph. Clicking a frame zooms to it, clicking "all" or "Reset Zoom" undoes.

Standard library only. Test: bench/harness/flamegraph_test.py.
"""
import argparse
import collections
import colorsys
import hashlib
import os
import re
import sys
from xml.sax.saxutils import escape, quoteattr

# ---------------------------------------------------------------------------
# perf script -> folded stacks

# "comm pid[/tid] [cpu] time: [period] event:" (comm may contain spaces).
_HEADER = re.compile(r"^(?P<comm>\S.*?)\s+(?P<pid>\d+)(?:/(?P<tid>\d+))?\s+(?:\[\d+\]\s+)?\d+\.\d+:")
_FRAME = re.compile(r"^\s+(?P<addr>[0-9a-fA-F]+)\s+(?P<rest>.*?)\s*$")
_OFFSET = re.compile(r"\+0x[0-9a-fA-F]+$")
_ABI = re.compile(r"\[abi:[^\]]*\]")
_CLONE = re.compile(r"\s*\[clone [^\]]*\]")
_QUALIFIERS = re.compile(r"(?:\s*(?:const|volatile|noexcept|&&|&))*")
_KERNEL_ADDR = 0xFFFF800000000000

# Longest first, so `operator<<=` is not read as `operator<` and `<=`.
_OPERATORS = sorted(["<<=", ">>=", "<=>", "->*", "<<", ">>", "<=", ">=", "->", "()", "[]", "==", "!=", "&&",
                     "||", "++", "--", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<", ">", "+", "-", "*",
                     "/", "%", "&", "|", "^", "~", "!", "=", ","], key=len, reverse=True)


def _skip_group(s, i):
    """Index just past the bracket group opening at s[i] ('<' or '(').
    Inside a '<..>' group parentheses nest and hide '<' '>' (a `(a>b)`
    argument); inside '(..)' only parentheses count."""
    stack = [s[i]]
    j = i + 1
    while j < len(s) and stack:
        c = s[j]
        if c == "(":
            stack.append("(")
        elif c == ")":
            while stack and stack.pop() != "(":
                pass
        elif stack[-1] == "<":
            if c == "<":
                stack.append("<")
            elif c == ">":
                stack.pop()
        j += 1
    return j


def _split_top(s, sep):
    """s split at sep where it is outside <> () {} groups."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(s):
        c = s[i]
        if c in "<({":
            depth += 1
        elif c in ">)}" and depth > 0:
            depth -= 1
        elif depth == 0 and s.startswith(sep, i):
            parts.append(s[start:i])
            i += len(sep)
            start = i
            continue
        i += 1
    parts.append(s[start:])
    return parts


def shorten(sym):
    """A demangled C++ symbol made readable: `<...>` -> `<>`, no parameter
    lists, qualifiers or return type. Anything that is not C++ is kept."""
    if "::" not in sym and "(" not in sym and "<" not in sym:
        return sym
    s = _CLONE.sub("", _ABI.sub("", sym)).replace("(anonymous namespace)", "(anon)")
    out, i, n = [], 0, len(s)
    while i < n:
        c = s[i]
        if (s.startswith("operator", i) and (i == 0 or not (s[i - 1].isalnum() or s[i - 1] == "_"))
                and not (i + 8 < n and (s[i + 8].isalnum() or s[i + 8] == "_"))):
            j = i + 8
            while j < n and s[j] == " ":
                j += 1
            op = next((o for o in _OPERATORS if s.startswith(o, j)), None)
            if op is not None:
                out.append("operator" + op)
                i = j + len(op)
            else:  # operator new / delete / a conversion: the words follow
                out.append("operator")
                i += 8
        elif s.startswith("(anon)", i):
            out.append("(anon)")
            i += 6
        elif c == "<":
            out.append("<>")
            i = _skip_group(s, i)
        elif c == "(":  # a parameter list, and the qualifiers after it
            i = _skip_group(s, i)
            i = _QUALIFIERS.match(s, i).end()
        else:
            out.append(c)
            i += 1
    t = "".join(out).strip()
    # The return type of a template function: keep the last word, or from
    # the word holding `operator` on (`Foo::operator new`, `std::operator< <>`).
    words = [w for w in _split_top(t, " ") if w]
    if len(words) > 1:
        op = next((k for k, w in enumerate(words) if re.search(r"(^|::)operator", w)), None)
        t = " ".join(words[op:]) if op is not None else words[-1]
    return t or sym


def _split_dso(rest):
    """'sym+0x1 (dso)' -> ('sym+0x1', 'dso'); the dso is the last balanced
    parenthesised group at the end (a path may hold '(deleted)')."""
    if not rest.endswith(")"):
        return rest, ""
    depth = 0
    for k in range(len(rest) - 1, -1, -1):
        if rest[k] == ")":
            depth += 1
        elif rest[k] == "(":
            depth -= 1
            if depth == 0:
                if k > 0 and rest[k - 1] == " ":
                    return rest[:k].rstrip(), rest[k + 1:-1]
                return rest, ""
    return rest, ""


def dso_module(dso):
    """'/usr/lib/x86_64-linux-gnu/libc.so.6' -> 'libc'."""
    base = os.path.basename(dso.split(" ")[0]) if dso else ""
    return base.split(".so")[0] if ".so" in base else base


def parse_frame(line, shorten_symbols=True):
    """One frame line of perf script -> (frame name, module) or None."""
    m = _FRAME.match(line)
    if m:
        addr, rest = m.group("addr"), m.group("rest")
    else:
        addr, rest = "", line.strip()
    if not rest:
        return None
    sym, dso = _split_dso(rest)
    sym = _OFFSET.sub("", sym)
    unknown = sym in ("", "[unknown]")
    # A kernel address without a symbol is no kernel frame: perf marks the
    # end of a stack with ffffffffffffffff [unknown] ([unknown]).
    kernel = dso.startswith("[kernel") or (not unknown and addr and int(addr, 16) >= _KERNEL_ADDR)
    if unknown:
        name = "[%s]" % os.path.basename(dso.split(" ")[0]) if dso and dso != "[unknown]" else "[unknown]"
        name = name.replace("[[", "[").replace("]]", "]")
    else:
        name = shorten(sym) if shorten_symbols else sym
    name = name.replace(";", ":")
    if kernel:
        return name + "_[k]", "[k]"
    return name, dso_module(dso) if not dso.startswith("[") else ""


def fold_perf_script(lines, group=None, shorten_symbols=True):
    """perf script lines -> (Counter {stack tuple, root first: samples},
    {frame name: module}). group: None, "thread" (the thread's name as the
    root frame) or "process" ("name pid", the name of the pid's main thread
    when it was sampled)."""
    samples = collections.Counter()
    modules = {}
    proc_names = {}
    header, frames = None, []

    def flush():
        if header is not None:
            samples[(header, tuple(reversed(frames)) or ("[no stack]",))] += 1

    for line in lines:
        line = line.rstrip("\n")
        if not line.strip():
            flush()
            header, frames = None, []
            continue
        if line.startswith("#"):
            continue
        if not line[0].isspace():
            flush()
            frames = []
            m = _HEADER.match(line)
            if m:
                comm, pid, tid = m.group("comm").strip(), m.group("pid"), m.group("tid") or m.group("pid")
                if m.group("tid") and pid == tid or pid not in proc_names:
                    proc_names[pid] = comm
            else:
                comm, pid, tid = line.split()[0], "?", "?"
            header = (comm, pid, tid)
            continue
        if header is None:
            continue
        frame = parse_frame(line, shorten_symbols)
        if frame:
            frames.append(frame[0])
            if frame[1]:
                modules.setdefault(frame[0], frame[1])
    flush()
    stacks = collections.Counter()
    for ((comm, pid, tid), stack), count in samples.items():
        if group == "thread":
            stack = (comm.replace(";", ":"),) + stack
        elif group == "process":
            stack = ("%s %s" % (proc_names.get(pid, comm).replace(";", ":"), pid),) + stack
        stacks[stack] += count
    return stacks, modules


def write_folded(stacks, f):
    for stack, count in sorted(stacks.items()):
        f.write("%s %d\n" % (";".join(stack), count))


def read_folded(lines):
    stacks = collections.Counter()
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        frames, _, count = line.rpartition(" ")
        try:
            stacks[tuple(frames.split(";"))] += int(count)
        except ValueError:
            raise ValueError("not a folded stack line: %r" % line) from None
    return stacks


# ---------------------------------------------------------------------------
# folded stacks -> SVG

def module_key(name, modules=None):
    """What a frame is coloured by: `[k]`, a namespace (`shale::exec`,
    `boost::asio`, `std`), a library, or else the name itself."""
    if name.endswith("_[k]"):
        return "[k]"
    if name == "all":
        return "all"
    if "::" in name:
        parts = _split_top(name.split(" ")[0], "::")[:-1]
        if parts and parts[0] in ("std", "__gnu_cxx", "__cxxabiv1", "__cxx11"):
            return "std"
        ns = []
        for p in parts[:2]:
            if p and (p[0].islower() or p[0] == "_" or p == "(anon)"):
                ns.append(p)
            else:
                break
        if ns:
            return "::".join(ns)
    if modules and modules.get(name):
        return modules[name]
    if name.startswith("[") and name.endswith("]"):
        return dso_module(name[1:-1]) or name
    return name


def _hash(s):
    return int.from_bytes(hashlib.md5(s.encode("utf-8", "replace")).digest()[:4], "big")


def colour(name, modules=None):
    """rgb() of a frame: hue from its module, a little lightness from its name."""
    key = module_key(name, modules)
    h = _hash(key)
    if key == "[k]":
        hue, sat = 28, 0.85
    elif key == "all":
        hue, sat = 0, 0.0
    else:
        hue, sat = h % 360, 0.50 + (h >> 9) % 20 / 100
    light = 0.62 + _hash(name) % 12 / 100
    r, g, b = colorsys.hls_to_rgb(hue / 360, light, sat)
    return "rgb(%d,%d,%d)" % (r * 255, g * 255, b * 255)


class _Node:
    __slots__ = ("name", "count", "children")

    def __init__(self, name):
        self.name, self.count, self.children = name, 0, {}


def layout(stacks, min_percent=0.1):
    """[(name, samples, depth, samples before it on its level)], the root
    "all" first, parents before children; frames under min_percent of all
    samples (and so everything above them) are left out."""
    root = _Node("all")
    for stack, count in stacks.items():
        root.count += count
        node = root
        for f in stack:
            node = node.children.get(f) or node.children.setdefault(f, _Node(f))
            node.count += count
    limit = root.count * min_percent / 100.0
    frames = []
    todo = [(root, 0, 0)]
    while todo:
        node, depth, start = todo.pop()
        frames.append((node.name, node.count, depth, start))
        x = start
        kids = []
        for name in sorted(node.children):
            kid = node.children[name]
            if kid.count >= limit and kid.count > 0:
                kids.append((kid, depth + 1, x))
            x += kid.count
        todo.extend(reversed(kids))
    return frames, root.count


FONT = 12
CHAR_W = 7.0  # about a Verdana 12px character
FRAME_H = 16

_SCRIPT = """
var PAD=%(pad)s,CW=%(cw)s,frames,det,reset,W;
function init(){det=document.getElementById('details').firstChild;reset=document.getElementById('unzoom');
frames=[].slice.call(document.querySelectorAll('g.f'));
frames.forEach(function(g){var r=g.firstChild.nextSibling,t=g.firstChild.textContent;
g._x=+r.getAttribute('x');g._w=+r.getAttribute('width');g._y=+r.getAttribute('y');g._n=t.slice(0,t.lastIndexOf(' ('));
g.onclick=function(){zoom(g)};g.onmouseover=function(){det.nodeValue=t};g.onmouseout=function(){det.nodeValue=' '}});
W=frames[0]._w;reset.onclick=function(){zoom(frames[0])}}
function place(g,x,w){var r=g.firstChild.nextSibling,t=r.nextSibling,n=Math.floor((w-6)/CW);
r.setAttribute('x',x.toFixed(2));r.setAttribute('width',w.toFixed(2));t.setAttribute('x',(x+3).toFixed(2));
t.textContent=n<3?'':g._n.length<=n?g._n:g._n.slice(0,n-2)+'..'}
function zoom(z){var s=W/z._w,e=0.005;frames.forEach(function(g){
if(g._y<=z._y&&g._x>=z._x-e&&g._x+g._w<=z._x+z._w+e){g.style.display='';g.style.opacity='';place(g,PAD+(g._x-z._x)*s,g._w*s)}
else if(g._y>z._y&&g._x<=z._x+e&&g._x+g._w>=z._x+z._w-e){g.style.display='';g.style.opacity='0.5';place(g,PAD,W)}
else g.style.display='none'});reset.style.display=z===frames[0]?'none':'inline'}
"""


def fit_text(name, width):
    n = int((width - 6) // CHAR_W)
    if n < 3:
        return ""
    return name if len(name) <= n else name[:n - 2] + ".."


def render_svg(stacks, title="Flame Graph", modules=None, width=1200, min_percent=0.1, subtitle=None):
    """The SVG text of a flame graph of stacks ({tuple of frames, root first: samples})."""
    frames, total = layout(stacks, min_percent)
    pad = 10
    scale = (width - 2 * pad) / total if total else 0.0
    depth = max((f[2] for f in frames), default=0)
    top = FONT * 3 + 14
    bottom = FONT * 2 + 10
    height = top + (depth + 1) * FRAME_H + bottom
    if subtitle is None:
        subtitle = ("%d samples; frames under %g%% left out; click a frame to zoom, \"all\" to reset"
                    % (total, min_percent))
    out = ['<?xml version="1.0" standalone="no"?>',
           '<svg version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" xmlns="http://www.w3.org/2000/svg"'
           ' onload="init(evt)">' % (width, height, width, height),
           "<style>text{font-family:Verdana,sans-serif;font-size:%dpx;fill:#000}"
           "#title{font-size:17px;text-anchor:middle}#sub{fill:#555;text-anchor:middle}"
           "#unzoom{cursor:pointer;display:none}g.f{cursor:pointer}g.f:hover rect{stroke:#000;stroke-width:0.5}"
           "</style>" % FONT,
           "<script><![CDATA[%s]]></script>" % (_SCRIPT % {"pad": pad, "cw": CHAR_W}),
           '<rect x="0" y="0" width="100%" height="100%" fill="#f6f6f0"/>',
           '<text id="title" x="%d" y="24">%s</text>' % (width // 2, escape(title)),
           '<text id="sub" x="%d" y="%d">%s</text>' % (width // 2, 24 + FONT + 6, escape(subtitle)),
           '<text id="unzoom" x="%d" y="24">Reset Zoom</text>' % pad,
           '<text id="details" x="%d" y="%d"> </text>' % (pad, height - 10),
           '<g id="frames">']
    for name, count, d, start in frames:
        x = pad + start * scale
        w = count * scale
        y = height - bottom - (d + 1) * FRAME_H
        tip = "%s (%s sample%s, %.2f%%)" % (name, format(count, ","), "" if count == 1 else "s",
                                            100.0 * count / total)
        out.append('<g class="f"><title>%s</title><rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" rx="2"/>'
                   '<text x="%.2f" y="%d">%s</text></g>'
                   % (escape(tip), x, y, w, FRAME_H - 1, colour(name, modules), x + 3, y + FRAME_H - 4,
                      escape(fit_text(name, w))))
    out.append("</g>")
    out.append("</svg>")
    return "\n".join(out) + "\n"


def write_flamegraph(perf_script_lines, svg_path, title="Flame Graph", folded_path=None, group=None,
                     min_percent=0.1, shorten_symbols=True):
    """perf script lines -> SVG file (and folded file); returns the samples."""
    stacks, modules = fold_perf_script(perf_script_lines, group, shorten_symbols)
    if folded_path:
        with open(folded_path, "w") as f:
            write_folded(stacks, f)
    with open(svg_path, "w") as f:
        f.write(render_svg(stacks, title, modules, min_percent=min_percent))
    return sum(stacks.values())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--perf-script", metavar="FILE", help="perf script output ('-': stdin)")
    src.add_argument("--folded", metavar="FILE", help="folded stacks ('-': stdin)")
    ap.add_argument("--out", metavar="SVG", help="the flame graph")
    ap.add_argument("--folded-out", metavar="FILE", help="write the folded stacks too")
    ap.add_argument("--title", default="Flame Graph")
    ap.add_argument("--group", choices=("none", "thread", "process"), default="none",
                    help="root frame per thread name or per process (--perf-script only)")
    ap.add_argument("--min-percent", type=float, default=0.1, help="leave out narrower frames (default 0.1)")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--no-shorten", action="store_true", help="keep C++ symbols whole")
    args = ap.parse_args(argv)
    if not args.out and not args.folded_out:
        ap.error("nothing to write: give --out and/or --folded-out")
    path = args.perf_script or args.folded
    with (sys.stdin if path == "-" else open(path, errors="replace")) as f:
        if args.perf_script:
            stacks, modules = fold_perf_script(f, None if args.group == "none" else args.group,
                                               not args.no_shorten)
        else:
            stacks, modules = read_folded(f), {}
    if not stacks:
        print("flamegraph.py: no samples in %s" % path, file=sys.stderr)
        return 1
    if args.folded_out:
        with open(args.folded_out, "w") as f:
            write_folded(stacks, f)
    if args.out:
        with open(args.out, "w") as f:
            f.write(render_svg(stacks, args.title, modules, args.width, args.min_percent))
    return 0


if __name__ == "__main__":
    sys.exit(main())
