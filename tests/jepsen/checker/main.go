// Command register-checker checks a register history (tests/jepsen/
// history.py's JSON lines) for linearizability, one key at a time, with
// porcupine. It prints one line per key on stderr and a JSON summary on
// stdout; for a key that is not linearizable it writes porcupine's HTML
// visualization to <out>/linearizability-key<K>.html and prints the longest
// linearizable prefix it found and the operations it could not place after
// it.
//
// Operations (f: read, write, cas; type: ok, fail, info):
//   - read ok: the register held `value` (null: no row); failed or unknown
//     reads are dropped (they change nothing).
//   - write ok / info: sets `value`; an info write may happen at any time
//     after it started, or never (its end is +infinity). A failed write is
//     dropped.
//   - cas [old, new] ok: the register held old and now holds new; fail with
//     error [0, "cas-mismatch"]: it did not hold old; info: either, or never;
//     other failures are dropped.
//
// Exit status: 0 every key linearizable, 1 some key is not, 3 none is
// illegal but some check timed out (unknown), 2 bad input.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

type rawOp struct {
	Index   int               `json:"index"`
	Process json.RawMessage   `json:"process"`
	Node    string            `json:"node"`
	Type    string            `json:"type"`
	F       string            `json:"f"`
	Key     json.RawMessage   `json:"key"`
	Value   json.RawMessage   `json:"value"`
	Error   []json.RawMessage `json:"error"`
	Start   int64             `json:"start"`
	End     int64             `json:"end"`
}

type state struct {
	Present bool
	V       int64
}

func (s state) String() string {
	if !s.Present {
		return "nil"
	}
	return fmt.Sprint(s.V)
}

type input struct {
	F   string
	V   int64 // write
	Old int64 // cas
	New int64 // cas
}

type output struct {
	Read    state
	Ok      bool // cas
	Unknown bool // info
}

type meta struct {
	Index   int
	Process string
	Node    string
	Type    string
}

var model = porcupine.Model{
	Init: func() interface{} { return state{} },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		s := st.(state)
		i := in.(input)
		o := out.(output)
		switch i.F {
		case "read":
			return o.Read == s, s
		case "write":
			return true, state{true, i.V}
		case "cas":
			match := s.Present && s.V == i.Old
			if o.Unknown {
				if match {
					return true, state{true, i.New}
				}
				return true, s
			}
			if o.Ok {
				return match, state{true, i.New}
			}
			return !match, s
		}
		return false, s
	},
	DescribeOperation: func(in, out interface{}) string {
		i := in.(input)
		o := out.(output)
		switch i.F {
		case "read":
			return fmt.Sprintf("read -> %v", o.Read)
		case "write":
			if o.Unknown {
				return fmt.Sprintf("write %d ?", i.V)
			}
			return fmt.Sprintf("write %d", i.V)
		case "cas":
			r := "ok"
			if o.Unknown {
				r = "?"
			} else if !o.Ok {
				r = "fail"
			}
			return fmt.Sprintf("cas %d->%d %s", i.Old, i.New, r)
		}
		return "?"
	},
	DescribeState: func(st interface{}) string { return st.(state).String() },
	DescribeOperationMetadata: func(m interface{}) string {
		if m == nil {
			return ""
		}
		x := m.(meta)
		return fmt.Sprintf("#%d process %s on %s (%s)", x.Index, x.Process, x.Node, x.Type)
	},
}

type keyResult struct {
	Key           string   `json:"key"`
	Result        string   `json:"result"`
	Ops           int      `json:"ops"`
	Info          int      `json:"info_ops"`
	Visualization string   `json:"visualization,omitempty"`
	Explanation   []string `json:"explanation,omitempty"`
	Seconds       float64  `json:"seconds"`
}

