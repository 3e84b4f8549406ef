#include <gtest/gtest.h>

#include "configs/shell_words.hpp"

namespace sc = shardscope::configs;

using Words = std::vector<std::string>;

// The cases are Python's shlex.split results (POSIX mode), which DeepSpeed's runner uses.
TEST(ShellWords, SplitsAsShlexDoes) {
  EXPECT_EQ(sc::split_shell_words("  -F '/tmp/my config'  -o x "), (Words{"-F", "/tmp/my config", "-o", "x"}));
  EXPECT_EQ(sc::split_shell_words(R"(a"b c"d)"), (Words{"ab cd"}));
  EXPECT_EQ(sc::split_shell_words(R"("say \"hi\" \\ \n")"), (Words{R"(say "hi" \ \n)"}));
  EXPECT_EQ(sc::split_shell_words(R"('it\s' a\ b)"), (Words{R"(it\s)", "a b"}));
  EXPECT_EQ(sc::split_shell_words("''"), (Words{""}));
  EXPECT_TRUE(sc::split_shell_words(" \t ").empty());
}

TEST(ShellWords, AnUnclosedQuoteIsNamed) {
  try {
    sc::split_shell_words("--name 'unclosed");
    FAIL() << "no error";
  } catch (const sc::UnclosedQuoteError& e) {
    EXPECT_STREQ(e.what(), "the single quote is not closed");
  }
  EXPECT_THROW(sc::split_shell_words(R"(a "b)"), sc::UnclosedQuoteError);
}
