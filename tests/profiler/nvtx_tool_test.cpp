// NVTX ranges as a tool sees them: this executable links a static NVTX injection (NVTX's
// InitializeInjectionNvtx2_fnptr hook) that records domains, registered strings, pushes, pops and
// marks, so the test checks what Nsight Systems would receive. Built only with NVTX.
#define NVTX_NO_IMPL  // types only: this file is the tool, not an NVTX caller
#include <nvtx3/nvToolsExt.h>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "profiler/nvtx_ranges.hpp"

namespace {

struct Recorded {
  std::map<nvtxDomainHandle_t, std::string> domains;
  std::map<nvtxStringHandle_t, std::string> strings;
  std::vector<std::string> events;  // "push <domain> <text> <color>", "pop <domain>", "mark ..."
  int depth = 0;
};

Recorded& recorded() {
  static Recorded r;
  return r;
}

nvtxDomainHandle_t create_domain(const char* name) {
  auto* handle = reinterpret_cast<nvtxDomainHandle_t>(recorded().domains.size() + 1);
  recorded().domains[handle] = name;
  return handle;
}

nvtxStringHandle_t register_string(nvtxDomainHandle_t, const char* text) {
  auto* handle = reinterpret_cast<nvtxStringHandle_t>(recorded().strings.size() + 1);
  recorded().strings[handle] = text;
  return handle;
}

std::string describe(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  const std::string text = a->messageType == NVTX_MESSAGE_TYPE_REGISTERED ? recorded().strings[a->message.registered]
                           : a->messageType == NVTX_MESSAGE_TYPE_ASCII    ? std::string("ascii:") + a->message.ascii
                                                                          : "?";
  char color[16];
  std::snprintf(color, sizeof color, "%08X", a->color);
  return recorded().domains[domain] + " " + text + " " + (a->colorType == NVTX_COLOR_ARGB ? color : "none");
}

int push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  recorded().events.push_back("push " + describe(domain, a));
  return recorded().depth++;
}

int pop(nvtxDomainHandle_t domain) {
  recorded().events.push_back("pop " + recorded().domains[domain]);
  return --recorded().depth;
}

void mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  recorded().events.push_back("mark " + describe(domain, a));
}

int initialize_injection(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned int size = 0;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  *table[NVTX_CBID_CORE2_DomainCreateA] = reinterpret_cast<NvtxFunctionPointer>(&create_domain);
  *table[NVTX_CBID_CORE2_DomainRegisterStringA] = reinterpret_cast<NvtxFunctionPointer>(&register_string);
  *table[NVTX_CBID_CORE2_DomainRangePushEx] = reinterpret_cast<NvtxFunctionPointer>(&push);
  *table[NVTX_CBID_CORE2_DomainRangePop] = reinterpret_cast<NvtxFunctionPointer>(&pop);
  *table[NVTX_CBID_CORE2_DomainMarkEx] = reinterpret_cast<NvtxFunctionPointer>(&mark);
  return 1;
}

}  // namespace

extern "C" {
NvtxInitializeInjectionNvtxFunc_t InitializeInjectionNvtx2_fnptr = &initialize_injection;
}

namespace shardscope::profiler {
namespace {

TEST(NvtxTool, RangesArriveInTheShardScopeDomainWithRegisteredNames) {
  const NvtxName gather = nvtx_layer_name(NvtxPhase::kGather, "layers.3");
  {
    ScopedRange step(NvtxPhase::kForward);
    ScopedRange layer(gather);
    nvtx_mark(NvtxName("skipped step"));
  }
  const std::vector<std::string> expected = {
      "push ShardScope forward FF4CAF50", "push ShardScope gather layers.3 FFFF9800",
      "mark ShardScope skipped step " + [] {
        char c[16];
        std::snprintf(c, sizeof c, "%08X", NvtxName("skipped step").color());
        return std::string(c);
      }(),
      "pop ShardScope", "pop ShardScope"};
  EXPECT_EQ(recorded().events, expected);
  EXPECT_EQ(recorded().depth, 0);
  ASSERT_EQ(recorded().domains.size(), 1u);
  EXPECT_EQ(recorded().domains.begin()->second, "ShardScope");
}

}  // namespace
}  // namespace shardscope::profiler
