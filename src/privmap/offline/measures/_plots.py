"""Figures of the evaluation suite, drawn with matplotlib when it is installed.

matplotlib is an optional extra (``pip install privmap[plot]``): it is imported
lazily, with the non-interactive Agg backend, and :func:`have_matplotlib` lets
commands fall back to printing tables. Every function writes one PNG and
returns its path.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

import numpy as np


def have_matplotlib() -> bool:
    """Whether matplotlib can be imported."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def pyplot():
    """matplotlib.pyplot on the non-interactive Agg backend (needs matplotlib: :func:`have_matplotlib`)."""
    import matplotlib
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


#: Characters of a title line (:func:`plot_curve`): a longer title is wrapped, not cut by the figure.
TITLE_WIDTH = 70
#: Public columns a curve's default title names before it counts the rest (:func:`curve_title`).
TITLE_COLUMNS = 6


def curve_title(stem: str, private: Sequence[str], public: Sequence[str]) -> str:
    """The default title of a curve of ``stem``'s rows: the private column(s) against the public ones.

    The first :data:`TITLE_COLUMNS` are named and the rest counted (whole names, never cut).
    """
    shown = ", ".join(public[:TITLE_COLUMNS]) + (f" and {len(public) - TITLE_COLUMNS} more"
                                                 if len(public) > TITLE_COLUMNS else "")
    return f"{stem}: {' x '.join(private)} vs {shown}"


#: Markers of the per-column lines of a joint sweep (:func:`plot_curve`'s ``columns``).
_COLUMN_MARKERS = ("v", "^", "D", "P", "X", "*")


def _finite(points, key):
    return [p for p in points if isinstance(p.get(key), (int, float)) and math.isfinite(p[key])]


