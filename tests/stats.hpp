// tests/stats.hpp
// Two-sample statistical tests for comparing distributions (episode returns and lengths of our envs
// against the reference package's): Kolmogorov-Smirnov with its asymptotic p-value, and Welch's
// test of equal means (normal approximation, for samples of hundreds or more).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace rlk_test {

struct two_sample_result {
  double statistic;  ///< KS: sup |F1 - F2|; Welch: the z statistic
  double p_value;    ///< probability of a statistic at least this extreme if both samples share a distribution
};

/// Two-sample Kolmogorov-Smirnov test (asymptotic distribution with Stephens' small-sample
/// correction; conservative for discrete data such as episode lengths).
inline two_sample_result ks_two_sample(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  const double na = double(a.size()), nb = double(b.size());
  std::size_t i = 0, j = 0;
  double d = 0;
  while (i < a.size() && j < b.size()) {
    const double x = std::min(a[i], b[j]);
    while (i < a.size() && a[i] <= x) ++i;
    while (j < b.size() && b[j] <= x) ++j;
    d = std::max(d, std::fabs(double(i) / na - double(j) / nb));
  }
  const double ne = na * nb / (na + nb);
  const double lambda = (std::sqrt(ne) + 0.12 + 0.11 / std::sqrt(ne)) * d;
  double p = 0;
  for (int k = 1; k <= 100; ++k) {
    const double term = 2.0 * ((k % 2) ? 1.0 : -1.0) * std::exp(-2.0 * k * k * lambda * lambda);
    p += term;
    if (std::fabs(term) < 1e-12) break;
  }
  return {d, std::clamp(lambda < 1e-3 ? 1.0 : p, 0.0, 1.0)};
}

/// Welch's two-sample test of equal means (two-sided, normal approximation of the t statistic).
inline two_sample_result welch_means(const std::vector<double>& a, const std::vector<double>& b) {
  auto mean_var = [](const std::vector<double>& x, double& mean, double& var) {
    mean = 0;
    for (double v : x) mean += v;
    mean /= double(x.size());
    var = 0;
    for (double v : x) var += (v - mean) * (v - mean);
    var /= double(x.size() - 1);
  };
  double ma, va, mb, vb;
  mean_var(a, ma, va);
  mean_var(b, mb, vb);
  const double se = std::sqrt(va / double(a.size()) + vb / double(b.size()));
  if (se == 0) return {0.0, ma == mb ? 1.0 : 0.0};
  const double z = (ma - mb) / se;
  return {z, std::erfc(std::fabs(z) / std::sqrt(2.0))};
}

/// @brief How many episodes of ours give a two-sample comparison against `reference` episodes the
/// effective sample size `effective`.
///
/// Both tests above see a difference through the effective size n_a n_b / (n_a + n_b): the KS
/// statistic's null distribution scales with its square root, and Welch's standard error is
/// sigma * sqrt(1/n_a + 1/n_b). The reference episodes (a CSV the reference package wrote once)
/// cost nothing at test time and ours cost the test's time, so a large reference sample buys the
/// same power with fewer episodes of ours: 1/n_ours = 1/effective - 1/reference.
inline std::size_t episodes_for_effective_size(double effective, std::size_t reference) {
  const double inv = 1.0 / effective - 1.0 / double(reference);
  if (!(inv > 0)) return 0;  // the reference alone is not large enough: the caller must fail
  return std::size_t(std::ceil(1.0 / inv - 1e-9));
}

}  // namespace rlk_test
