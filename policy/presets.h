// Built-in presets and the system path lists every preset shares.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sv::policy {

// The embedded JSON text of a preset ("code-sandbox", "audit-only", "strict"),
// parsed by the same parser as a policy file under the name "preset:<name>".
std::optional<std::string_view> presetText(std::string_view name);
std::vector<std::string> presetNames();

// Paths readable under every preset (ids "system-read:<path>").
const std::vector<std::string_view>& systemReadPaths();
// Device paths writable under every preset (ids "system-write:<path>").
const std::vector<std::string_view>& systemWritePaths();

// System paths that are readable but never executable, even when exec.allow is
// empty (devices, /proc, /sys: nothing there is a program; /dev/shm is the
// classic drop-and-run spot). Both the Engine and the Landlock plan use it.
bool isNoExecSystemPath(std::string_view path);

}  // namespace sv::policy
