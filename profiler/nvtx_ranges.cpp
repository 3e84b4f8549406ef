#include "profiler/nvtx_ranges.hpp"

#include <utility>

#ifdef SHARDSCOPE_HAS_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace shardscope::profiler {
namespace {

struct PhaseStyle {
  const char* name;
  std::uint32_t color;  // ARGB; compute greens/blues, communication oranges, optimizer purple
};

const PhaseStyle kPhases[] = {
    {"step", 0xFF9E9E9E},           {"forward", 0xFF4CAF50},         {"backward", 0xFF2196F3},
    {"gather", 0xFFFF9800},         {"release", 0xFFFFC107},         {"reduce_scatter bucket", 0xFFFF5722},
    {"all_reduce bucket", 0xFFE91E63}, {"optimizer_step", 0xFF9C27B0}, {"checkpoint_save", 0xFF607D8B},
};

const PhaseStyle& style_of(NvtxPhase phase) { return kPhases[static_cast<int>(phase)]; }

// FNV-1a of the text mapped to a saturated colour, so one custom name keeps one colour across runs.
std::uint32_t color_from_text(const std::string& text) {
  std::uint32_t h = 2166136261u;
  for (const unsigned char c : text) h = (h ^ c) * 16777619u;
  return 0xFF000000u | (h & 0x00FFFFFFu) | 0x00404040u;
}

#ifdef SHARDSCOPE_HAS_NVTX
nvtxDomainHandle_t domain() {
  static const nvtxDomainHandle_t handle = nvtxDomainCreateA(kNvtxDomain);
  return handle;
}

nvtxEventAttributes_t attributes(const std::string& text, std::uint32_t color, const void* handle) {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.colorType = NVTX_COLOR_ARGB;
  a.color = color;
  // A tool that does not register strings hands back null: give it the text itself (no copy).
  if (handle) {
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = static_cast<nvtxStringHandle_t>(const_cast<void*>(handle));
  } else {
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = text.c_str();
  }
  return a;
}

const void* register_name(const std::string& text) { return nvtxDomainRegisterStringA(domain(), text.c_str()); }
#else
const void* register_name(const std::string&) { return nullptr; }
#endif

// Registered once, on first use, thread-safely (function-local static).
const NvtxName& phase_name_handle(NvtxPhase phase) {
  static const NvtxName names[] = {
      NvtxName(kPhases[0].name, NvtxPhase::kStep),
      NvtxName(kPhases[1].name, NvtxPhase::kForward),
      NvtxName(kPhases[2].name, NvtxPhase::kBackward),
      NvtxName(kPhases[3].name, NvtxPhase::kGather),
      NvtxName(kPhases[4].name, NvtxPhase::kRelease),
      NvtxName(kPhases[5].name, NvtxPhase::kReduceScatterBucket),
      NvtxName(kPhases[6].name, NvtxPhase::kAllReduceBucket),
      NvtxName(kPhases[7].name, NvtxPhase::kOptimizerStep),
      NvtxName(kPhases[8].name, NvtxPhase::kCheckpointSave),
  };
  return names[static_cast<int>(phase)];
}

}  // namespace

bool nvtx_compiled_in() {
#ifdef SHARDSCOPE_HAS_NVTX
  return true;
#else
  return false;
#endif
}

const char* nvtx_phase_name(NvtxPhase phase) { return style_of(phase).name; }

NvtxName::NvtxName(std::string text, NvtxPhase phase)
    : text_(std::move(text)), color_(style_of(phase).color), handle_(register_name(text_)) {}

NvtxName::NvtxName(std::string text)
    : text_(std::move(text)), color_(color_from_text(text_)), handle_(register_name(text_)) {}

NvtxName nvtx_layer_name(NvtxPhase phase, const std::string& layer) {
  return NvtxName(std::string(nvtx_phase_name(phase)) + " " + layer, phase);
}

ScopedRange::ScopedRange(NvtxPhase phase) : ScopedRange(phase_name_handle(phase)) {}

#ifdef SHARDSCOPE_HAS_NVTX
ScopedRange::ScopedRange(const NvtxName& name) {
  const auto a = attributes(name.text_, name.color_, name.handle_);
  nvtxDomainRangePushEx(domain(), &a);
}

ScopedRange::~ScopedRange() { nvtxDomainRangePop(domain()); }

void nvtx_mark(const NvtxName& name) {
  const auto a = attributes(name.text_, name.color_, name.handle_);
  nvtxDomainMarkEx(domain(), &a);
}
#else
ScopedRange::ScopedRange(const NvtxName&) {}
ScopedRange::~ScopedRange() = default;
void nvtx_mark(const NvtxName&) {}
#endif

}  // namespace shardscope::profiler
