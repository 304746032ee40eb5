// The LoadRequest the policy unit tests load one policy file with (p.json, on
// top of `preset`, workspace /ws, home /home/u), and every diagnostic of a
// result as text for a failure message.
#pragma once

#include <string>

#include "policy/load.h"

namespace sv::policy::test_util {

inline LoadRequest request(std::string text, std::string preset = "none") {
  LoadRequest r;
  r.preset = std::move(preset);
  if (!text.empty()) r.files.push_back({"p.json", std::move(text)});
  r.workspace = "/ws";
  r.home = "/home/u";
  return r;
}

inline std::string all(const LoadResult& res) {
  std::string s;
  for (const auto& d : res.diagnostics) s += d.format() + "\n";
  return s;
}

}  // namespace sv::policy::test_util
