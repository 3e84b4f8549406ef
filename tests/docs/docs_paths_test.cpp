// Docs stay true: every repository path that README.md or docs/*.md names must exist, so the
// architecture text cannot drift from the tree.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace fs = std::filesystem;

namespace {

const char* kRoots[] = {"aio/", "app/", "configs/", "diagnosis/", "estimator/", "sessions/", "kernels/", "profiler/",
                        "engine/", "tests/", "resources/", "docs/", "scripts/", ".ci/"};

bool names_repository_path(const std::string& token) {
  if (token.find_first_of(" <>*{}$") != std::string::npos) return false;
  for (const char* root : kRoots)
    if (token.rfind(root, 0) == 0) return true;
  return false;
}

std::vector<std::string> referenced_paths(const std::string& text) {
  std::vector<std::string> paths;
  static const std::regex code(R"(`([^`\n]+)`)");
  static const std::regex link(R"(\]\(([^)#\s]+)\))");
  for (const auto* re : {&code, &link}) {
    for (std::sregex_iterator it(text.begin(), text.end(), *re), end; it != end; ++it) {
      std::string token = (*it)[1];
      // A command line names its program first: `scripts/run.sh --flag` -> scripts/run.sh.
      token = token.substr(0, token.find(' '));
      if (auto colon = token.find(':'); colon != std::string::npos) token = token.substr(0, colon);
      if (names_repository_path(token)) paths.push_back(token);
    }
  }
  return paths;
}

std::vector<fs::path> documents(const fs::path& root) {
  std::vector<fs::path> docs{root / "README.md"};
  for (const auto& entry : fs::recursive_directory_iterator(root / "docs"))
    if (entry.path().extension() == ".md") docs.push_back(entry.path());
  return docs;
}

TEST(Docs, EveryNamedPathExists) {
  const fs::path root = SHARDSCOPE_SOURCE_DIR;
  int checked = 0;
  for (const auto& doc : documents(root)) {
    std::ifstream in(doc);
    std::stringstream buffer;
    buffer << in.rdbuf();
    for (const auto& path : referenced_paths(buffer.str())) {
      // Links inside docs/ are relative to docs/; code spans are relative to the root.
      const bool exists = fs::exists(root / path) || fs::exists(doc.parent_path() / path);
      EXPECT_TRUE(exists) << doc.filename() << " names '" << path << "', which does not exist";
      ++checked;
    }
  }
  EXPECT_GT(checked, 5) << "the docs name almost no paths: is the scanner broken?";
}

TEST(Docs, ScannerFindsPathsInCodeAndLinks) {
  const auto paths = referenced_paths("run `scripts/run.sh --x` or see [a](docs/build.md) and `x`");
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_EQ(paths[0], "scripts/run.sh");
  EXPECT_EQ(paths[1], "docs/build.md");
}

}  // namespace
