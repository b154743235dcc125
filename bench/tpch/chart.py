#!/usr/bin/python3
"""Bar chart of bench.sh results: refresh time per query, FULL vs
DIFFERENTIAL vs AUTO, log scale.

Usage: chart.py <results.tsv> <title> <out.png>
The TSV has one line per query: query, FULL ms, DIFFERENTIAL ms (or a dash),
AUTO ms, AUTO's action (as bench.sh writes it). Needs Debian's
python3-matplotlib (run with /usr/bin/python3).
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def number(text):
    try:
        return max(float(text), 0.5)  # a 0 ms bar would vanish on a log scale
    except ValueError:
        return None


def main():
    tsv, title, out = sys.argv[1:4]
    rows = [line.rstrip("\n").split("\t") for line in open(tsv, encoding="utf-8") if line.strip()]
    queries = [r[0] for r in rows]
    full = [number(r[1]) for r in rows]
    diff = [number(r[2]) for r in rows]
    auto = [number(r[3]) for r in rows]
    x = range(len(queries))
    w = 0.27
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.bar([i - w for i in x], full, w, label="FULL", color="#888888")
    ax.bar([i for i in x], [d or 0 for d in diff], w, label="DIFFERENTIAL", color="#1f77b4")
    ax.bar([i + w for i in x], auto, w, label="AUTO", color="#2ca02c")
    ax.set_yscale("log")
    bottom = min(v for v in full + auto + diff if v is not None) / 2
    ax.set_ylim(bottom=bottom)
    for i, d in enumerate(diff):
        if d is None:  # DIFFERENTIAL does not maintain this query
            ax.text(i, bottom * 1.1, "FULL only", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.set_ylabel("refresh time, ms (log scale)")
    ax.set_xticks(list(x))
    ax.set_xticklabels(queries, rotation=0, fontsize=8)
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
