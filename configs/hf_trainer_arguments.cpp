// `--hf-trainer K=V,...`: the TrainingArguments the Trainer's "auto" fill reads, parsed with
// the types transformers gives them (ints, floats, bools) and its defaults for what is not given.
#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "configs/did_you_mean.hpp"
#include "configs/hf_trainer_fill.hpp"
#include "configs/number_text.hpp"

namespace shardscope::configs {
namespace {

long long parse_count(const std::string& key, const std::string& text) {
  std::size_t used = 0;
  long long value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty() || value < 1)
    throw std::invalid_argument("--hf-trainer " + key + "=" + text + ": expected a positive integer");
  return value;
}

double parse_number(const std::string& key, const std::string& text) {
  const LeadingNumber n = leading_number(text);
  if (!n.whole(text) || !std::isfinite(n.value))
    throw std::invalid_argument("--hf-trainer " + key + "=" + text + ": expected a number, e.g. 3e-5");
  return n.value;
}

bool parse_bool(const std::string& key, const std::string& text) {
  if (text == "true" || text == "True" || text == "1") return true;
  if (text == "false" || text == "False" || text == "0") return false;
  throw std::invalid_argument("--hf-trainer " + key + "=" + text + ": expected true or false");
}

using Setter = std::function<void(HfTrainerArguments&, const std::string& key, const std::string& text)>;

const std::vector<std::pair<std::string, Setter>>& setters() {
  static const std::vector<std::pair<std::string, Setter>> table = {
      {"per_device_train_batch_size", [](auto& a, auto& k, auto& t) { a.per_device_train_batch_size = parse_count(k, t); }},
      {"gradient_accumulation_steps", [](auto& a, auto& k, auto& t) { a.gradient_accumulation_steps = parse_count(k, t); }},
      {"learning_rate", [](auto& a, auto& k, auto& t) { a.learning_rate = parse_number(k, t); }},
      {"weight_decay", [](auto& a, auto& k, auto& t) { a.weight_decay = parse_number(k, t); }},
      {"adam_beta1", [](auto& a, auto& k, auto& t) { a.adam_beta1 = parse_number(k, t); }},
      {"adam_beta2", [](auto& a, auto& k, auto& t) { a.adam_beta2 = parse_number(k, t); }},
      {"adam_epsilon", [](auto& a, auto& k, auto& t) { a.adam_epsilon = parse_number(k, t); }},
      {"max_grad_norm", [](auto& a, auto& k, auto& t) { a.max_grad_norm = parse_number(k, t); }},
      {"fp16", [](auto& a, auto& k, auto& t) { a.fp16 = parse_bool(k, t); }},
      {"bf16", [](auto& a, auto& k, auto& t) { a.bf16 = parse_bool(k, t); }},
      {"warmup_steps", [](auto& a, auto& k, auto& t) {
         a.warmup_steps = parse_number(k, t);
         // TrainingArguments.__post_init__'s own check.
         if (a.warmup_steps < 0)
           throw std::invalid_argument("--hf-trainer warmup_steps=" + t + ": Got warmup_steps = " + t +
                                       ", Expected value warmup_steps >= 0");
       }},
      {"max_steps", [](auto& a, auto& k, auto& t) { a.max_steps = parse_count(k, t); }},
      {"hidden_size", [](auto& a, auto& k, auto& t) { a.hidden_size = parse_count(k, t); }},
  };
  return table;
}

void apply_argument(HfTrainerArguments& args, const std::string& item) {
  const auto equals = item.find('=');
  if (equals == std::string::npos || equals == 0)
    throw std::invalid_argument("--hf-trainer '" + item + "': expected KEY=VALUE, e.g. learning_rate=3e-5");
  const std::string key = item.substr(0, equals);
  std::vector<std::string> names;
  for (const auto& [name, set] : setters()) {
    names.push_back(name);
    if (name == key) return set(args, key, item.substr(equals + 1));
  }
  std::string message = "--hf-trainer: unknown TrainingArguments key '" + key + "'";
  if (auto guess = closest_match(key, names)) message += "; did you mean '" + *guess + "'?";
  std::string all;
  for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
  throw std::invalid_argument(message + " (known: " + all + ")");
}

}  // namespace

HfTrainerArguments parse_hf_trainer_arguments(const std::string& text) {
  HfTrainerArguments args;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ','))
    if (!item.empty()) apply_argument(args, item);
  return args;
}

nlohmann::json hf_trainer_arguments_to_json(const HfTrainerArguments& a) {
  nlohmann::json out = {{"per_device_train_batch_size", a.per_device_train_batch_size},
                        {"gradient_accumulation_steps", a.gradient_accumulation_steps},
                        {"learning_rate", a.learning_rate},
                        {"weight_decay", a.weight_decay},
                        {"adam_beta1", a.adam_beta1},
                        {"adam_beta2", a.adam_beta2},
                        {"adam_epsilon", a.adam_epsilon},
                        {"max_grad_norm", a.max_grad_norm},
                        {"fp16", a.fp16},
                        {"bf16", a.bf16},
                        {"warmup_steps", a.warmup_steps}};
  out["max_steps"] = a.max_steps ? nlohmann::json(*a.max_steps) : nlohmann::json(nullptr);
  out["hidden_size"] = a.hidden_size ? nlohmann::json(*a.hidden_size) : nlohmann::json(nullptr);
  return out;
}

}  // namespace shardscope::configs
