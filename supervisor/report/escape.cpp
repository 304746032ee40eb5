// htmlEscape(), terminalSafe(), explainCommand() (escape.h).
#include "supervisor/report/escape.h"

#include <cctype>
#include <cstdint>
#include <cstdio>

namespace sv::report {

std::string htmlEscape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default:
        if ((u < 0x20 && c != '\t') || u == 0x7f) {
          char buf[16];
          std::snprintf(buf, sizeof buf, "&#x%02X;", u);
          out += u == 0 ? "&#xFFFD;" : buf;  // NUL is not a character reference HTML allows
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string terminalSafe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const auto u = static_cast<unsigned char>(text[i]);
    char buf[16];
    if (u < 0x20 || u == 0x7f) {
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else if (u == 0xC2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9F) {
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      out += buf;
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

namespace {

// A word for the shell: as is when it is plain, else in single quotes.
std::string shellWord(std::string_view word) {
  bool plain = !word.empty();
  for (char c : word)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '.' || c == '-' ||
          c == '_' || c == ':'))
      plain = false;
  if (plain) return std::string(word);
  std::string quoted = "'";
  for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

}  // namespace

std::string explainCommand(std::string_view file, std::string_view session, uint64_t seq) {
  return "supervise explain --audit-file " + shellWord(file) + " " +
         shellWord(std::string(session) + ":" + std::to_string(seq));
}

}  // namespace sv::report
