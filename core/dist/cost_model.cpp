#include "dist/cost_model.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace gl::dist {

CostTerms allreduce_cost_terms(AllReduceAlgo algo, double bytes, int n) {
    if (n <= 1) return {};
    const double N = n;
    switch (algo) {
        case AllReduceAlgo::ReduceBroadcast: return {2 * (N - 1), 2 * (N - 1) * bytes, (N - 1) * bytes};
        case AllReduceAlgo::RecursiveDoubling: {
            const double rounds = std::floor(std::log2(N));
            const double extra = std::exp2(rounds) < N ? 1.0 : 0.0;  // fold in, and back out
            return {rounds + 2 * extra, (rounds + 2 * extra) * bytes, (rounds + extra) * bytes};
        }
        case AllReduceAlgo::Ring:
        case AllReduceAlgo::Library: return {2 * (N - 1), 2 * (N - 1) / N * bytes, (N - 1) / N * bytes};
    }
    return {};
}

double predict_seconds(const CostModel& m, AllReduceAlgo algo, double bytes, int n) {
    const CostTerms t = allreduce_cost_terms(algo, bytes, n);
    return m.alpha_s * t.messages + m.beta_s_per_byte * t.bytes + m.gamma_s_per_byte * t.reduced;
}

namespace {

// Solves the least-squares problem restricted to the unknowns in `use` (normal
// equations, Gaussian elimination); returns false if a coefficient comes out negative.
bool solve_subset(const std::vector<std::array<double, 3>>& rows, const std::vector<double>& rhs,
                  const std::array<bool, 3>& use, std::array<double, 3>& out) {
    std::array<int, 3> idx{};
    int k = 0;
    for (int j = 0; j < 3; ++j)
        if (use[j]) idx[k++] = j;
    double a[3][4] = {};
    for (std::size_t i = 0; i < rows.size(); ++i)
        for (int r = 0; r < k; ++r) {
            for (int c = 0; c < k; ++c) a[r][c] += rows[i][idx[r]] * rows[i][idx[c]];
            a[r][k] += rows[i][idx[r]] * rhs[i];
        }
    for (int col = 0; col < k; ++col) {
        int pivot = col;
        for (int r = col + 1; r < k; ++r)
            if (std::abs(a[r][col]) > std::abs(a[pivot][col])) pivot = r;
        if (std::abs(a[pivot][col]) < 1e-300) return false;
        for (int c = 0; c <= k; ++c) std::swap(a[col][c], a[pivot][c]);
        for (int r = 0; r < k; ++r) {
            if (r == col) continue;
            const double f = a[r][col] / a[col][col];
            for (int c = col; c <= k; ++c) a[r][c] -= f * a[col][c];
        }
    }
    out = {0, 0, 0};
    for (int r = 0; r < k; ++r) {
        out[idx[r]] = a[r][k] / a[r][r];
        if (out[idx[r]] < 0) return false;
    }
    return true;
}

}  // namespace

CostModel fit_cost_model(const std::vector<CostSample>& samples) {
    check(samples.size() >= 3, "fit_cost_model: need at least 3 measurements (got " +
                                   std::to_string(samples.size()) + ")");
    // Relative error: divide each equation by its measured time.
    std::vector<std::array<double, 3>> rows;
    std::vector<double> rhs;
    for (const CostSample& s : samples) {
        check(s.seconds > 0, "fit_cost_model: a measured time must be positive");
        const CostTerms t = allreduce_cost_terms(s.algo, s.bytes, s.workers);
        rows.push_back({t.messages / s.seconds, t.bytes / s.seconds, t.reduced / s.seconds});
        rhs.push_back(1.0);
    }
    // Non-negativity: try every subset of the unknowns, keep the best admissible fit.
    double best_error = std::numeric_limits<double>::infinity();
    std::array<double, 3> best{0, 0, 0};
    for (int mask = 1; mask < 8; ++mask) {
        const std::array<bool, 3> use{(mask & 1) != 0, (mask & 2) != 0, (mask & 4) != 0};
        std::array<double, 3> x{};
        if (!solve_subset(rows, rhs, use, x)) continue;
        double err = 0;
        for (std::size_t i = 0; i < rows.size(); ++i) {
            const double r = rows[i][0] * x[0] + rows[i][1] * x[1] + rows[i][2] * x[2] - 1.0;
            err += r * r;
        }
        if (err < best_error) {
            best_error = err;
            best = x;
        }
    }
    return {best[0], best[1], best[2]};
}

}  // namespace gl::dist
