// print_model_profile()'s text (DeepSpeed profiling/flops_profiler/profiler.py) and its JSON form.
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profiler/flops_counter.hpp"

namespace shardscope::profiler {
namespace {

// Python's f"{round(x, 2):g}".
std::string g2(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%g", std::round(value * 100) / 100);
  return text;
}

// Python's repr of round(x, 2): at least one decimal ("100.0", "12.5").
std::string py_float2(double value) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f", std::round(value * 100) / 100);
  std::string s = text;
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  return s;
}

std::string params_string(double p) {
  std::string s = flops_number_to_string(p);
  for (auto& c : s)
    if (c == 'G') c = 'B';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}
std::string macs_string(double m) { return flops_number_to_string(m) + "MACs"; }
std::string flops_string(double f) { return flops_number_to_string(f) + "FLOPS"; }
std::string duration_string(double seconds) { return flops_number_to_string(seconds) + "s"; }

// '{:<70}  {:<8}'
std::string line(const std::string& label, const std::string& value) {
  std::string out = label;
  if (out.size() < 70) out += std::string(70 - out.size(), ' ');
  out += "  " + value;
  if (value.size() < 8) out += std::string(8 - value.size(), ' ');
  return out + "\n";
}

// torch's _addindent(s, 2): every line after the first gains two spaces.
std::string add_indent(const std::string& s) {
  std::string out;
  for (char c : s) {
    out += c;
    if (c == '\n') out += "  ";
  }
  return out;
}

struct Totals {
  double params, macs, latency_s;
};

std::string annotation(const ModuleProfile& m, const Totals& t) {
  const double params = static_cast<double>(total_params(m)), macs = total_macs(m);
  const double seconds = total_latency_ms(m) / 1000;
  std::string s = params_string(params) + " = " + g2(t.params ? 100 * params / t.params : 0) + "% Params, " +
                  macs_string(macs) + " = " + g2(t.macs ? 100 * macs / t.macs : 0) + "% MACs, " +
                  duration_string(seconds) + " = " + g2(t.latency_s ? 100 * seconds / t.latency_s : 0) + "% latency, " +
                  flops_string(seconds ? std::round(total_flops(m) / seconds * 100) / 100 : 0);
  return m.extra_repr.empty() ? s : s + ", " + m.extra_repr;
}

// torch.nn.Module.__repr__ with DeepSpeed's flops_repr as extra_repr; ModuleList's own __repr__
// (no extra_repr, consecutive identical children folded into "(0-11): 12 x ...").
std::string module_repr(const ModuleProfile& m, const Totals& t) {
  std::vector<std::string> children;
  for (const auto& c : m.children) children.push_back(module_repr(c, t));
  if (m.type == "ModuleList") {
    if (children.empty()) return m.type + "()";
    std::string out = m.type + "(";
    for (std::size_t i = 0; i < children.size();) {
      std::size_t j = i;
      while (j + 1 < children.size() && children[j + 1] == children[i]) ++j;
      const std::string local = i == j ? "(" + std::to_string(i) + "): " + children[i]
                                       : "(" + std::to_string(i) + "-" + std::to_string(j) + "): " +
                                             std::to_string(j - i + 1) + " x " + children[i];
      out += "\n  " + add_indent(local);
      i = j + 1;
    }
    return out + "\n)";
  }
  const std::string extra = annotation(m, t);
  if (children.empty()) return m.type + "(" + extra + ")";
  std::string out = m.type + "(\n  " + extra;
  for (std::size_t i = 0; i < children.size(); ++i)
    out += "\n  " + add_indent("(" + m.children[i].name + "): " + children[i]);
  return out + "\n)";
}

// print_model_aggregated_profile: per depth, per module class: [macs, params, latency].
struct ClassTotals {
  std::string type;
  double macs = 0, params = 0, latency_s = 0;
};

void walk(const ModuleProfile& m, std::size_t depth, std::vector<std::vector<ClassTotals>>& info) {
  if (info.size() <= depth) info.resize(depth + 1);
  auto& level = info[depth];
  auto it = std::find_if(level.begin(), level.end(), [&](const ClassTotals& c) { return c.type == m.type; });
  if (it == level.end()) it = level.insert(level.end(), ClassTotals{m.type});
  it->macs += total_macs(m);
  it->params += static_cast<double>(total_params(m));
  it->latency_s += total_latency_ms(m) / 1000;
  for (const auto& c : m.children) walk(c, depth + 1, info);
}

template <typename Key, typename Text>
std::string top_dict(std::vector<ClassTotals> level, std::size_t n, Key key, Text text) {
  std::stable_sort(level.begin(), level.end(), [&](const auto& a, const auto& b) { return key(a) > key(b); });
  std::string out = "{";
  for (std::size_t i = 0; i < std::min(n, level.size()); ++i)
    out += (i ? ", '" : "'") + level[i].type + "': '" + text(key(level[i])) + "'";
  return out + "}";
}

std::string aggregated(const ModuleProfile& model, const FlopsProfileOptions& o) {
  std::vector<std::vector<ClassTotals>> info;
  walk(model, 0, info);
  // DeepSpeed loops `for d in range(depth)` with depth = len(info) - 1 for -1: the deepest level
  // (the leaves) is never listed.
  const std::size_t depth = o.module_depth == -1 ? info.size() - 1 : static_cast<std::size_t>(o.module_depth);
  const std::size_t n = static_cast<std::size_t>(std::max(o.top_modules, 0));
  std::string out = "Top " + std::to_string(o.top_modules) + " modules in terms of params, MACs or fwd latency at different model depths:\n";
  for (std::size_t d = 0; d < depth && d < info.size(); ++d) {
    out += "depth " + std::to_string(d) + ":\n";
    out += "    params      - " + top_dict(info[d], n, [](const auto& c) { return c.params; }, params_string) + "\n";
    out += "    MACs        - " + top_dict(info[d], n, [](const auto& c) { return c.macs; }, macs_string) + "\n";
    out += "    fwd latency - " + top_dict(info[d], n, [](const auto& c) { return c.latency_s; }, duration_string) + "\n";
  }
  return out;
}

std::string summary_lines(const ModuleProfile& model, const FlopsProfileOptions& o, double fwd_s) {
  const double params = static_cast<double>(total_params(model)), flops = total_flops(model), mp = o.model_parallel_size;
  std::string out = line("world size: ", std::to_string(o.world_size)) +
                    line("data parallel size: ", std::to_string(o.data_parallel_size)) +
                    line("model parallel size: ", std::to_string(o.model_parallel_size)) +
                    line("batch size per GPU: ", std::to_string(o.micro_batch_per_gpu)) +
                    line("params per GPU: ", params_string(params)) +
                    line("params of model = params per GPU * mp_size: ", params_string(params * mp)) +
                    line("fwd MACs per GPU: ", macs_string(total_macs(model))) +
                    line("fwd flops per GPU: ", flops_number_to_string(flops)) +
                    line("fwd flops of model = fwd flops per GPU * mp_size: ", flops_number_to_string(flops * mp)) +
                    line("fwd latency: ", duration_string(fwd_s)) +
                    line("fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ", flops_string(fwd_s ? flops / fwd_s : 0));
  if (!o.bwd_latency_ms || !o.step_latency_ms) return out;
  const double factor = 2 + o.recompute_fwd_factor, bwd_s = *o.bwd_latency_ms / 1000, step_s = *o.step_latency_ms / 1000;
  const double iter_s = fwd_s + bwd_s + step_s;
  char f[32], f1[32];
  std::snprintf(f, sizeof f, "%g", factor);
  std::snprintf(f1, sizeof f1, "%g", factor + 1);
  out += line("bwd latency: ", duration_string(bwd_s)) +
         line(std::string("bwd FLOPS per GPU = ") + f + " * fwd flops per GPU / bwd latency: ",
              flops_string(bwd_s ? factor * flops / bwd_s : 0)) +
         line(std::string("fwd+bwd FLOPS per GPU = ") + f1 + " * fwd flops per GPU / (fwd+bwd latency): ",
              flops_string(fwd_s + bwd_s > 0 ? (factor + 1) * flops / (fwd_s + bwd_s) : 0)) +
         line("step latency: ", duration_string(step_s)) + line("iter latency: ", duration_string(iter_s)) +
         line(std::string("FLOPS per GPU = ") + f1 + " * fwd flops per GPU / iter latency: ",
              flops_string(iter_s ? (factor + 1) * flops / iter_s : 0)) +
         line("samples/second: ", py_float2(iter_s ? static_cast<double>(o.micro_batch_per_gpu * o.world_size) / iter_s : 0));
  return out;
}

double fwd_seconds(const ModuleProfile& model, const FlopsProfileOptions& o) {
  return (o.fwd_latency_ms ? *o.fwd_latency_ms : total_latency_ms(model)) / 1000;
}

}  // namespace

