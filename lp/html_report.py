"""The report as one self-contained HTML file: inline CSS, inline SVG plots, no script and no
network fetch, so it opens offline, attaches to an e-mail and archives as it is.

:func:`render_report` turns the report of one run (:mod:`llamp.lp.report`: prediction, sweep
of L, critical latencies, x% tolerances, critical path) into HTML;
:func:`render_comparison` does the same for a :class:`~llamp.lp.compare.Comparison`. Plots are
drawn here as SVG polylines (``T(L)`` is piecewise linear, so the polyline through the sweep
and the critical latencies is exact between them).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from datetime import UTC, datetime

import numpy as np

from llamp.config import format_ns, format_value
from llamp.lp.compare import PARTS, Comparison
from llamp.lp.report import ReportData
from llamp.lp.tolerance import Tolerance
from llamp.params import LogGPS

#: Line colours (colour-blind safe, Okabe–Ito).
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000")
#: Colours of the critical-path parts.
PART_COLOURS = {
    "compute": "#0072B2",
    "overhead": "#E69F00",
    "latency": "#D55E00",
    "bandwidth": "#009E73",
}
#: Critical latencies listed in the report's table (all of them are in the JSON report).
MAX_LISTED = 50
#: Critical-latency evaluations of a report built for a UI download: about 15 s at 10^6 vertices
#: (0.075 s each, ``benchmarks/bench_compare.py``); intervals left are listed in the report, and
#: ``llamp export-report --max-evaluations all`` resolves them all.
QUICK_EVALUATIONS = 200

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;
border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em}
th,td{border:1px solid #ddd;padding:.25em .6em;text-align:right}
th{background:#f4f6f8}td.l,th.l{text-align:left}
.meta{color:#555;font-size:.92em}.figs{display:flex;flex-wrap:wrap;gap:1.5em}
.metric{display:inline-block;margin:0 2em .6em 0}.metric b{display:block;font-size:1.35em}
.note{color:#8a5300}svg{background:#fff}svg text{font-family:inherit;font-size:11px}
"""


# ---------------------------------------------------------------------------- SVG
def _nice_ticks(lo: float, hi: float, count: int = 5) -> list[float]:
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(int((hi - first) / step + 1e-9) + 1)]


def _scale_ns(values: np.ndarray) -> tuple[float, str]:
    top = float(np.nanmax(np.abs(values))) if values.size else 0.0
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if top >= scale:
            return scale, unit
    return 1.0, "ns"