func main() {
	historyPath := flag.String("history", "", "history.jsonl")
	outDir := flag.String("out", "", "directory for visualizations (default: the history's)")
	timeout := flag.Duration("timeout", 120*time.Second, "time limit per key (0: none)")
	flag.Parse()
	if *historyPath == "" {
		fmt.Fprintln(os.Stderr, "usage: register-checker -history FILE [-out DIR] [-timeout D]")
		os.Exit(2)
	}
	if *outDir == "" {
		*outDir = filepath.Dir(*historyPath)
	}
	if err := os.MkdirAll(*outDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	f, err := os.Open(*historyPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var raws []rawOp
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r rawOp
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			fmt.Fprintf(os.Stderr, "bad line %q: %v\n", line, err)
			os.Exit(2)
		}
		raws = append(raws, r)
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}

	// Dense client ids for the visualization; nemesis lines become annotations.
	clients := map[string]int{}
	var procs []string
	var maxEnd int64
	for _, r := range raws {
		p := strings.Trim(string(r.Process), "\"")
		if p == "nemesis" {
			continue
		}
		if _, ok := clients[p]; !ok {
			clients[p] = 0
			procs = append(procs, p)
		}
		if r.End > maxEnd {
			maxEnd = r.End
		}
	}
	sort.Slice(procs, func(a, b int) bool { return procOrder(procs[a]) < procOrder(procs[b]) })
	for i, p := range procs {
		clients[p] = i
	}
	infinity := int64(math.MaxInt64 / 2)
	if maxEnd > 0 && maxEnd < infinity/2 {
		infinity = maxEnd + int64(time.Hour)
	}

	byKey := map[string][]porcupine.Operation{}
	infos := map[string]int{}
	var annotations []porcupine.Annotation
	for _, r := range raws {
		p := strings.Trim(string(r.Process), "\"")
		if p == "nemesis" {
			annotations = append(annotations, porcupine.Annotation{
				Tag: "nemesis", Start: r.Start, End: r.End,
				Description: r.F + " " + strings.TrimSpace(string(r.Value)),
			})
			continue
		}
		if r.F != "read" && r.F != "write" && r.F != "cas" {
			continue
		}
		key := strings.TrimSpace(string(r.Key))
		op := porcupine.Operation{ClientId: clients[p], Call: r.Start, Return: r.End,
			Metadata: meta{Index: r.Index, Process: p, Node: r.Node, Type: r.Type}}
		switch r.F {
		case "read":
			if r.Type != "ok" {
				continue
			}
			var v *int64
			if err := json.Unmarshal(r.Value, &v); err != nil {
				bad(r, err)
			}
			st := state{}
			if v != nil {
				st = state{true, *v}
			}
			op.Input, op.Output = input{F: "read"}, output{Read: st}
		case "write":
			var v int64
			if err := json.Unmarshal(r.Value, &v); err != nil {
				bad(r, err)
			}
			switch r.Type {
			case "ok":
				op.Output = output{}
			case "info":
				op.Output, op.Return = output{Unknown: true}, infinity
			default:
				continue
			}
			op.Input = input{F: "write", V: v}
		case "cas":
			var v [2]int64
			if err := json.Unmarshal(r.Value, &v); err != nil {
				bad(r, err)
			}
			switch r.Type {
			case "ok":
				op.Output = output{Ok: true}
			case "info":
				op.Output, op.Return = output{Unknown: true}, infinity
			case "fail":
				if !casMismatch(r.Error) {
					continue
				}
				op.Output = output{Ok: false}
			default:
				continue
			}
			op.Input = input{F: "cas", Old: v[0], New: v[1]}
		}
		if r.Type == "info" {
			infos[key]++
		}
		byKey[key] = append(byKey[key], op)
	}

	var keys []string
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return procOrder(keys[a]) < procOrder(keys[b]) })
	var results []keyResult
	illegal, unknown := false, false
	for _, k := range keys {
		ops := byKey[k]
		t0 := time.Now()
		res, info := porcupine.CheckOperationsVerbose(model, ops, *timeout)
		kr := keyResult{Key: k, Ops: len(ops), Info: infos[k], Seconds: time.Since(t0).Seconds()}
		switch res {
		case porcupine.Ok:
			kr.Result = "ok"
		case porcupine.Illegal:
			kr.Result = "illegal"
			illegal = true
			kr.Explanation = explain(ops, info)
			path := filepath.Join(*outDir, fmt.Sprintf("linearizability-key%s.html", safe(k)))
			info.AddAnnotations(annotations)
			if err := porcupine.VisualizePath(model, info, path); err == nil {
				kr.Visualization = path
			} else {
				fmt.Fprintf(os.Stderr, "visualization: %v\n", err)
			}
		default:
			kr.Result = "unknown"
			unknown = true
		}
		fmt.Fprintf(os.Stderr, "key %s: %s (%d ops, %d unknown outcomes, %.1f s)\n", k, strings.ToUpper(kr.Result),
			kr.Ops, kr.Info, kr.Seconds)
		for _, line := range kr.Explanation {
			fmt.Fprintf(os.Stderr, "    %s\n", line)
		}
		if kr.Visualization != "" {
			fmt.Fprintf(os.Stderr, "    visualization: %s\n", kr.Visualization)
		}
		results = append(results, kr)
	}
	valid := "true"
	if illegal {
		valid = "false"
	} else if unknown {
		valid = "unknown"
	}
	summary := map[string]interface{}{"valid": valid, "keys": results}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	_ = enc.Encode(summary)
	switch {
	case illegal:
		os.Exit(1)
	case unknown:
		os.Exit(3)
	}
}