def plot_curve(points: Sequence[dict], path, *, title: str | None = "Privacy-distortion trade-off",
               x: str = "distortion", xlabel: str | None = None, auc: bool = True,
               reference: dict | None = None, label_fmt: str = "K = {k}", baselines: dict | None = None,
               columns: Sequence[str] = ()) -> str:
    """Leakage against distortion, one line per K, with the attacker's ROC AUC on a second axis.

    ``title`` is wrapped to lines of :data:`TITLE_WIDTH` characters.

    Parameters
    ----------
    points : dicts from :func:`privmap.offline.evaluation._curve.sweep` (keys k, delta, leakage_bits, distortion, lr_auc)
    x : key of the x values (``distortion`` on raw rows, ``distortion_symbols``, ``delta``)
    reference : optional {"x": [...], "y": [...], "label": str}, drawn as black markers (e.g. the paper's points)
    label_fmt : format of a line's label; K = 0 is labelled "no quantization"
    baselines : optional, from :func:`privmap.offline.evaluation._baselines.baselines`: the constant
        release drawn at (its distortion, 0 bits), randomized response as triangles on the AUC axis.
        Points with ``codebook`` = 1 are drawn solid, seed 000's mapping (``codebook`` = 0) dotted.
    columns : names of private columns protected together (a joint sweep): besides the joint's line,
        each column's leakage alone (the points' ``leakage_bits[COL]``) is one more line per K, in
        the K's colour with its own marker, dash-dotted.
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax2 = ax.twinx() if auc else None
    ks = sorted({p["k"] for p in points})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    series = sorted({(p["k"], p.get("codebook", 0)) for p in points})
    both = len({c for _, c in series}) > 1
    for k, codebook in series:
        pts = sorted(_finite([p for p in points if p["k"] == k and p.get("codebook", 0) == codebook
                              and p.get("status") == "optimal"], "leakage_bits"), key=lambda p: p[x])
        if not pts:
            continue
        color = colors[ks.index(k) % len(colors)]
        label = "no quantization" if k == 0 else label_fmt.format(k=k)
        if both:
            label += ", codebook" if codebook else ", seed 000 (no codebook)"
        style = "o-" if codebook or not both else "o:"
        ax.plot([p[x] for p in pts], [p["leakage_bits"] for p in pts], style, color=color, ms=3, label=label)
        for m, name in enumerate(columns if (codebook or not both) else ()):
            key = f"leakage_bits[{name}]"
            own = _finite(pts, key)
            if own:
                ax.plot([p[x] for p in own], [p[key] for p in own], "-.", marker=_COLUMN_MARKERS[m % len(_COLUMN_MARKERS)],
                        color=color, ms=4, alpha=0.8, label=f"{label}: {name} alone")
        robust = _finite(pts, "robust_leakage_bits") if (codebook or not both) else []
        if robust:
            ax.plot([p[x] for p in robust], [p["robust_leakage_bits"] for p in robust], "s--", color=color, ms=3,
                    alpha=0.7, label=f"{label}: certified worst case over the confidence set")
        if ax2 is not None and (codebook or not both):
            a = _finite(pts, "lr_auc")
            if a:
                ax2.plot([p[x] for p in a], [p["lr_auc"] for p in a], "x--", color=color, ms=4, alpha=0.6,
                         label=f"{label}: attacker AUC")
    if reference:
        ax.plot(reference["x"], reference["y"], "ks", mfc="none", ms=7, label=reference.get("label", "paper"))
    if baselines:
        const = baselines["constant"]
        ax.plot([const["distortion"]], [0.0], "k*", ms=11, clip_on=False, label="constant release (0 bits)")
        rr = [p for p in baselines["randomized_response"] if p.get("roc_auc") is not None]
        if ax2 is not None and rr:
            ax2.plot([p["distortion"] for p in rr], [p["roc_auc"] for p in rr], "k^", ms=6, mfc="none",
                     label="randomized response (AUC)")
            for p in rr:
                ax2.annotate(f"eps {p['epsilon_per_feature']:g}", (p["distortion"], p["roc_auc"]), fontsize=7,
                             xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel(xlabel or {"distortion": "distortion on raw rows", "delta": "Delta",
                             "distortion_symbols": "distortion on symbols"}.get(x, x))
    ax.set_ylabel("leakage I(A; released) [bits]")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if ax2 is not None:
        ax2.set_ylabel("logistic-regression attacker ROC AUC (dashed)")
        ax2.set_ylim(0.4, 1.0)
        ax2.axhline(0.5, color="grey", lw=0.8, ls=":")
    ax.legend(handles, labels, loc="upper right", fontsize=8)
    ax.set_title(textwrap.fill(title, TITLE_WIDTH) if title else title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def plot_mapping_2d(centers_2d: np.ndarray, q: np.ndarray, colors: Sequence, path, *, title: str = "",
                    sizes: np.ndarray | None = None, min_prob: float = 0.05, axis_labels=("PC 1", "PC 2"),
                    legend: Sequence[tuple[str, str]] = ()) -> str:
    """Arrows from each cluster center to the centers it is mapped to (seed 000, Fig. 6-7).

    ``centers_2d`` (K, 2) are the centers in a 2-D projection; an arrow c -> j is
    drawn for q[c, j] >= ``min_prob`` with opacity and width growing with q[c, j];
    ``colors`` gives one colour per center (for instance its majority class).
    """
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.5, 4.8))
    s = 20 + 200 * (sizes / sizes.max()) if sizes is not None else 40
    ax.scatter(centers_2d[:, 0], centers_2d[:, 1], c=list(colors), s=s, edgecolors="k", linewidths=0.5, zorder=3)
    for c in range(q.shape[0]):
        for j in np.nonzero(q[c] >= min_prob)[0]:
            if j == c:
                continue
            ax.annotate("", xy=centers_2d[j], xytext=centers_2d[c],
                        arrowprops=dict(arrowstyle="->", color="k", alpha=float(min(1.0, 0.25 + q[c, j])),
                                        lw=0.5 + 2.0 * float(q[c, j])), zorder=2)
    for name, color in legend:
        ax.scatter([], [], c=color, label=name, edgecolors="k", linewidths=0.5)
    if legend:
        ax.legend(fontsize=8, loc="best")
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_title(title)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)


def plot_roc(curves: Sequence[tuple[str, np.ndarray, np.ndarray]], path, *, title: str = "ROC of the attacker") -> str:
    """ROC curves, each given as (label, false-positive rates, true-positive rates)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.2, 5))
    for label, fpr, tpr in curves:
        ax.plot(fpr, tpr, label=label)
    ax.plot([0, 1], [0, 1], color="grey", ls=":", label="uninformed guess")
    ax.set_xlabel("false-positive rate")
    ax.set_ylabel("true-positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_title(title)
    ax.legend(fontsize=8, loc="lower right")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return str(path)