def svg_lines(
    series: Sequence[tuple[str, Sequence[float], Sequence[float]]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    x_is_ns: bool = True,
    y_is_ns: bool = True,
    step: bool = False,
    from_zero: bool = False,
    width: int = 520,
    height: int = 320,
) -> str:
    """An SVG line plot of ``series`` = [(name, xs, ys)], one colour each, with a legend.

    ``step``: draw each series as a right-continuous step function (``λ_L`` between
    breakpoints). ``from_zero``: the y axis starts at 0 (counts); otherwise it spans the data,
    so a runtime that changes by 0.03 % over L is not a flat line. Axis units are chosen from the data (ns → µs, ms, s) when ``*_is_ns``.
    """
    left, right, top, bottom = 64, 16, 30, 44
    legend_rows = len(series) if len(series) > 1 else 0
    height += 16 * legend_rows
    xs_all = np.concatenate([np.asarray(x, float) for _, x, _ in series] or [np.zeros(1)])
    ys_all = np.concatenate([np.asarray(y, float) for _, _, y in series] or [np.zeros(1)])
    finite = np.isfinite(ys_all)
    ys_all = ys_all[finite] if finite.any() else np.zeros(1)
    xscale, xunit = _scale_ns(xs_all) if x_is_ns else (1.0, "")
    yscale, yunit = _scale_ns(ys_all) if y_is_ns else (1.0, "")
    x0, x1 = float(xs_all.min()) / xscale, float(xs_all.max()) / xscale
    y0, y1 = float(ys_all.min()) / yscale, float(ys_all.max()) / yscale
    if from_zero:
        y0 = min(0.0, y0)
    if x1 <= x0:
        x1 = x0 + 1.0
    if y1 <= y0:
        pad = abs(y1) * 0.05 or 1.0
        y0, y1 = y0 - pad, y1 + pad
    else:
        pad = 0.05 * (y1 - y0)
        y0, y1 = (y0 if from_zero and y0 == 0 else y0 - pad), y1 + pad
    pw = width - left - right
    ph = height - top - bottom - 16 * legend_rows

    def px(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def py(y: float) -> float:
        return top + ph - (y - y0) / (y1 - y0) * ph

    out = [
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" font-weight="bold">'
        f"{html.escape(title)}</text>",
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" stroke="#999"/>',
    ]
    for t in _nice_ticks(x0, x1):
        out.append(
            f'<line x1="{px(t):.1f}" y1="{top + ph}" x2="{px(t):.1f}" y2="{top + ph + 4}" '
            'stroke="#999"/>'
            f'<text x="{px(t):.1f}" y="{top + ph + 16}" text-anchor="middle">{t:g}</text>'
        )
    for t in _nice_ticks(y0, y1):
        out.append(
            f'<line x1="{left}" y1="{py(t):.1f}" x2="{left + pw}" y2="{py(t):.1f}" '
            'stroke="#eee"/>'
            f'<text x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    xl = f"{xlabel} ({xunit})" if xunit else xlabel
    yl = f"{ylabel} ({yunit})" if yunit else ylabel
    out.append(
        f'<text x="{left + pw / 2}" y="{top + ph + 34}" text-anchor="middle">'
        f"{html.escape(xl)}</text>"
        f'<text x="14" y="{top + ph / 2}" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2})">{html.escape(yl)}</text>'
    )
    for i, (name, xs, ys) in enumerate(series):
        x = np.asarray(xs, float) / xscale
        y = np.asarray(ys, float) / yscale
        keep = np.isfinite(x) & np.isfinite(y)
        x, y = x[keep], y[keep]
        if step and x.size > 1:
            x = np.repeat(x, 2)[1:]
            y = np.repeat(y, 2)[:-1]
        colour = COLOURS[i % len(COLOURS)]
        pts = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in zip(x, y, strict=True))
        out.append(
            f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{pts}">'
            f"<title>{html.escape(name)}</title></polyline>"
        )
        if legend_rows:
            ly = top + ph + 44 + 16 * i
            out.append(
                f'<line x1="{left}" y1="{ly - 4}" x2="{left + 20}" y2="{ly - 4}" '
                f'stroke="{colour}" stroke-width="3"/>'
                f'<text x="{left + 26}" y="{ly}">{html.escape(name)}</text>'
            )
    out.append("</svg>")
    return "".join(out)


def svg_composition(rows: Sequence[tuple[str, dict[str, float]]], *, width: int = 520) -> str:
    """Horizontal stacked bars: per run, the share of ``T`` in each critical-path part."""
    left, bar, gap, top = 150, 22, 10, 28
    height = top + len(rows) * (bar + gap) + 30
    pw = width - left - 16
    out = [
        f'<svg width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="critical-path composition">',
        f'<text x="{width / 2}" y="18" text-anchor="middle" font-weight="bold">'
        "Critical-path composition (share of T)</text>",
    ]
    for i, (name, parts) in enumerate(rows):
        y = top + i * (bar + gap)
        total = sum(parts.values()) or 1.0
        x = float(left)
        label = name if len(name) <= 22 else name[:21] + "…"
        out.append(
            f'<text x="{left - 6}" y="{y + bar / 2 + 4}" text-anchor="end">'
            f"{html.escape(label)}</text>"
        )
        for part in PARTS:
            w = parts.get(part, 0.0) / total * pw
            if w <= 0:
                continue
            share = parts.get(part, 0.0) / total
            out.append(
                f'<rect x="{x:.1f}" y="{y}" width="{w:.1f}" height="{bar}" '
                f'fill="{PART_COLOURS[part]}"><title>{part}: {share:.1%}</title></rect>'
            )
            x += w
    ly = top + len(rows) * (bar + gap) + 14
    for j, part in enumerate(PARTS):
        lx = left + j * 95
        out.append(
            f'<rect x="{lx}" y="{ly - 9}" width="12" height="12" fill="{PART_COLOURS[part]}"/>'
            f'<text x="{lx + 16}" y="{ly + 1}">{part}</text>'
        )
    out.append("</svg>")
    return "".join(out)


# ---------------------------------------------------------------------------- HTML
def _order_section(data: ReportData) -> list[str]:
    """Under the schedule order: the network's own ``T`` where the report re-scheduled
    (:mod:`llamp.lp.order_check`) beside the fixed order's (the five largest differences over
    the range) and every tolerance under the network's own order."""
    rng = data.order
    if rng is None:
        return []
    over = rng.agrees_over()
    where = (
        "nowhere checked" if over is None else f"from {format_ns(over[0])} to {format_ns(over[1])}"
    )
    out = [
        f"<h2>The network's own order</h2><p>Every number above is exact for the order of the "
        f"schedule at L = {html.escape(format_ns(data.params.L))}. Re-scheduled at a value, the "
        "network's own order (LogGOPSim's under <code>--rendezvous loggopsim --nic serial</code>) "
        f"gives its own T. Over the range ({len(rng.points)} values checked of "
        f"{rng.candidates}) the own T is the fixed order's {html.escape(where)} and differs at "
        f"{len(rng.disagreements)}.</p>"
    ]
    rows = [
        (format_ns(p.value), format_ns(p.fixed_ns), format_ns(p.own_ns), f"{p.error:+.2%}")
        for p in rng.disagreements[:5]
    ]
    if rows:
        out.append(_table(("L", "T (this order)", "T (own order)", "difference"), rows))
    rows = [
        (
            name,
            f"{w.x * 100:g}%",
            format_value(name, w.fixed),
            format_ns(w.fixed_own_ns),
            w.text(lambda v, name=name: format_value(name, v)),
        )
        for name, walks in data.own_tolerance.items()
        for w in walks
    ]
    if rows:
        out.append(
            "<p>Tolerances under the network's own order (where its T, re-scheduled at each "
            "value, reaches the bound; ↑: it jumps over the bound within 10<sup>−5</sup> above; "
            "≥ a, &lt; b, a … b: the pass budget ran out first, its T was below the bound at a "
            "and above it at b):</p>"
        )
        out.append(
            _table(
                ("parameter", "x", "fixed order", "own T there", "own order"),
                rows,
            )
        )
    return out


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]], left: int = 1) -> str:
    """An HTML table; the first ``left`` columns left-aligned (names), the rest right."""

    def cell(tag: str, i: int, value: object) -> str:
        cls = ' class="l"' if i < left else ""
        return f"<{tag}{cls}>{html.escape(str(value))}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(cell("td", i, v) for i, v in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _params_text(p: LogGPS) -> str:
    bandwidth = f" ({8.0 / p.G:.4g} Gb/s)" if p.G > 0 else ""
    return (
        f"L = {format_ns(p.L)} · o = {format_ns(p.o)} · G = {p.G:.6g} ns/B{bandwidth} · "
        f"S = {p.S} B · g = {format_ns(p.g)} · " + p.model_text().replace(", ", " · ")
    )


