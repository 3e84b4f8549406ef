#include "tune/tuners.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "tune/tune_error.hpp"

namespace shardscope::tune {
namespace {

std::optional<std::size_t> first_untried(const std::vector<std::size_t>& order, const std::vector<bool>& tried) {
  for (const std::size_t c : order)
    if (!tried[c]) return c;
  return std::nullopt;
}

class GridTuner : public Tuner {
 public:
  explicit GridTuner(std::size_t n) : order_(n) { std::iota(order_.begin(), order_.end(), 0); }
  std::optional<std::size_t> next(const std::vector<Observation>&, const std::vector<bool>& tried) override {
    return first_untried(order_, tried);
  }

 private:
  std::vector<std::size_t> order_;
};

class RandomTuner : public Tuner {
 public:
  RandomTuner(std::size_t n, std::uint64_t seed) : order_(n) {
    std::iota(order_.begin(), order_.end(), 0);
    std::mt19937_64 rng(seed);
    std::shuffle(order_.begin(), order_.end(), rng);
  }
  std::optional<std::size_t> next(const std::vector<Observation>&, const std::vector<bool>& tried) override {
    return first_untried(order_, tried);
  }

 private:
  std::vector<std::size_t> order_;
};

// DeepSpeed's ModelBasedTuner: INIT_NUM (2) random trials, then the cost model's best guess, with
// a random pick 20% of the time (random_exploration_ratio). Its XGBoost ranking model is replaced
// by ridge regression on the features below: with tens of trials a linear surrogate is what the
// data can support, and it needs no dependency.
class ModelBasedTuner : public Tuner {
 public:
  ModelBasedTuner(const std::vector<Assignment>& candidates, std::uint64_t seed)
      : features_(assignment_features(candidates)), random_(candidates.size(), seed), seed_(seed) {}

  std::optional<std::size_t> next(const std::vector<Observation>& observed, const std::vector<bool>& tried) override {
    std::vector<std::vector<double>> x;
    std::vector<double> y;
    for (const auto& o : observed)
      if (o.score) {
        x.push_back(features_[o.candidate]);
        y.push_back(*o.score);
      }
    // Seeded by how many trials were seen, so a resumed run makes the same choice.
    std::mt19937_64 rng(seed_ + observed.size());
    const bool explore = std::uniform_real_distribution<double>(0, 1)(rng) < kExplorationRatio;
    if (y.size() < kInitialTrials || explore) return random_.next(observed, tried);
    const auto w = fit_ridge(x, y, 1e-3);
    std::optional<std::size_t> best;
    double best_guess = -INFINITY;
    for (std::size_t c = 0; c < features_.size(); ++c) {
      if (tried[c]) continue;
      const double guess = std::inner_product(w.begin(), w.end(), features_[c].begin(), 0.0);
      if (!best || guess > best_guess) best = c, best_guess = guess;
    }
    return best;
  }

 private:
  static constexpr std::size_t kInitialTrials = 2;    // DeepSpeed's INIT_NUM
  static constexpr double kExplorationRatio = 0.2;    // DeepSpeed's random_exploration_ratio
  std::vector<std::vector<double>> features_;
  RandomTuner random_;
  std::uint64_t seed_;
};

// Gaussian elimination with partial pivoting on the (small, symmetric positive definite) normal equations.
std::vector<double> solve(std::vector<std::vector<double>> a, std::vector<double> b) {
  const std::size_t n = b.size();
  for (std::size_t col = 0; col < n; ++col) {
    std::size_t pivot = col;
    for (std::size_t r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    std::swap(a[col], a[pivot]);
    std::swap(b[col], b[pivot]);
    if (std::fabs(a[col][col]) < 1e-12) continue;  // a feature no trial varied: its weight stays 0
    for (std::size_t r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (std::size_t k = col; k < n; ++k) a[r][k] -= f * a[col][k];
      b[r] -= f * b[col];
    }
  }
  std::vector<double> x(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) x[i] = std::fabs(a[i][i]) < 1e-12 ? 0.0 : b[i] / a[i][i];
  return x;
}

}  // namespace

TunerType parse_tuner_type(const std::string& text, const std::string& what) {
  if (text == "gridsearch") return TunerType::kGridSearch;
  if (text == "random") return TunerType::kRandom;
  if (text == "model_based") return TunerType::kModelBased;
  throw TuneError(what + " '" + text + "' is not a tuner type: use gridsearch, random or model_based (DeepSpeed's names)");
}

const char* tuner_type_name(TunerType type) {
  switch (type) {
    case TunerType::kGridSearch: return "gridsearch";
    case TunerType::kRandom: return "random";
    case TunerType::kModelBased: return "model_based";
  }
  return "?";
}

std::unique_ptr<Tuner> make_tuner(TunerType type, const std::vector<Assignment>& candidates, std::uint64_t seed) {
  switch (type) {
    case TunerType::kGridSearch: return std::make_unique<GridTuner>(candidates.size());
    case TunerType::kRandom: return std::make_unique<RandomTuner>(candidates.size(), seed);
    case TunerType::kModelBased: return std::make_unique<ModelBasedTuner>(candidates, seed);
  }
  throw TuneError("unknown tuner type");
}

std::vector<std::vector<double>> assignment_features(const std::vector<Assignment>& candidates) {
  // Every (key, non-numeric value) pair seen becomes one 0/1 column.
  std::map<std::string, std::set<std::string>> categories;
  for (const auto& a : candidates)
    for (const auto& [key, value] : a)
      if (!value.is_number() && !value.is_boolean()) categories[key].insert(value.dump());
  std::vector<std::vector<double>> rows;
  for (const auto& a : candidates) {
    std::vector<double> row{1.0};
    for (const auto& [key, value] : a) {
      if (value.is_boolean()) row.push_back(value.get<bool>() ? 1.0 : 0.0);
      else if (value.is_number()) row.push_back(std::log2(1.0 + std::max(0.0, value.get<double>())));
      else
        for (const auto& category : categories[key]) row.push_back(value.dump() == category ? 1.0 : 0.0);
    }
    rows.push_back(std::move(row));
  }
  return rows;
}

std::vector<double> fit_ridge(const std::vector<std::vector<double>>& x, const std::vector<double>& y, double lambda) {
  if (x.empty()) return {};
  const std::size_t n = x.front().size();
  std::vector<std::vector<double>> a(n, std::vector<double>(n, 0.0));
  std::vector<double> b(n, 0.0);
  for (std::size_t r = 0; r < x.size(); ++r)
    for (std::size_t i = 0; i < n; ++i) {
      b[i] += x[r][i] * y[r];
      for (std::size_t j = 0; j < n; ++j) a[i][j] += x[r][i] * x[r][j];
    }
  for (std::size_t i = 1; i < n; ++i) a[i][i] += lambda;
  return solve(a, b);
}

bool should_stop_early(std::size_t trials_run, std::optional<std::size_t> best_position, int early_stopping) {
  if (early_stopping <= 0 || !best_position) return false;
  return trials_run >= *best_position + 1 + static_cast<std::size_t>(early_stopping);
}

}  // namespace shardscope::tune
