// DNS wire-format parsing and query building; see dns_message.h.
//
// Every read goes through Reader, which fails instead of reading past the
// end. Names are rendered in presentation form with '.', '\\' and
// non-printable bytes escaped (\DDD), so a single label "a.b" can never
// compare equal to the two labels "a" and "b".
#include "supervisor/net/dns_message.h"

#include <cstdio>
#include <cstring>
#include <set>

namespace sv::supervisor::dns {
namespace {

constexpr size_t kMaxLabel = 63;
constexpr int kMaxCnameHops = 16;

Error bad(const std::string& what) { return Error{EBADMSG, "dns: " + what}; }

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> wire) : wire_(wire) {}
  size_t pos() const { return pos_; }
  bool u8(uint8_t* v) {
    if (pos_ + 1 > wire_.size()) return false;
    *v = wire_[pos_++];
    return true;
  }
  bool u16(uint16_t* v) {
    if (pos_ + 2 > wire_.size()) return false;
    *v = static_cast<uint16_t>(wire_[pos_] << 8 | wire_[pos_ + 1]);
    pos_ += 2;
    return true;
  }
  bool u32(uint32_t* v) {
    if (pos_ + 4 > wire_.size()) return false;
    *v = static_cast<uint32_t>(wire_[pos_]) << 24 | static_cast<uint32_t>(wire_[pos_ + 1]) << 16 |
         static_cast<uint32_t>(wire_[pos_ + 2]) << 8 | wire_[pos_ + 3];
    pos_ += 4;
    return true;
  }
  bool skip(size_t n) {
    if (n > wire_.size() - pos_) return false;
    pos_ += n;
    return true;
  }
  // A (possibly compressed) name starting at pos(); pos() ends after it.
  bool name(std::string* out) {
    size_t end = 0;
    if (!nameAt(pos_, out, &end)) return false;
    pos_ = end;
    return true;
  }
  // A name starting at `at`; *end is where the name's own bytes stop
  // (after the first pointer, or after the root label).
  bool nameAt(size_t at, std::string* out, size_t* end) const {
    out->clear();
    size_t wire_len = 0;
    size_t p = at;
    bool jumped = false;
    while (true) {
      if (p >= wire_.size()) return false;
      uint8_t len = wire_[p];
      if ((len & 0xc0) == 0xc0) {
        if (p + 1 >= wire_.size()) return false;
        size_t target = static_cast<size_t>(len & 0x3f) << 8 | wire_[p + 1];
        // Only strictly backwards: every jump lowers p, so the walk ends.
        if (target >= p) return false;
        if (!jumped) *end = p + 2;
        jumped = true;
        p = target;
        continue;
      }
      if ((len & 0xc0) != 0) return false;  // 0x40 / 0x80 label types are obsolete
      wire_len += 1 + len;
      if (wire_len > kMaxNameWire) return false;
      if (len == 0) {
        if (!jumped) *end = p + 1;
        return true;
      }
      if (len > kMaxLabel || p + 1 + len > wire_.size()) return false;
      if (!out->empty()) out->push_back('.');
      appendLabel(wire_.subspan(p + 1, len), out);
      p += 1 + len;
    }
  }

 private:
  static void appendLabel(std::span<const uint8_t> label, std::string* out) {
    for (uint8_t c : label) {
      if (c >= 'A' && c <= 'Z') {
        out->push_back(static_cast<char>(c - 'A' + 'a'));
      } else if (c > 0x20 && c < 0x7f && c != '.' && c != '\\') {
        out->push_back(static_cast<char>(c));
      } else {
        char esc[5];
        std::snprintf(esc, sizeof esc, "\\%03u", c);
        out->append(esc);
      }
    }
  }

  std::span<const uint8_t> wire_;
  size_t pos_ = 0;
};

struct Record {
  std::string owner;
  uint16_t type = 0, klass = 0;
  uint32_t ttl = 0;
  std::string target;  // CNAME
  policy::Ip6 ip{};    // A / AAAA
};

}  // namespace

