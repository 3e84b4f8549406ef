#include "sessions/import/trainer_log.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "sessions/import/file_bytes.hpp"
#include "sessions/import/import_error.hpp"
#include "sessions/import/text_fields.hpp"

namespace shardscope::sessions {
namespace fs = std::filesystem;
namespace {

// A Trainer's log dict is a few hundred bytes; bounding what one attempt reads keeps a hostile line
// (every '{' opening a nest) linear in practice, and lines are read as the log parser reads them.
constexpr std::size_t kMaxDictBytes = 4u << 10;  ///< a log dict longer than this is not the Trainer's
constexpr std::size_t kMaxLineBytes = 64u << 10;

// A Python value as printed: a quoted string (the Trainer's "{v:.4g}"), a bare number, or a
// wrapper such as numpy 2's "np.float64(2.5)". Returns its number, if it has one.
std::optional<double> python_number(std::string_view token) {
  token = trim(token);
  if (token.size() >= 2 && (token.front() == '\'' || token.front() == '"') && token.back() == token.front())
    return parse_real(token.substr(1, token.size() - 2));
  const auto open = token.find('(');
  if (open != std::string_view::npos && token.back() == ')') return parse_real(token.substr(open + 1, token.size() - open - 2));
  return parse_real(token);
}

// Index past the quoted string starting at text[at] (a quote), or npos when it does not end.
std::size_t skip_quoted(std::string_view text, std::size_t at) {
  const char quote = text[at];
  for (std::size_t i = at + 1; i < text.size() && i - at < kMaxDictBytes; ++i) {
    if (text[i] == '\\') ++i;
    else if (text[i] == quote) return i + 1;
  }
  return std::string_view::npos;
}

// Index of the ',' or closing '}' that ends the value starting at `at` (nested brackets and
// strings skipped), or npos.
std::size_t value_end(std::string_view text, std::size_t at) {
  int depth = 0;
  for (std::size_t i = at; i < text.size() && i - at < kMaxDictBytes; ++i) {
    const char c = text[i];
    if (c == '\'' || c == '"') {
      i = skip_quoted(text, i);
      if (i == std::string_view::npos) return i;
      --i;
    } else if (c == '[' || c == '(' || c == '{') {
      ++depth;
    } else if (c == ']' || c == ')' || (c == '}' && depth > 0)) {
      --depth;
    } else if (depth == 0 && (c == ',' || c == '}')) {
      return i;
    }
  }
  return std::string_view::npos;
}

// The dict literal starting at text[at] == '{': its numeric entries; `end` gets the index past
// its '}'. nullopt when it is not a dict of quoted keys.
std::optional<std::map<std::string, double>> parse_dict_at(std::string_view text, std::size_t at, std::size_t& end) {
  std::map<std::string, double> out;
  std::size_t i = at + 1;
  auto skip_space = [&] { while (i < text.size() && text[i] == ' ') ++i; };
  skip_space();
  if (i < text.size() && text[i] == '}') return end = i + 1, out;
  while (i < text.size() && i - at < kMaxDictBytes) {
    if (text[i] != '\'' && text[i] != '"') return std::nullopt;
    const std::size_t key_end = skip_quoted(text, i);
    if (key_end == std::string_view::npos) return std::nullopt;
    const std::string key(text.substr(i + 1, key_end - i - 2));
    i = key_end;
    skip_space();
    if (i >= text.size() || text[i] != ':') return std::nullopt;
    const std::size_t stop = value_end(text, ++i);
    if (stop == std::string_view::npos) return std::nullopt;
    if (auto number = python_number(text.substr(i, stop - i))) out[key] = *number;
    i = stop + 1;
    if (text[stop] == '}') return end = i, out;
    skip_space();
  }
  return std::nullopt;
}

// tqdm's bar: "...| 12/30 [00:01<00:02, 6.9it/s]"; the position of its '|' and n.
std::optional<std::pair<std::size_t, std::int64_t>> find_bar(std::string_view text, std::size_t from) {
  for (std::size_t at = text.find("| ", from); at != std::string_view::npos; at = text.find("| ", at + 1)) {
    std::size_t i = at + 2;
    const std::size_t digits = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == digits || i >= text.size() || text[i] != '/') continue;
    const auto n = parse_integer(text.substr(digits, i - digits));
    const std::size_t total = ++i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (n && i > total && (i == text.size() || text[i] == ' ')) return std::make_pair(at, *n);
  }
  return std::nullopt;
}

std::string series_name(const std::string& key) {
  if (starts_with(key, "eval_")) return "eval/" + key.substr(5);
  return "trainer/" + key;
}

}  // namespace

