// Making audit text safe to show. Paths, argv and comm are chosen by the
// supervised command: in HTML they could be markup, on a terminal escape
// sequences. Every string from an audit file goes through one of these.
#pragma once

#include <string>
#include <string_view>

namespace sv::report {

// & < > " ' as entities; C0 controls and DEL as &#xNN; (but \t).
std::string htmlEscape(std::string_view text);

// C0 controls, DEL and the C1 controls (U+0080..U+009F) as \xNN / \u00NN:
// nothing a terminal would act on.
std::string terminalSafe(std::string_view text);

// `supervise explain --audit-file FILE SESSION:SEQ`, FILE shell-quoted.
std::string explainCommand(std::string_view file, std::string_view session, uint64_t seq);

}  // namespace sv::report
