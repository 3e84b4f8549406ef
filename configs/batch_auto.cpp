// The batch keys read as DeepSpeed reads an "auto" it is given directly (without the Hugging Face
// Trainer to fill it): the string reaches _set_batch_related_parameters and _batch_assertion
// (runtime/config.py) and Python raises a TypeError there. Which one depends on which keys are
// given, so the solver's branches are followed with Python's rules for int and str operands:
// str // int and int // str fail, str * int repeats the string, str > 0 fails.
#include <variant>

#include "configs/validation_context.hpp"

namespace shardscope::configs {
namespace {

struct PyNone {};
using PyValue = std::variant<PyNone, std::int64_t, std::string>;

bool is_none(const PyValue& v) { return std::holds_alternative<PyNone>(v); }
bool is_str(const PyValue& v) { return std::holds_alternative<std::string>(v); }
const char* type_name(const PyValue& v) { return is_str(v) ? "str" : "int"; }

/// Python raised this TypeError: what DeepSpeedConfig's constructor passes on.
struct PyTypeError {
  std::string message;
};

PyValue floor_div(const PyValue& a, const PyValue& b, const char* op) {
  if (is_str(a) || is_str(b))
    throw PyTypeError{std::string("unsupported operand type(s) for ") + op + ": '" + type_name(a) + "' and '" +
                      type_name(b) + "'"};
  const auto x = std::get<std::int64_t>(a), y = std::get<std::int64_t>(b);
  if (y == 0) return std::int64_t{0};  // not reached: a zero divisor here has a string beside it
  std::int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
  return q;
}

PyValue multiply(const PyValue& a, const PyValue& b) {
  if (is_str(a) && is_str(b)) throw PyTypeError{"can't multiply sequence by non-int of type 'str'"};
  if (is_str(a) || is_str(b)) {
    const std::string& text = std::get<std::string>(is_str(a) ? a : b);
    const std::int64_t times = std::get<std::int64_t>(is_str(a) ? b : a);
    std::string repeated;
    for (std::int64_t i = 0; i < times && repeated.size() < 64; ++i) repeated += text;
    return repeated;
  }
  return std::get<std::int64_t>(a) * std::get<std::int64_t>(b);
}

void assert_positive(const PyValue& v) {
  if (is_str(v)) throw PyTypeError{"'>' not supported between instances of 'str' and 'int'"};
}

/// _set_batch_related_parameters, then the three `> 0` assertions of _batch_assertion.
void run_solver(PyValue tb, PyValue mb, PyValue gas, std::int64_t world) {
  const PyValue w = world;
  if (!is_none(tb) && !is_none(mb) && !is_none(gas)) {
  } else if (!is_none(tb) && !is_none(mb)) {
    gas = floor_div(floor_div(tb, mb, "//"), w, "//=");
  } else if (!is_none(tb) && !is_none(gas)) {
    mb = floor_div(floor_div(tb, w, "//"), gas, "//=");
  } else if (!is_none(mb) && !is_none(gas)) {
    tb = multiply(multiply(mb, gas), w);
  } else if (!is_none(tb)) {
    gas = std::int64_t{1};
    mb = floor_div(tb, w, "//");
  } else if (!is_none(mb)) {
    tb = multiply(mb, w);
    gas = std::int64_t{1};
  } else {
    return;  // "Either train_batch_size or ..." is the batch rules' error
  }
  assert_positive(tb);
  assert_positive(mb);
  assert_positive(gas);
}

PyValue read(const nlohmann::json& value) {
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_string()) return value.get<std::string>();
  return PyNone{};
}

}  // namespace

bool check_batch_auto(ValidationContext& context, int world) {
  const auto& e = context.effective;
  const char* keys[] = {"train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps"};
  std::string first_auto;
  for (const char* key : keys)
    if (first_auto.empty() && e[key] == "auto") first_auto = key;
  if (first_auto.empty()) return false;
  try {
    run_solver(read(e[keys[0]]), read(e[keys[1]]), read(e[keys[2]]), world);
  } catch (const PyTypeError& error) {
    context.error("unfilled-auto", first_auto,
                  "DeepSpeed given this config directly fails: TypeError: " + error.message + " (" + first_auto +
                      " is the string \"auto\", which only the Hugging Face Trainer fills)",
                  "check it as the Trainer runs it: --hf-trainer [per_device_train_batch_size=N,...] (its "
                  "TrainingArguments), or give the values with --set " + first_auto + "=N");
  }
  return true;
}

}  // namespace shardscope::configs