def _page(title: str, body: list[str]) -> str:
    stamp = datetime.now(UTC).isoformat(timespec="seconds")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + f'<p class="meta">Written by llamp on {stamp}.</p></body></html>\n'
    )


def _tolerance_rows(tol: Tolerance) -> list[tuple[str, str, str, str]]:
    return [
        (
            f"{100 * lat.x:g}%",
            format_ns(lat.bound_ns),
            format_ns(lat.value),
            "∞" if math.isinf(bw.value) else f"{bw.value:.6g} ns/B",
        )
        for lat, bw in zip(tol.latency, tol.bandwidth, strict=True)
    ]


def render_report(data: ReportData) -> str:
    """The HTML page of one run's report."""
    s, pred, cp = data.summary, data.prediction, data.path
    title = f"llamp report: {s.name}"
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{s.ranks} ranks · {s.vertices:,} vertices ({s.calcs:,} calc, '
        f"{s.sends:,} send, {s.recvs:,} recv) · {s.messages:,} messages · {s.bytes:,} bytes"
        f"<br>{html.escape(_params_text(data.params))}</p>",
        "<h2>Prediction</h2>",
        "".join(
            f'<span class="metric">{name}<b>{html.escape(value)}</b></span>'
            for name, value in (
                ("T", format_ns(pred.runtime_ns)),
                ("λ_L", f"{pred.lambda_L:g}"),
                ("λ_G", f"{pred.lambda_G:g}"),
                ("λ_o", f"{pred.lambda_o:g}"),
                ("ρ_L", f"{pred.rho_L:.3%}"),
            )
        ),
        f'<p class="meta">engine: {html.escape(pred.engine)}</p>',
        "<h2>Runtime and latency sensitivity over L</h2>",
    ]
    sw, cv = data.sweep, data.curve
    body.append(
        '<div class="figs">'
        + svg_lines([(s.name, cv["L_ns"], cv["runtime_ns"])], title="T(L)", xlabel="L", ylabel="T")
        + svg_lines(
            [(s.name, cv["L_ns"], cv["lambda_L"])],
            title="λ_L = ∂T/∂L",
            xlabel="L",
            ylabel="λ_L",
            y_is_ns=False,
            step=True,
            from_zero=True,
        )
        + "</div>"
    )
    own = {p.value: p.own_ns for p in data.order.points} if data.order is not None else {}
    body.append(
        _table(
            ("L", "T", "λ_L", "ρ_L", *(["T, own order"] if data.order is not None else [])),
            [
                (
                    format_ns(r.L_ns),
                    format_ns(r.runtime_ns),
                    f"{r.lambda_L:g}",
                    f"{r.rho_L:.3%}",
                    *(
                        [format_ns(own[r.L_ns]) if r.L_ns in own else "—"]
                        if data.order is not None
                        else []
                    ),
                )
                for r in sw.itertuples(index=False)
            ],
        )
    )
    crit = data.critical
    body.append(
        f"<h2>Critical latencies in [{html.escape(format_ns(crit.lo))}, "
        f"{html.escape(format_ns(crit.hi))}]</h2>"
    )
    if crit.segments:
        rows = [
            (format_ns(seg.start), format_ns(seg.end), f"{seg.slope:g}")
            for seg in crit.segments[:MAX_LISTED]
        ]
        body.append(
            f"<p>{len(crit.critical):,} critical latencies ({crit.evaluations:,} evaluations)."
            + (
                f" The first {MAX_LISTED} pieces are listed; `llamp critical --json` gives all."
                if len(crit.segments) > MAX_LISTED
                else ""
            )
            + "</p>"
        )
        body.append(_table(("from L", "to L", "λ_L"), rows))
    if not crit.complete:
        body.append(
            f'<p class="note">{len(crit.unresolved):,} intervals were left unresolved by the '
            f"budget of {crit.max_evaluations:,} evaluations (each holds at least one more "
            "critical latency; <code>llamp export-report --max-evaluations all</code> finds "
            "them all).</p>"
        )
    body.append(f"<h2>Tolerance (relative to T = {html.escape(format_ns(pred.runtime_ns))})</h2>")
    body.append(
        _table(("x", "bound T ≤", "L tolerance", "G tolerance"), _tolerance_rows(data.tolerance))
    )
    body.extend(_order_section(data))
    totals = cp.totals
    body.append(
        f"<h2>Critical path</h2><p>{len(cp.vertices):,} vertices, {len(cp.messages):,} "
        "messages.</p>"
    )
    parts = {p: totals[f"{p}_ns"] for p in PARTS}
    body.append(svg_composition([(s.name, parts)]))
    body.append(
        _table(
            ("part", "time", "share"),
            [
                (
                    p,
                    format_ns(v),
                    f"{v / cp.runtime_ns:.2%}" if cp.runtime_ns else "—",
                )
                for p, v in parts.items()
            ],
        )
    )
    rows = [
        (
            int(r.rank),
            format_ns(r.compute_ns),
            format_ns(r.overhead_ns),
            format_ns(r.latency_ns),
            format_ns(r.bandwidth_ns),
            int(r.messages_in),
        )
        for r in cp.split.itertuples(index=False)
        if r.compute_ns + r.overhead_ns + r.latency_ns + r.bandwidth_ns > 0
    ]
    body.append(
        _table(("rank", "compute", "overhead", "latency", "bandwidth", "messages in"), rows)
    )
    return _page(title, body)


