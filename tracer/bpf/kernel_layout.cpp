// findKernelLayout(): see kernel_layout.h.
#include "tracer/bpf/kernel_layout.h"

#include <sys/mman.h>

#include <cstring>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/read_file.h"

namespace sv::tracer {
namespace {

// The few structs we need out of ~130k types: one pass indexes every type's
// position, then each wanted member is found by name, through anonymous
// struct/union members (mm_struct keeps arg_start in one).

constexpr uint16_t kBtfMagic = 0xeb9f;
enum BtfKind : uint32_t {
  kInt = 1, kPtr, kArray, kStruct, kUnion, kEnum, kFwd, kTypedef, kVolatile, kConst, kRestrict,
  kFunc, kFuncProto, kVar, kDatasec, kFloat, kDeclTag, kTypeTag, kEnum64,
};

struct BtfHeader {
  uint16_t magic;
  uint8_t version, flags;
  uint32_t hdr_len, type_off, type_len, str_off, str_len;
};
struct BtfType {
  uint32_t name_off, info, size_or_type;
};
struct BtfMember {
  uint32_t name_off, type, offset;
};

class BtfIndex {
 public:
  Status parse(std::string_view blob) {
    if (blob.size() < sizeof(BtfHeader)) return Error{EINVAL, "BTF: truncated header"};
    BtfHeader h;
    std::memcpy(&h, blob.data(), sizeof h);
    if (h.magic != kBtfMagic) return Error{EINVAL, "BTF: bad magic"};
    const size_t base = h.hdr_len;
    if (base + size_t(h.type_off) + h.type_len > blob.size() ||
        base + size_t(h.str_off) + h.str_len > blob.size())
      return Error{EINVAL, "BTF: sections out of range"};
    types_ = blob.substr(base + h.type_off, h.type_len);
    strings_ = blob.substr(base + h.str_off, h.str_len);
    offsets_.reserve(types_.size() / 16);
    offsets_.push_back(0);  // type id 0 is void
    size_t pos = 0;
    while (pos + sizeof(BtfType) <= types_.size()) {
      offsets_.push_back(static_cast<uint32_t>(pos));
      const BtfType t = typeAt(pos);
      const uint32_t vlen = t.info & 0xffff;
      size_t extra = 0;
      switch ((t.info >> 24) & 0x1f) {
        case kInt: case kVar: case kDeclTag: extra = 4; break;
        case kArray: extra = 12; break;
        case kStruct: case kUnion: case kDatasec: case kEnum64: extra = 12 * size_t(vlen); break;
        case kEnum: case kFuncProto: extra = 8 * size_t(vlen); break;
        default: break;
      }
      pos += sizeof(BtfType) + extra;
    }
    return {};
  }

  // Type id of the struct named `name`, 0 if none.
  uint32_t findStruct(std::string_view name) const {
    for (uint32_t id = 1; id < offsets_.size(); ++id) {
      const BtfType t = typeAt(offsets_[id]);
      if (kindOf(t) == kStruct && str(t.name_off) == name) return id;
    }
    return 0;
  }

  // Byte offset of member `name` in struct/union `id`, searching anonymous
  // members too; -1 when absent (or a bitfield).
  long memberOffset(uint32_t id, std::string_view name, int depth = 0) const {
    if (id == 0 || id >= offsets_.size() || depth > 8) return -1;
    const BtfType t = typeAt(offsets_[id]);
    if (kindOf(t) != kStruct && kindOf(t) != kUnion) return -1;
    const bool kind_flag = t.info >> 31;
    for (uint32_t i = 0; i < (t.info & 0xffff); ++i) {
      BtfMember m;
      std::memcpy(&m, types_.data() + offsets_[id] + sizeof(BtfType) + 12 * i, sizeof m);
      const uint32_t bits = kind_flag ? (m.offset & 0xffffff) : m.offset;
      if (bits % 8 != 0) continue;
      if (m.name_off != 0) {
        if (str(m.name_off) == name) return bits / 8;
        continue;
      }
      const long inner = memberOffset(m.type, name, depth + 1);
      if (inner >= 0) return bits / 8 + inner;
    }
    return -1;
  }

 private:
  BtfType typeAt(size_t pos) const {
    BtfType t;
    std::memcpy(&t, types_.data() + pos, sizeof t);
    return t;
  }
  static uint32_t kindOf(const BtfType& t) { return (t.info >> 24) & 0x1f; }
  std::string_view str(uint32_t off) const {
    if (off >= strings_.size()) return {};
    const char* p = strings_.data() + off;
    return std::string_view(p, ::strnlen(p, strings_.size() - off));
  }

  std::string_view types_, strings_;
  std::vector<uint32_t> offsets_;  // type id → position in types_
};

// The BTF blob, mapped when the kernel allows it (sysfs BTF is mmap-able
// since 6.16, for free) else read: 5.5 MB through 4 KiB sysfs reads took
// ~20 ms here.
class BtfBlob {
 public:
  Status open(const std::string& path) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) return errnoError("open " + path);
    struct stat st;
    if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) {
      void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd.get(), 0);
      if (p != MAP_FAILED) {
        map_ = p;
        size_ = size_t(st.st_size);
        return {};
      }
    }
    auto text = readWholeFile(path);
    if (!text) return text.error();
    copy_ = std::move(*text);
    return {};
  }
  ~BtfBlob() {
    if (map_) ::munmap(map_, size_);
  }
  std::string_view view() const {
    return map_ ? std::string_view(static_cast<const char*>(map_), size_) : copy_;
  }

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
  std::string copy_;
};

}  // namespace

Result<KernelLayout> findKernelLayout(const std::string& btf_path) {
  BtfBlob blob;
  SV_TRY(blob.open(btf_path));
  BtfIndex btf;
  SV_TRY(btf.parse(blob.view()));
  struct Want {
    const char* type;
    const char* member;
    uint32_t KernelLayout::*field;
  };
  static constexpr Want kWanted[] = {
      {"task_struct", "pid", &KernelLayout::task_pid},
      {"task_struct", "tgid", &KernelLayout::task_tgid},
      {"task_struct", "real_parent", &KernelLayout::task_real_parent},
      {"task_struct", "start_boottime", &KernelLayout::task_start_boottime},
      {"task_struct", "mm", &KernelLayout::task_mm},
      {"mm_struct", "arg_start", &KernelLayout::mm_arg_start},
      {"mm_struct", "arg_end", &KernelLayout::mm_arg_end},
      {"linux_binprm", "file", &KernelLayout::bprm_file},
      {"linux_binprm", "filename", &KernelLayout::bprm_filename},
      {"file", "f_inode", &KernelLayout::file_inode},
      {"inode", "i_ino", &KernelLayout::inode_ino},
      {"inode", "i_sb", &KernelLayout::inode_sb},
      {"super_block", "s_dev", &KernelLayout::sb_dev},
  };
  KernelLayout out;
  std::unordered_map<std::string_view, uint32_t> ids;
  for (const Want& w : kWanted) {
    auto [it, fresh] = ids.try_emplace(w.type, 0);
    if (fresh) it->second = btf.findStruct(w.type);
    const long off = btf.memberOffset(it->second, w.member);
    if (off < 0)
      return Error{ENOENT, std::string("kernel BTF has no ") + w.type + "." + w.member};
    out.*w.field = static_cast<uint32_t>(off);
  }
  return out;
}

}  // namespace sv::tracer