std::string flops_number_to_string(double num) {
  struct Unit {
    double magnitude;
    const char* name;
  };
  const Unit unit = num >= 1e12 ? Unit{1e12, "T"} : num >= 1e9 ? Unit{1e9, "G"} : num >= 1e6 ? Unit{1e6, "M"}
                  : num >= 1e3 ? Unit{1e3, "K"} : (num >= 1 || num == 0) ? Unit{1, ""}
                  : num >= 1e-3 ? Unit{1e-3, "m"} : Unit{1e-6, "u"};
  return g2(num / unit.magnitude) + " " + unit.name;
}

std::string format_model_profile(const ModuleProfile& model, const FlopsProfileOptions& o) {
  std::string out = "\n-------------------------- DeepSpeed Flops Profiler --------------------------\n";
  out += "Profile Summary at step " + std::to_string(o.profile_step) + ":\n";
  out += "Notations:\ndata parallel size (dp_size), model parallel size(mp_size),\nnumber of parameters (params), number of "
         "multiply-accumulate operations(MACs),\nnumber of floating-point operations (flops), floating-point operations "
         "per second (FLOPS),\nfwd latency (forward propagation latency), bwd latency (backward propagation latency),\n"
         "step (weights update latency), iter latency (sum of fwd, bwd and step latency)\n\n";
  out += summary_lines(model, o, fwd_seconds(model, o));
  out += "\n----------------------------- Aggregated Profile per GPU -----------------------------\n";
  out += aggregated(model, o);
  if (o.detailed) {
    out += "\n------------------------------ Detailed Profile per GPU ------------------------------\n";
    out += "Each module profile is listed after its name in the following order: \nparams, percentage of total params, "
           "MACs, percentage of total MACs, fwd latency, percentage of total fwd latency, fwd FLOPS\n";
    out += "\nNote: 1. A module can have torch.nn.module or torch.nn.functional to compute logits (e.g. CrossEntropyLoss). "
           "They are not counted as submodules, thus not to be printed out. However they make up the difference between "
           "a parent's MACs (or latency) and the sum of its submodules'.\n2. Number of floating-point operations is a "
           "theoretical estimation, thus FLOPS computed using that could be larger than the maximum system throughput.\n"
           "3. The fwd latency listed in the top module's profile is directly captured at the module forward function in "
           "PyTorch, thus it's less than the fwd latency shown above which is captured in DeepSpeed.\n\n";
    const Totals t{static_cast<double>(total_params(model)), total_macs(model), total_latency_ms(model) / 1000};
    out += module_repr(model, t) + "\n";
  }
  return out + "------------------------------------------------------------------------------\n";
}

