"""The statistics every summary uses: percentiles as numpy interpolates them,
medians, geometric means, and speedups written as the paper writes them."""

import math
import statistics


def quantile(sorted_xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_xs:
        raise ValueError("quantile of nothing")
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def describe(xs):
    """(median, p10, p90, spread_pct) of a list of numbers."""
    s = sorted(xs)
    med = statistics.median(s)
    p10, p90 = quantile(s, 0.1), quantile(s, 0.9)
    spread = (p90 - p10) / med * 100.0 if med > 0 else 0.0
    return med, p10, p90, spread


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    if not xs:
        return float("nan")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fmt_speedup(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}" if x >= 1.0 else f"1/{1.0 / x:.3f}"