Result<Message> parse(std::span<const uint8_t> wire) {
  Reader r(wire);
  Message m;
  uint16_t flags = 0, qd = 0, an = 0, ns = 0, ar = 0;
  if (!r.u16(&m.id) || !r.u16(&flags) || !r.u16(&qd) || !r.u16(&an) || !r.u16(&ns) ||
      !r.u16(&ar))
    return bad("short header");
  m.response = flags & 0x8000;
  m.opcode = static_cast<uint8_t>(flags >> 11 & 0xf);
  m.truncated = flags & 0x0200;
  m.rcode = static_cast<uint8_t>(flags & 0xf);
  if (qd != 1) return bad("expected one question, got " + std::to_string(qd));
  if (!r.name(&m.qname) || !r.u16(&m.qtype) || !r.u16(&m.qclass)) return bad("bad question");

  std::vector<Record> records;
  for (uint16_t i = 0; i < an; ++i) {
    Record rec;
    uint16_t rdlen = 0;
    if (!r.name(&rec.owner) || !r.u16(&rec.type) || !r.u16(&rec.klass) || !r.u32(&rec.ttl) ||
        !r.u16(&rdlen))
      return bad("bad answer record " + std::to_string(i));
    const size_t rdata = r.pos();
    if (!r.skip(rdlen)) return bad("answer record " + std::to_string(i) + " overruns the message");
    if (rec.ttl & 0x80000000u) rec.ttl = 0;  // RFC 2181 8: treat as zero
    if (rec.klass != kClassIn) continue;
    if (rec.type == kTypeA && rdlen == 4) {
      rec.ip[10] = rec.ip[11] = 0xff;
      std::memcpy(&rec.ip[12], wire.data() + rdata, 4);
    } else if (rec.type == kTypeAaaa && rdlen == 16) {
      std::memcpy(rec.ip.data(), wire.data() + rdata, 16);
    } else if (rec.type == kTypeCname) {
      size_t end = 0;
      // The target must lie inside this record's rdata (pointers may leave it).
      if (!r.nameAt(rdata, &rec.target, &end) || end != rdata + rdlen)
        return bad("bad CNAME in answer record " + std::to_string(i));
    } else {
      continue;
    }
    records.push_back(std::move(rec));
  }
  // Authority and additional sections are not read: glue there is not an
  // answer to the question and must not widen the allowlist.

  std::set<std::string> names{m.qname};
  for (int hop = 0; hop < kMaxCnameHops; ++hop) {
    size_t before = names.size();
    for (const auto& rec : records)
      if (rec.type == kTypeCname && names.count(rec.owner)) names.insert(rec.target);
    if (names.size() == before) break;
  }
  for (const auto& rec : records) {
    if ((rec.type == kTypeA || rec.type == kTypeAaaa) && names.count(rec.owner))
      m.addresses.push_back({rec.ip, rec.ttl});
  }
  return m;
}

Result<std::vector<uint8_t>> buildQuery(uint16_t id, std::string_view name, uint16_t qtype) {
  if (!name.empty() && name.back() == '.') name.remove_suffix(1);
  std::vector<uint8_t> out = {static_cast<uint8_t>(id >> 8), static_cast<uint8_t>(id), 0x01, 0x00,
                              0, 1, 0, 0, 0, 0, 0, 0};
  size_t wire_len = 1;
  while (!name.empty()) {
    size_t dot = name.find('.');
    std::string_view label = name.substr(0, dot);
    if (label.empty() || label.size() > kMaxLabel)
      return Error{EINVAL, "dns: bad label in '" + std::string(name) + "'"};
    wire_len += 1 + label.size();
    if (wire_len > kMaxNameWire) return Error{EINVAL, "dns: name too long"};
    out.push_back(static_cast<uint8_t>(label.size()));
    out.insert(out.end(), label.begin(), label.end());
    name = dot == std::string_view::npos ? std::string_view() : name.substr(dot + 1);
  }
  out.push_back(0);
  out.insert(out.end(), {static_cast<uint8_t>(qtype >> 8), static_cast<uint8_t>(qtype), 0,
                         static_cast<uint8_t>(kClassIn)});
  return out;
}

}  // namespace sv::supervisor::dns
