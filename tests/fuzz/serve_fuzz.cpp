// libFuzzer entry for the exec daemon's message decoder
// (supervisor/serve/protocol.h): every byte of it comes from a client the
// daemon has not yet trusted with anything. Properties for every input:
//  - the frame reader and the decoders never read out of bounds, never hit
//    UB, never throw (ASan/UBSan; a throw aborts);
//  - a frame over the cap is refused by its header alone (nothing buffered
//    is taken for a body);
//  - a decoded request is one the daemon can run: argv non-empty with no
//    NUL, cwd absolute, env names valid, timeout and umask in range;
//  - a decoded request encodes and decodes again to the same request;
//  - the same for the daemon's hand-off to a ready session runner.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "supervisor/serve/protocol.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void checkRequest(const sv::supervisor::serve::ExecRequest& r) {
  using namespace sv::supervisor::serve;
  check(!r.argv.empty() && !r.argv[0].empty());
  for (const auto& a : r.argv) check(a.find('\0') == std::string::npos);
  check(!r.cwd.empty() && r.cwd[0] == '/');
  for (const auto& [name, value] : r.env) {
    check(!name.empty() && name.find('=') == std::string::npos);
    check(value.find('\0') == std::string::npos);
  }
  check(r.timeout_ms <= kMaxTimeoutMs && r.umask <= 0777);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace sv::supervisor::serve;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);

  // The body alone, as a client message and as a reply.
  if (auto m = decodeClientMessage(bytes); m && m->exec) {
    checkRequest(*m->exec);
    const std::string again = encodeRequest(*m->exec);
    auto back = decodeClientMessage(again);
    check(back.ok() && back->exec);
    // Invalid UTF-8 is replaced on encoding: compare only what survives it.
    check(back->exec->argv.size() == m->exec->argv.size());
    check(back->exec->env.size() == m->exec->env.size() || back->exec->env.size() < m->exec->env.size());
    check(back->exec->timeout_ms == m->exec->timeout_ms && back->exec->umask == m->exec->umask);
  }
  (void)decodeReply(bytes);
  // The daemon's hand-off to a ready runner (from the daemon itself, but
  // decoded as strictly): what decodes is a runnable request.
  if (auto h = decodeHandOff(bytes)) {
    checkRequest(h->request);
    auto back = decodeHandOff(encodeHandOff(*h));
    check(back.ok() && back->client_pid == h->client_pid && back->client_uid == h->client_uid);
  }

  // The same bytes as a stream of frames, fed in two pieces.
  FrameReader reader(kMaxControlBytes);
  reader.feed(bytes.substr(0, size / 2));
  reader.feed(bytes.substr(size / 2));
  for (int frames = 0; frames < 64; ++frames) {
    auto body = reader.next();
    if (!body || !*body) break;
    check((*body)->size() <= kMaxControlBytes);
    if (auto m = decodeClientMessage(**body); m && m->exec) checkRequest(*m->exec);
  }
  return 0;
}