// explain prints the end of the longest linearizable prefix porcupine found
// and the operations that had to come next but fit no state it reached.
func explain(ops []porcupine.Operation, info porcupine.LinearizationInfo) []string {
	partials := info.PartialLinearizations()
	if len(partials) == 0 || len(partials[0]) == 0 {
		return nil
	}
	var longest []int
	for _, p := range partials[0] {
		if len(p) > len(longest) {
			longest = p
		}
	}
	// Times are shown from the first client operation (the set-up's writes,
	// process -1, come long before).
	var base int64 = math.MaxInt64
	for _, op := range ops {
		if op.Call < base && op.Metadata.(meta).Process != "-1" {
			base = op.Call
		}
	}
	if base == math.MaxInt64 {
		base = 0
	}
	describe := func(op porcupine.Operation) string {
		m := op.Metadata.(meta)
		end := "inf"
		if op.Return < math.MaxInt64/4 && (op.Return-base) < int64(1000*time.Hour) {
			end = fmt.Sprintf("%.3f", float64(op.Return-base)/1e9)
		}
		if o, ok := op.Output.(output); ok && o.Unknown {
			end = "inf"
		}
		return fmt.Sprintf("#%-6d p%-4s %-6s [%.3f, %s] %s", m.Index, m.Process, m.Node,
			float64(op.Call-base)/1e9, end, model.DescribeOperation(op.Input, op.Output))
	}
	in := map[int]bool{}
	var lines []string
	st := model.Init()
	for _, id := range longest {
		in[id] = true
		_, st = model.Step(st, ops[id].Input, ops[id].Output)
	}
	lines = append(lines, fmt.Sprintf("longest linearizable prefix: %d of %d ops; its last ones (time s since the first op):",
		len(longest), len(ops)))
	from := len(longest) - 6
	if from < 0 {
		from = 0
	}
	for _, id := range longest[from:] {
		lines = append(lines, "  "+describe(ops[id]))
	}
	lines = append(lines, fmt.Sprintf("state after it: %v; none of these fits next:", st))
	// The operations not in the prefix that must come first: every one
	// called before the earliest return among them.
	var rest []int
	var firstReturn int64 = math.MaxInt64
	for id := range ops {
		if !in[id] {
			rest = append(rest, id)
			if ops[id].Return < firstReturn {
				firstReturn = ops[id].Return
			}
		}
	}
	sort.Slice(rest, func(a, b int) bool { return ops[rest[a]].Call < ops[rest[b]].Call })
	n := 0
	for _, id := range rest {
		if ops[id].Call <= firstReturn && n < 10 {
			lines = append(lines, "  "+describe(ops[id]))
			n++
		}
	}
	return lines
}

func casMismatch(e []json.RawMessage) bool {
	if len(e) < 2 {
		return false
	}
	var msg string
	return json.Unmarshal(e[1], &msg) == nil && msg == "cas-mismatch"
}

func bad(r rawOp, err error) {
	fmt.Fprintf(os.Stderr, "op #%d: bad value %s: %v\n", r.Index, string(r.Value), err)
	os.Exit(2)
}

func procOrder(p string) float64 {
	var f float64
	if _, err := fmt.Sscan(p, &f); err == nil {
		return f
	}
	return math.MaxFloat64
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-' {
			return r
		}
		return '_'
	}, s)
}
