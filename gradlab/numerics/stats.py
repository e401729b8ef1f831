"""The few statistical tests the init_stats and dropout checks need, from scipy.special's
distribution functions (scipy.stats gives the same numbers but takes ~1 s to import, which
every `gradlab check all` would pay). Each returns a two-sided p-value."""
import numpy as np


def normal_two_sided(z):
    """P(|N(0, 1)| >= |z|)."""
    from scipy.special import ndtr
    return float(2 * ndtr(-abs(z)))


def binomial_two_sided(k, n, p):
    """Two-sided exact binomial test of k successes in n trials with probability p (twice the
    smaller tail, capped at 1)."""
    from scipy.special import bdtr, bdtrc
    lower = bdtr(k, n, p)                         # P(X <= k)
    upper = bdtrc(k - 1, n, p) if k > 0 else 1.0  # P(X >= k)
    return float(min(1.0, 2 * min(lower, upper)))


def ks_test(x, cdf):
    """(statistic D, p-value) of the one-sample Kolmogorov-Smirnov test of x against `cdf`, with
    Kolmogorov's asymptotic distribution (for the 16,384 draws used here it matches scipy.stats.kstest's
    exact p-value to ~1e-2 relative)."""
    from scipy.special import kolmogorov
    xs = np.sort(np.asarray(x, dtype=np.float64))
    n = xs.size
    f = cdf(xs)
    d = max(float((np.arange(1, n + 1) / n - f).max()), float((f - np.arange(n) / n).max()))
    return d, float(kolmogorov(np.sqrt(n) * d))
