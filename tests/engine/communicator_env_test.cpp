// The communicator's rendezvous as issue 22 wants it: rank 0's TCPStore listens on MASTER_ADDR
// only (c10d binds every interface unless it is handed a bound socket), and ranks that mpirun or
// srun start directly find their rank and world in OMPI_COMM_WORLD_* or SLURM_*.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "engine/communicator.hpp"
#include "tests/process_helpers.hpp"

namespace shardscope::engine {
namespace {

// The local addresses (hex, as /proc/net/tcp writes them) of the listening sockets on `port`.
std::vector<std::string> listeners_on(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // header
  std::vector<std::string> addresses;
  char hex_port[8];
  std::snprintf(hex_port, sizeof hex_port, "%04X", port);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.substr(local.find(':') + 1) == hex_port) addresses.push_back(local.substr(0, local.find(':')));
  }
  return addresses;
}

class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const auto& [name, value] : vars) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
      value ? ::setenv(name, value, 1) : ::unsetenv(name);
    }
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) value ? ::setenv(name.c_str(), value->c_str(), 1) : ::unsetenv(name.c_str());
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(Communicator, RankZerosStoreListensOnMasterAddrOnly) {
  CommunicatorOptions o;
  o.master_addr = "127.0.0.1";
  o.master_port = test::free_port();
  o.timeout = std::chrono::seconds(20);
  auto comm = Communicator::connect(o);
  const auto addresses = listeners_on(o.master_port);
  ASSERT_FALSE(addresses.empty()) << "nothing listens on the rendezvous port";
  for (const auto& a : addresses) EXPECT_EQ(a, "0100007F") << "the TCPStore listens on every interface";
  torch::Tensor t = torch::ones({4});
  comm->all_reduce(t).wait();  // Gloo on the bound device works
  EXPECT_EQ(t[0].item<float>(), 1.0f);
  comm->shutdown();
}

TEST(Communicator, RanksStartedBySrunOrMpirunReadTheirNumbers) {
  {
    ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}, {"OMPI_COMM_WORLD_RANK", nullptr},
                   {"OMPI_COMM_WORLD_SIZE", nullptr}, {"OMPI_COMM_WORLD_LOCAL_RANK", nullptr}, {"PMI_RANK", nullptr},
                   {"PMI_SIZE", nullptr}, {"MPI_LOCALRANKID", nullptr}, {"SLURM_PROCID", "3"}, {"SLURM_NTASKS", "4"},
                   {"SLURM_LOCALID", "1"}, {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
    const auto o = communicator_options_from_environment();
    EXPECT_EQ(o.rank, 3);
    EXPECT_EQ(o.world_size, 4);
    EXPECT_EQ(o.local_rank, 1);
    EXPECT_EQ(o.master_addr, "10.0.0.1");
  }
  ScopedEnv env({{"RANK", nullptr}, {"WORLD_SIZE", nullptr}, {"LOCAL_RANK", nullptr}, {"OMPI_COMM_WORLD_RANK", "2"},
                 {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"}, {"SLURM_PROCID", "5"},
                 {"MASTER_ADDR", "10.0.0.1"}, {"MASTER_PORT", "29500"}});
  const auto o = communicator_options_from_environment();
  EXPECT_EQ(o.rank, 2);  // Open MPI's names come before Slurm's
  EXPECT_EQ(o.world_size, 8);
}

}  // namespace
}  // namespace shardscope::engine