def render_comparison(comparison: Comparison) -> str:
    """The HTML page of a run comparison: overview, curves, tolerances, composition, changes.
    Each run's curves are drawn through the ends of its exact linear pieces
    (:attr:`~llamp.lp.compare.Comparison.curves`), so the lines are ``T(L)`` itself."""
    names = comparison.names
    title = "llamp comparison: " + " vs ".join(names)
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="meta">{html.escape(_params_text(comparison.params))}; baseline '
        f"{html.escape(names[0])}</p>",
        "<h2>What changed</h2><ul>",
        *(f"<li>{html.escape(line)}</li>" for line in comparison.summary()),
        "</ul><h2>Runs</h2>",
    ]
    body.append(
        _table(
            ("run", "ranks", "vertices", "messages", "bytes", "collectives", "T", "λ_L", "ρ_L"),
            [
                (
                    r.name,
                    r.ranks,
                    f"{r.vertices:,}",
                    f"{r.messages:,}",
                    f"{r.bytes:,}",
                    f"{r.collective_instances:,}",
                    format_ns(r.runtime_ns),
                    f"{r.prediction.lambda_L:g}",
                    f"{r.prediction.rho_L:.3%}",
                )
                for r in comparison.runs
            ],
        )
    )
    groups = list(comparison.curves.groupby("run", sort=False))
    body.append("<h2>T(L) and λ_L</h2>")
    body.append(
        '<div class="figs">'
        + svg_lines(
            [
                (n, f["L_ns"], (f["runtime_ns"] / r.runtime_ns - 1.0) * 100.0)
                for (n, f), r in zip(groups, comparison.runs, strict=True)
                if r.runtime_ns > 0
            ],
            title="Slowdown T(L)/T(L0) − 1",
            xlabel="L",
            ylabel="%",
            y_is_ns=False,
        )
        + svg_lines(
            [(n, f["L_ns"], f["runtime_ns"]) for n, f in groups],
            title="T(L)",
            xlabel="L",
            ylabel="T",
        )
        + svg_lines(
            [(n, f["L_ns"], f["lambda_L"]) for n, f in groups],
            title="λ_L = ∂T/∂L",
            xlabel="L",
            ylabel="λ_L",
            y_is_ns=False,
            step=True,
            from_zero=True,
        )
        + "</div>"
    )
    notes = comparison.curve_notes()
    body.append(
        '<p class="meta">Each curve is the run\'s exact T(L) (linear, λ_L constant, between two '
        "critical latencies; across an interval left unresolved, an upper bound): "
        + html.escape("; ".join(notes))
        + ".</p>"
    )
    body.append("<h2>Tolerances</h2>")
    body.append(
        _table(
            ("run", "x", "bound T ≤", "L tolerance", "G tolerance"),
            [(r.name, *row) for r in comparison.runs for row in _tolerance_rows(r.tolerance)],
        )
    )
    body.append("<h2>Critical-path composition</h2>")
    body.append(svg_composition([(r.name, r.path_ns) for r in comparison.runs]))
    body.append(
        _table(
            ("run", *PARTS, "messages on the path"),
            [
                (
                    r.name,
                    *(f"{format_ns(r.path_ns[p])} ({r.path_share(p):.1%})" for p in PARTS),
                    f"{r.path_messages:,}",
                )
                for r in comparison.runs
            ],
        )
    )
    return _page(title, body)


__all__ = [
    "render_comparison",
    "render_report",
    "svg_composition",
    "svg_lines",
]