namespace {
nlohmann::json module_json(const ModuleProfile& m) {
  nlohmann::json children = nlohmann::json::array();
  for (const auto& c : m.children) children.push_back(module_json(c));
  return {{"name", m.name},          {"type", m.type},           {"params", total_params(m)},
          {"macs", total_macs(m)},    {"flops", total_flops(m)},  {"latency_ms", total_latency_ms(m)},
          {"children", children}};
}
}  // namespace

nlohmann::json model_profile_to_json(const ModuleProfile& model, const FlopsProfileOptions& o) {
  const double fwd_s = fwd_seconds(model, o), flops = total_flops(model);
  nlohmann::json out{{"profile_step", o.profile_step},
                     {"world_size", o.world_size},
                     {"params", total_params(model)},
                     {"fwd_macs", total_macs(model)},
                     {"fwd_flops", flops},
                     {"fwd_latency_ms", fwd_s * 1000},
                     {"fwd_flops_per_s", fwd_s ? flops / fwd_s : 0.0},
                     {"modules", module_json(model)}};
  if (o.bwd_latency_ms && o.step_latency_ms) {
    const double factor = 2 + o.recompute_fwd_factor;
    const double iter_s = fwd_s + (*o.bwd_latency_ms + *o.step_latency_ms) / 1000;
    out["bwd_latency_ms"] = *o.bwd_latency_ms;
    out["step_latency_ms"] = *o.step_latency_ms;
    out["iter_latency_ms"] = iter_s * 1000;
    out["flops_per_s"] = iter_s ? (factor + 1) * flops / iter_s : 0.0;
  }
  return out;
}

}  // namespace shardscope::profiler