std::optional<std::map<std::string, double>> parse_python_dict_numbers(std::string_view text) {
  for (std::size_t at = text.find('{'); at != std::string_view::npos; at = text.find('{', at + 1)) {
    std::size_t end = 0;
    if (auto dict = parse_dict_at(text, at, end); dict && !dict->empty()) return dict;
  }
  return std::nullopt;
}

bool is_trainer_log(const std::map<std::string, double>& values) {
  for (const char* key : {"loss", "eval_loss", "train_runtime", "learning_rate", "grad_norm"})
    if (values.count(key)) return true;
  return false;
}

std::vector<TrainerLogRecord> parse_trainer_state(std::string_view json_text, const std::string& file) {
  const auto doc = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("log_history") || !doc["log_history"].is_array())
    throw ImportError(file + ": not a trainer_state.json (no \"log_history\" list); pass the file the Hugging Face "
                             "Trainer writes in output_dir or a checkpoint-N folder");
  std::vector<TrainerLogRecord> out;
  for (const auto& entry : doc["log_history"]) {
    if (!entry.is_object() || !entry.contains("step") || !entry["step"].is_number_integer()) continue;
    TrainerLogRecord r;
    r.step = entry["step"].get<std::int64_t>();
    for (const auto& [key, value] : entry.items())
      if (key != "step" && value.is_number()) r.values[key] = value.get<double>();
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TrainerLogRecord> read_trainer_state(const std::string& path) {
  return parse_trainer_state(read_file_bytes(path, kMaxTextFileBytes), path);
}

std::optional<std::string> find_trainer_state(const std::string& folder, double since) {
  std::error_code error;
  std::optional<std::string> best;
  std::int64_t best_step = -1;
  std::size_t visited = 0;
  for (auto it = fs::recursive_directory_iterator(folder, fs::directory_options::skip_permission_denied, error);
       !error && it != fs::recursive_directory_iterator() && ++visited < 50000; it.increment(error)) {
    const fs::path& p = it->path();
    if (it.depth() >= 2 || p.filename().string().rfind('.', 0) == 0) it.disable_recursion_pending();
    if (p.filename() != "trainer_state.json" || !it->is_regular_file(error)) continue;
    const auto written = fs::last_write_time(p, error);
    const double seconds = std::chrono::duration<double>(written.time_since_epoch()).count() -
                           std::chrono::duration<double>(fs::file_time_type::clock::now().time_since_epoch()).count() +
                           static_cast<double>(std::time(nullptr));
    if (error || seconds + 1 < since) continue;
    try {
      const auto text = read_file_bytes(p.string(), kMaxTextFileBytes);
      const auto doc = nlohmann::json::parse(text, nullptr, false);
      const std::int64_t step = doc.is_object() ? doc.value("global_step", std::int64_t{0}) : 0;
      if (step > best_step) best_step = step, best = p.string();
    } catch (const std::exception&) {  // unreadable: not the one
    }
  }
  return best;
}

bool is_trainer_tensorboard_series(const std::string& tag) {
  // DeepSpeed's monitors write "Train/Samples/..." and "Train/Eigenvalues/..." at a sample count;
  // everything else is the script's or its library's, at a step.
  return !tag.empty() && !starts_with(tag, "Train/");
}

std::vector<TrainerLogRecord> trainer_records_from_tensorboard(const std::vector<MonitorSeries>& series) {
  std::map<std::int64_t, TrainerLogRecord> by_step;
  for (const auto& s : series) {
    if (!is_trainer_tensorboard_series(s.name)) continue;
    const auto slash = s.name.find('/');
    const std::string prefix = slash == std::string::npos ? "" : s.name.substr(0, slash);
    const std::string rest = s.name.substr(slash == std::string::npos ? 0 : slash + 1);
    const std::string key = prefix.empty() || prefix == "train" ? rest
                            : prefix == "eval" || prefix == "test" ? prefix + "_" + rest
                                                                   : s.name;
    for (const auto& p : s.points) {
      auto& record = by_step[p.x];
      record.step = p.x;
      record.values[key] = p.value;
    }
  }
  // TensorBoard keeps no dicts: at the last step the end-of-training summary's scalars sit beside
  // that step's log. They become a record of their own, as the Trainer logged them.
  std::vector<TrainerLogRecord> out;
  for (auto& [step, record] : by_step) {
    TrainerLogRecord summary{step, {}};
    if (record.values.count("train_runtime"))
      for (const char* key : {"train_runtime", "train_samples_per_second", "train_steps_per_second", "total_flos",
                              "train_loss"})
        if (auto it = record.values.find(key); it != record.values.end()) {
          summary.values.insert(*it);
          record.values.erase(it);
        }
    if (!record.values.empty()) out.push_back(std::move(record));
    if (!summary.values.empty()) out.push_back(std::move(summary));
  }
  return out;
}

std::vector<Event> trainer_records_to_events(const std::vector<TrainerLogRecord>& records,
                                             const TrainerEventOptions& options) {
  std::vector<Event> out;
  for (const auto& r : records) {
    if (r.step < 0) continue;
    StepMetrics m{};
    m.step = r.step;
    StepMetrics lr{};
    lr.step = r.step + (options.lr_is_next_steps ? 1 : 0);
    // The Trainer's end-of-training summary has its run average as train_loss; an Accelerate
    // script's accelerator.log({"train_loss": ...}) is the step's loss.
    const bool summary = r.values.count("train_runtime") > 0;
    for (const auto& [key, value] : r.values) {
      if (!summary && (key == "loss" || key == "train_loss")) m.loss = value;
      else if (!summary && key == "grad_norm") m.grad_norm = value;
      else if (!summary && (key == "learning_rate" || key == "lr")) lr.lr = value;
      else out.push_back(SeriesPoint{0, r.step, series_name(key), value});
    }
    if (m.loss || m.grad_norm) out.push_back(m);
    if (lr.lr) out.push_back(lr);
  }
  return out;
}

void TrainerOutputReader::feed_line(std::string_view line) {
  line = line.substr(0, kMaxLineBytes);
  std::size_t at = 0;
  while (at < line.size()) {
    const auto bar = find_bar(line, at);
    const std::size_t dict = line.find('{', at);
    if (bar && (dict == std::string_view::npos || bar->first < dict)) {
      bar_seen_ = true;
      if (pending_) complete_pending(bar->second);
      at = bar->first + 2;
      continue;
    }
    if (dict == std::string_view::npos) break;
    std::size_t end = dict + 1;
    auto values = parse_dict_at(line, dict, end);
    if (values && is_trainer_log(*values)) {
      if (pending_) complete_pending(guessed_step(*pending_));
      pending_ = TrainerLogRecord{-1, std::move(*values)};
      pending_hint_ = step_hint_ ? step_hint_() : 0;
      ++seen_;
      // No bar in this output so far (it goes to another stream, or there is none): the hint is
      // as good as it gets, and the live view need not wait for the next dict.
      if (!bar_seen_ && pending_hint_ > last_step_) complete_pending(guessed_step(*pending_));
    }
    at = values ? end : dict + 1;
  }
}

void TrainerOutputReader::finish() {
  if (pending_) complete_pending(guessed_step(*pending_));
}

std::vector<TrainerLogRecord> TrainerOutputReader::take_records() {
  std::vector<TrainerLogRecord> out;
  out.swap(done_);
  return out;
}

// Without a bar (PrinterCallback, disable_tqdm, or the bar on another stream than the dicts): a
// training log is at the step DeepSpeed last reported, when the caller knows one past the last,
// else one logging interval after the last; an eval or summary dict belongs to the step just logged.
std::int64_t TrainerOutputReader::guessed_step(const TrainerLogRecord& record) const {
  if (!record.values.count("loss")) return std::max<std::int64_t>(last_step_, 1);
  if (pending_hint_ > last_step_) return pending_hint_;
  return last_step_ + last_interval_;
}

void TrainerOutputReader::complete_pending(std::int64_t step) {
  TrainerLogRecord record = std::move(*pending_);
  pending_.reset();
  record.step = step;
  if (record.values.count("loss") && step > last_step_) last_interval_ = step - last_step_;
  last_step_ = std::max(last_step_, step);
  done_.push_back(std::move(record));
}

}  // namespace shardscope::sessions
