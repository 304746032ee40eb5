// Loading a policy in the policy unit tests, one way for all of them.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "policy/load.h"

namespace sv::policy::test_util {

// Loads `text` (may be empty) over `preset` with workspace /ws and home
// /home/u. Fails the test on errors, printing every diagnostic; on warnings
// too when `warnings_fail`.
inline std::shared_ptr<const Policy> mustLoad(const std::string& text, const std::string& preset,
                                              bool warnings_fail = false) {
  LoadRequest r;
  r.preset = preset;
  if (!text.empty()) r.files.push_back({"p.json", text});
  r.workspace = "/ws";
  r.home = "/home/u";
  LoadResult res = load(r);
  std::string diags;
  for (const auto& d : res.diagnostics) diags += d.format() + "\n";
  EXPECT_TRUE(res.ok()) << diags;
  if (warnings_fail) {
    EXPECT_TRUE(res.diagnostics.empty()) << diags;
  }
  return res.policy;
}

}  // namespace sv::policy::test_util
