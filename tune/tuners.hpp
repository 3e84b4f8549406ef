#pragma once
// Which candidate to try next: DeepSpeed's three tuner types (autotuning.tuner_type) over the
// candidates the estimator kept, and its early-stopping rule. docs/tune.md, "Tuners".

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tune/search_space.hpp"

namespace shardscope::tune {

enum class TunerType { kGridSearch, kRandom, kModelBased };

/// "gridsearch", "random", "model_based" (DeepSpeed's words); throws TuneError naming `what`.
TunerType parse_tuner_type(const std::string& text, const std::string& what);
const char* tuner_type_name(TunerType type);

/// A trial the tuner has seen: the candidate (an index into the tuner's list) and its score,
/// higher better (unset for a trial that went out of memory or failed).
struct Observation {
  std::size_t candidate = 0;
  std::optional<double> score;
};

class Tuner {
 public:
  virtual ~Tuner() = default;
  /// The next candidate to run, never one in `tried`; nullopt when none is left.
  virtual std::optional<std::size_t> next(const std::vector<Observation>& observed, const std::vector<bool>& tried) = 0;
};

/// The tuner for `candidates` (their assignments give the model-based tuner its features); the
/// seed makes random choices repeatable, so a resumed run picks what the killed one would have.
std::unique_ptr<Tuner> make_tuner(TunerType type, const std::vector<Assignment>& candidates, std::uint64_t seed);

/// Numeric features of each assignment: numbers as log2(1 + x), booleans 0/1, other values one-hot
/// per key; a leading 1 for the intercept. The model-based tuner's inputs.
std::vector<std::vector<double>> assignment_features(const std::vector<Assignment>& candidates);

/// Ridge regression (closed form, lambda on all weights but the intercept): the weights that fit
/// `y` from the rows of `x`. The model-based tuner's surrogate.
std::vector<double> fit_ridge(const std::vector<std::vector<double>>& x, const std::vector<double>& y, double lambda);

/// tuner_early_stopping: stop once N trials in a row after the best one did not beat it
/// (`best_position` counts run trials from 0; N <= 0 never stops). DeepSpeed's base_tuner stops at
/// run >= best_iter + N, one trial earlier; docs/tune.md says why ShardScope counts N whole trials.
bool should_stop_early(std::size_t trials_run, std::optional<std::size_t> best_position, int early_stopping);

}  // namespace shardscope::tune
