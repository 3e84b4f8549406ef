#include "configs/number_text.hpp"

#include <stdexcept>

namespace shardscope::configs {

LeadingNumber leading_number(const std::string& text) {
  LeadingNumber n;
  try {
    n.value = std::stod(text, &n.length);
  } catch (const std::exception&) {  // no number, or one out of double's range
    n = {};
  }
  return n;
}

}  // namespace shardscope::configs
