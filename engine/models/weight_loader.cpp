#include "engine/models/weight_loader.hpp"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "configs/did_you_mean.hpp"
#include "configs/input_file.hpp"
#include "engine/models/model_error.hpp"
#include "engine/models/safetensors_file.hpp"
#include "engine/models/trainable_model.hpp"
#include "estimator/estimator_error.hpp"

namespace shardscope::engine {
namespace {

struct Located {
  const estimator::SafetensorsHeader* header;
  const estimator::SafetensorsTensor* tensor;
};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

std::string describe_files(const std::vector<std::string>& files) {
  return files.size() == 1 ? files[0] : std::to_string(files.size()) + " shards of the index";
}

// Finds a parameter's tensor under its HF name, or without the base-model prefix.
const Located* find_tensor(const std::map<std::string, Located>& by_name, const std::string& name,
                           const std::string& prefix) {
  if (auto it = by_name.find(name); it != by_name.end()) return &it->second;
  if (!prefix.empty() && name.rfind(prefix, 0) == 0)
    if (auto it = by_name.find(name.substr(prefix.size())); it != by_name.end()) return &it->second;
  return nullptr;
}

[[noreturn]] void throw_missing(const std::vector<std::string>& missing, const std::map<std::string, Located>& by_name,
                                const std::vector<std::string>& files) {
  std::string message = describe_files(files) + ": no tensor '" + missing.front() + "'";
  std::vector<std::string> names;
  for (const auto& entry : by_name) names.push_back(entry.first);
  if (auto guess = configs::closest_match(missing.front(), names)) message += " (closest: '" + *guess + "')";
  if (missing.size() > 1) {
    message += "; " + std::to_string(missing.size() - 1) + " more missing:";
    for (std::size_t i = 1; i < missing.size() && i < 6; ++i) message += " " + missing[i];
    if (missing.size() > 6) message += " ...";
  }
  throw ModelError(message + ". The weights do not match this model: check that --model and its "
                             "config.json describe the checkpoint");
}

void check_tensor(const Located& at, const std::string& param_name, const torch::Tensor& param) {
  const auto& t = *at.tensor;
  const auto expected = param.sizes().vec();
  if (t.shape != expected)
    throw ModelError(at.header->path + ": tensor '" + t.name + "' has shape " + shape_text(t.shape) +
                     " but the model's '" + param_name + "' expects " + shape_text(expected) +
                     " (does the config.json match these weights?)");
  if (t.dtype != "F32" && t.dtype != "F16" && t.dtype != "BF16")
    throw ModelError(at.header->path + ": tensor '" + t.name + "' has dtype " + t.dtype +
                     ", which cannot be loaded into a parameter; expected F32, F16 or BF16");
}

}  // namespace

std::vector<std::string> safetensors_files(const std::string& path) {
  if (!ends_with(path, ".json")) return {path};
  const std::string text = configs::read_input_file(path, "safetensors index", configs::kMaxIndexFileBytes);
  const auto index = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw ModelError(path + ": not a safetensors index: expected an object with a 'weight_map' object");
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  std::set<std::string> shards;
  for (const auto& [tensor, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) throw ModelError(path + ": weight_map['" + tensor + "'] must be a shard file name");
    shards.insert(shard.get<std::string>());
  }
  if (shards.empty()) throw ModelError(path + ": the weight_map is empty");
  std::vector<std::string> files;
  for (const auto& shard : shards) files.push_back(dir + shard);
  return files;
}

WeightLoadReport load_safetensors_weights(TrainableModel& model, const std::string& path) {
  WeightLoadReport report;
  report.files = safetensors_files(path);
  std::vector<estimator::SafetensorsHeader> headers;
  try {
    for (const auto& file : report.files) headers.push_back(estimator::read_safetensors_header(file));
  } catch (const estimator::EstimatorError& e) {
    throw ModelError(e.what());
  }
  std::map<std::string, Located> by_name;
  for (const auto& header : headers)
    for (const auto& t : header.tensors) by_name.emplace(t.name, Located{&header, &t});

  // Match and check everything first: a failed load must not leave the model half-filled.
  const auto params = model.named_parameters(/*recurse=*/true);
  std::vector<std::pair<torch::Tensor, Located>> plan;
  std::vector<std::string> missing;
  std::set<std::string> used;
  for (const auto& item : params) {
    const Located* at = find_tensor(by_name, item.key(), model.base_model_prefix());
    if (!at) {
      missing.push_back(item.key());
      continue;
    }
    check_tensor(*at, item.key(), item.value());
    plan.emplace_back(item.value(), *at);
    used.insert(at->tensor->name);
  }
  if (!missing.empty()) throw_missing(missing, by_name, report.files);

  torch::NoGradGuard no_grad;
  for (auto& [param, at] : plan) param.copy_(read_safetensors_data(*at.header, *at.tensor));
  report.loaded = plan.size();
  std::vector<std::string> extra;
  for (const auto& entry : by_name)
    if (!used.count(entry.first)) extra.push_back(entry.first);
  if (!extra.empty()) {
    std::string warning = describe_files(report.files) + ": " + std::to_string(extra.size()) +
                          " tensor(s) not used by the model (buffers such as rotary inv_freq are expected):";
    for (std::size_t i = 0; i < extra.size() && i < 8; ++i) warning += " " + extra[i];
    report.warnings.push_back(warning + (extra.size() > 8 ? " ..." : ""));
  }
  return report;
}

}  // namespace shardscope::engine
