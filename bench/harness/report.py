"""Writes a run's results: results.csv (one row per repetition and phase),
results.md (medians over repetitions, Shale/MariaDB ratios, failures) and
results.png (throughput and p95 latency per workload phase and system)."""
import csv
import os
import statistics

CSV_FIELDS = ["workload", "phase", "system", "rep", "unit", "ops", "seconds", "throughput",
              "p50_ms", "p95_ms", "p99_ms", "error"]


class Row(dict):
    pass


def measurement_row(workload, system, rep, m):
    r = Row(workload=workload, phase=m.phase, system=system, rep=rep, unit=m.unit, ops=m.ops,
            seconds=round(m.seconds, 3), throughput=round(m.throughput, 2), error="")
    lat = sorted(m.latencies_ms)
    from .driver import percentile
    for p in (50, 95, 99):
        v = percentile(lat, p)
        r["p%d_ms" % p] = "" if v is None else round(v, 3)
    return r


def failure_row(workload, system, stage, error):
    text = " ".join(str(error).split())
    return Row(workload=workload, phase=stage, system=system, rep="", unit="", ops="", seconds="",
               throughput="", p50_ms="", p95_ms="", p99_ms="", error=text[:400])


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: r.get(k, "") for k in CSV_FIELDS})


def summarize(rows, systems):
    """(workload, phase) -> {system: {unit, throughput, p50, p95, p99, reps}}, in first-seen order."""
    out = {}
    for r in rows:
        if r["error"]:
            continue
        out.setdefault((r["workload"], r["phase"]), {}).setdefault(r["system"], []).append(r)
    summary = {}
    for key, per_system in out.items():
        summary[key] = {}
        for system, rs in per_system.items():
            def med(field):
                vals = [float(x[field]) for x in rs if x[field] != ""]
                return statistics.median(vals) if vals else None
            summary[key][system] = {"unit": rs[0]["unit"], "throughput": med("throughput"),
                                    "p50": med("p50_ms"), "p95": med("p95_ms"), "p99": med("p99_ms"),
                                    "reps": len(rs),
                                    "min": min(float(x["throughput"]) for x in rs),
                                    "max": max(float(x["throughput"]) for x in rs)}
    return summary


def fmt(v, digits=2):
    if v is None:
        return "–"
    if v >= 100:
        return "%.0f" % v
    return ("%%.%df" % digits) % v


def shale_systems(systems):
    """The Shale systems of a run ("shale", "shale-3", ...), in order."""
    return [s for s in systems if s == "shale" or s.startswith("shale-")]


def ratio(summary_entry, field, system="shale"):
    s, m = summary_entry.get(system), summary_entry.get("mariadb")
    if not s or not m or s[field] in (None, 0) or m[field] in (None, 0):
        return None
    return s[field] / m[field]


def write_markdown(path, rows, systems, header_lines, png_name):
    summary = summarize(rows, systems)
    lines = list(header_lines)
    lines.append("")
    lines.append("Medians over the repetitions; throughput spread (min–max) in brackets. "
                 "Latencies in ms per operation (a transaction for sysbench and game). "
                 "Ratio = Shale / MariaDB (throughput: above 1 is Shale faster; p95: below 1 is Shale faster). "
                 "shale-N: an N-node Shale cluster on this one machine, client connections spread over "
                 "the nodes, every table with 2 replicas (each write synchronously applied on two nodes).")
    lines.append("")
    cols = ["workload", "phase", "unit"]
    for s in systems:
        cols += ["%s throughput" % s, "%s p50" % s, "%s p95" % s, "%s p99" % s]
    # One pair of ratio columns per Shale system when MariaDB ran too.
    ratio_systems = shale_systems(systems) if "mariadb" in systems else []
    for s in ratio_systems:
        prefix = "ratio" if len(ratio_systems) == 1 else "%s ratio" % s
        cols += ["%s throughput" % prefix, "%s p95" % prefix]
    lines.append("| " + " | ".join(cols) + " |")
    lines.append("|" + "---|" * len(cols))
    for (workload, phase), entry in summary.items():
        unit = next(iter(entry.values()))["unit"]
        cells = [workload, phase, unit]
        for s in systems:
            e = entry.get(s)
            if e is None:
                cells += ["failed", "", "", ""]
            else:
                spread = " (%s–%s)" % (fmt(e["min"]), fmt(e["max"])) if e["reps"] > 1 else ""
                cells += [fmt(e["throughput"]) + spread, fmt(e["p50"], 3), fmt(e["p95"], 3), fmt(e["p99"], 3)]
        for s in ratio_systems:
            rt, rp = ratio(entry, "throughput", s), ratio(entry, "p95", s)
            cells += [fmt(rt, 3) if rt else "–", fmt(rp, 3) if rp else "–"]
        lines.append("| " + " | ".join(cells) + " |")
    failures = [r for r in rows if r["error"]]
    lines.append("")
    if failures:
        lines.append("### Failures")
        lines.append("")
        lines.append("| workload | system | stage | error |")
        lines.append("|---|---|---|---|")
        for r in failures:
            lines.append("| %s | %s | %s | %s |" % (r["workload"], r["system"], r["phase"],
                                                   r["error"].replace("|", "\\|")))
    else:
        lines.append("No failures.")
    if png_name:
        lines.append("")
        lines.append("![throughput and p95 latency](%s)" % png_name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return summary


def write_plot(path, summary, systems):
    """Two panels: throughput (log scale, since units differ) and p95 latency."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(summary)
    if not keys:
        return False
    labels = ["%s\n%s" % (w, p) if p != "run" else w for (w, p) in keys]
    width = 0.8 / max(1, len(systems))
    fig, axes = plt.subplots(2, 1, figsize=(max(8, 0.75 * len(keys) + 2), 9), sharex=True)
    colors = {"shale": "#1f77b4", "shale-3": "#2ca02c", "mariadb": "#d9822b"}
    for ax, field, title in ((axes[0], "throughput", "throughput per s (log; units in results.md)"),
                             (axes[1], "p95", "p95 latency (ms, log scale)")):
        for j, s in enumerate(systems):
            xs, ys = [], []
            for k, key in enumerate(keys):
                e = summary[key].get(s)
                if e and e[field]:
                    xs.append(k + (j - (len(systems) - 1) / 2) * width)
                    ys.append(e[field])
            ax.bar(xs, ys, width=width, label=s, color=colors.get(s))
        ax.set_yscale("log")
        ax.set_ylabel(title)
        ax.grid(axis="y", alpha=0.3)
        ax.legend()
    axes[1].set_xticks(range(len(keys)))
    axes[1].set_xticklabels(labels, rotation=60, ha="right", fontsize=8)
    fig.suptitle(" vs ".join(systems) + ": throughput and p95 latency per workload (missing bar = failed)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


def ensure_dir(path):
    os.makedirs(path, exist_ok=True)
