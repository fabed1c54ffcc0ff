#include "supervisor/secrets/config_writer.h"

#include <fcntl.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "common/fd.h"
#include "common/log.h"
#include "common/names.h"
#include "common/path_parts.h"
#include "common/sha256_hex.h"
#include "config/load.h"

namespace pine::secrets {
namespace {

std::string hex(const unsigned char* p, std::size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (std::size_t i = 0; i < n; ++i) {
    out += digits[p[i] >> 4];
    out += digits[p[i] & 15];
  }
  return out;
}

// Closes on scope exit, so every early return and throw releases the fd.
struct Fd {
  int fd = -1;
  explicit Fd(int f = -1) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  Fd(Fd&& o) noexcept : fd(o.fd) { o.fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      if (fd >= 0) ::close(fd);
      fd = o.fd;
      o.fd = -1;
    }
    return *this;
  }
};

// Why relPath may not be written, or empty when it may.
std::string pathRefusal(const std::string& rel) {
  if (rel.empty()) return "empty path";
  if (rel.find('\0') != std::string::npos) return "path contains a NUL byte";
  if (rel[0] == '/') return "absolute paths are refused (give a path relative to the home)";
  auto parts = splitPath(rel);
  for (auto& c : parts) {
    if (c == "..") return "'..' is refused";
    if (c == "." || c.empty()) return "'.' and empty path components are refused";
  }
  if (parts[0] == ".env") return ".env holds secrets: set them with `pinectl secret set NAME`";
  if (parts[0] == "data") return "data/ is pine's state, not configuration";
  if (parts.size() == 1 && (rel == "pine.yaml" || rel == "pine.json" || rel == "models.yaml" || rel == "models.json"))
    return {};
  if (parts.size() == 3 && parts[0] == "agents") {
    if (!isValidAgentId(parts[1])) return "'" + parts[1] + "' is not a valid agent id";
    if (parts[2] == "agent.yaml" || parts[2] == "agent.json") return {};
    // An agent's AGENTS.md holds the owner's rules for it: from the owner only (addOnlyRefusal).
    if (parts[2] == "AGENTS.md") return {};
  }
  if (parts.size() == 3 && parts[0] == "skills" && parts[2] == "SKILL.md") {
    if (!isValidAgentId(parts[1])) return "'" + parts[1] + "' is not a valid skill name";
    return {};
  }
  return "not a configuration file pine writes (pine.yaml, models.yaml, agents/<id>/agent.yaml, "
         "agents/<id>/AGENTS.md, skills/<name>/SKILL.md; .json for the first three)";
}

// What the broker may only add, never replace: a skill (it would change another agent's
// standing instructions); an AGENTS.md it never writes (a new agent's first one comes with
// createAgentFiles). `dirFd` is the target's folder, or -1 when that folder does not exist yet.
std::string addOnlyRefusal(int dirFd, const std::vector<std::string>& parts, bool fromOwner) {
  if (fromOwner || parts.empty()) return {};
  auto exists = [&](const char* name) {
    struct stat st;
    return dirFd >= 0 && fstatat(dirFd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  };
  if (parts.back() == "SKILL.md" && exists("SKILL.md"))
    return "the skill exists; an agent adds skills, the owner changes them";
  if (parts.back() == "AGENTS.md") return "an agent's AGENTS.md is changed by the owner only";
  return {};
}

// Opens the folder holding relPath, walking from the home with O_NOFOLLOW so a
// link anywhere on the way is refused rather than followed. With create,
// missing folders are made (mode 700); without it a missing folder yields -1
// and no error (the change would create it). Throws with the reason otherwise.
Fd openParent(int homeFd, const std::vector<std::string>& parts, bool create) {
  Fd cur(::dup(homeFd));
  if (cur.fd < 0) throw std::runtime_error(std::string("dup: ") + strerror(errno));
  std::string walked;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : "/") + parts[i];
    struct stat st;
    if (fstatat(cur.fd, parts[i].c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) throw std::runtime_error(walked + ": " + strerror(errno));
      if (!create) return Fd(-1);
      if (mkdirat(cur.fd, parts[i].c_str(), 0700) != 0 && errno != EEXIST)
        throw std::runtime_error("cannot create " + walked + ": " + strerror(errno));
    } else {
      if (S_ISLNK(st.st_mode)) throw std::runtime_error(walked + " is a symbolic link; refused");
      if (!S_ISDIR(st.st_mode)) throw std::runtime_error(walked + " is not a folder");
      // Another uid owning a folder on the way could swap its entries under us.
      if (st.st_uid != geteuid()) throw std::runtime_error(walked + " is not owned by pined's user");
    }
    Fd next(openat(cur.fd, parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (next.fd < 0)
      throw std::runtime_error(walked + (errno == ELOOP || errno == ENOTDIR ? " is not a folder (or is a link); refused"
                                                                            : std::string(": ") + strerror(errno)));
    cur = std::move(next);
  }
  return cur;
}

// The target itself: absent, or a regular file of ours (never a link).
void checkTarget(int dirFd, const std::string& name, const std::string& rel) {
  struct stat st;
  if (fstatat(dirFd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno == ENOENT) return;
    throw std::runtime_error(rel + ": " + strerror(errno));
  }
  if (S_ISLNK(st.st_mode)) throw std::runtime_error(rel + " is a symbolic link; refused");
  if (!S_ISREG(st.st_mode)) throw std::runtime_error(rel + " is not a regular file");
  if (st.st_uid != geteuid()) throw std::runtime_error(rel + " is not owned by pined's user");
}

ChangeResult refuse(const std::string& rel, const std::string& by, const std::string& why) {
  audit("config.change.refused", {{"file", rel}, {"by", by}, {"reason", why}});
  return {false, {rel + ": " + why}};
}

}  // namespace

void writeFileAtomicAt(int dirfd, const std::string& name, std::string_view content, unsigned mode) {
  unsigned char rnd[8];
  if (RAND_bytes(rnd, sizeof rnd) != 1) throw std::runtime_error("cannot write " + name + ": no randomness");
  // Hidden and unpredictable, created with O_EXCL: nothing can be planted at the temp name.
  const std::string tmp = "." + name + ".tmp-" + hex(rnd, sizeof rnd);
  Fd fd(openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
  if (fd.fd < 0) throw std::runtime_error("cannot write " + name + ": " + strerror(errno));
  bool ok = fchmod(fd.fd, mode) == 0 && writeAll(fd.fd, content.data(), content.size()) && fsync(fd.fd) == 0;
  int e = errno;
  if (::close(fd.fd) != 0 && ok) {
    ok = false;
    e = errno;
  }
  fd.fd = -1;
  if (ok && renameat(dirfd, tmp.c_str(), dirfd, name.c_str()) != 0) {
    ok = false;
    e = errno;
  }
  if (!ok) {
    unlinkat(dirfd, tmp.c_str(), 0);
    throw std::runtime_error("cannot write " + name + ": " + strerror(e));
  }
  // The new name is in place; a failed folder fsync only weakens durability across a crash.
  fsync(dirfd);
}

ChangeResult applyConfigChange(const std::string& home, const std::string& relPath, const std::string& text,
                               const std::string& by, bool fromOwner) {
  if (std::string why = pathRefusal(relPath); !why.empty()) return refuse(relPath, by, why);
  if (text.size() > kMaxConfigFile)
    return refuse(relPath, by, "too large (" + std::to_string(text.size()) + " bytes, at most " +
                                   std::to_string(kMaxConfigFile) + ")");
  if (text.find('\0') != std::string::npos) return refuse(relPath, by, "contains a NUL byte");

  Fd homeFd(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (homeFd.fd < 0) return refuse(relPath, by, "cannot open the home: " + std::string(strerror(errno)));
  const auto parts = splitPath(relPath);
  try {
    // Check the way first without creating anything: a refused change leaves no trace.
    Fd parent = openParent(homeFd.fd, parts, false);
    if (parent.fd >= 0) checkTarget(parent.fd, parts.back(), relPath);
    if (std::string why = addOnlyRefusal(parent.fd, parts, fromOwner); !why.empty()) return refuse(relPath, by, why);
  } catch (const std::exception& e) {
    return refuse(relPath, by, e.what());
  }

  config::LoadResult r = config::validateChange(home, relPath, text);
  if (!r.ok()) {
    ChangeResult out;
    for (auto& e : r.errors) out.errors.push_back(e.format());
    // Validation messages may quote parts of the text: the audit gets the count only.
    audit("config.change.refused",
          {{"file", relPath}, {"by", by}, {"reason", "does not validate"}, {"errors", r.errors.size()}});
    return out;
  }

  try {
    Fd parent = openParent(homeFd.fd, parts, true);
    checkTarget(parent.fd, parts.back(), relPath);
    // Again on the folder actually written to: it may have appeared since the first look.
    if (std::string why = addOnlyRefusal(parent.fd, parts, fromOwner); !why.empty()) return refuse(relPath, by, why);
    writeFileAtomicAt(parent.fd, parts.back(), text, 0600);
  } catch (const std::exception& e) {
    return refuse(relPath, by, e.what());
  }
  audit("config.change", {{"file", relPath}, {"by", by}, {"sha256", sha256Hex(text)}, {"bytes", text.size()}});
  return {true, {}};
}

ChangeResult createAgentFiles(const std::string& home, const std::string& id, const std::string& agentYaml,
                              const std::string& instructions, const std::string& by) {
  const std::string dir = "agents/" + id;
  if (!isValidAgentId(id)) return refuse(dir, by, "'" + id + "' is not a valid agent id");
  for (const std::string* text : {&agentYaml, &instructions}) {
    if (text->size() > kMaxConfigFile)
      return refuse(dir, by, "too large (" + std::to_string(text->size()) + " bytes, at most " +
                                 std::to_string(kMaxConfigFile) + ")");
    if (text->find('\0') != std::string::npos) return refuse(dir, by, "contains a NUL byte");
  }
  Fd homeFd(::open(home.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (homeFd.fd < 0) return refuse(dir, by, "cannot open the home: " + std::string(strerror(errno)));
  const auto parts = splitPath(dir + "/agent.yaml");
  try {
    Fd agents = openParent(homeFd.fd, {"agents", "x"}, true);
    struct stat st;
    if (fstatat(agents.fd, id.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
      return refuse(dir, by, "exists: a new agent needs a new id (an existing agent is changed by the owner)");
  } catch (const std::exception& e) {
    return refuse(dir, by, e.what());
  }
  config::LoadOptions opts;
  opts.overlay[dir + "/agent.yaml"] = agentYaml;
  opts.overlay[dir + "/AGENTS.md"] = instructions;
  config::LoadResult r = config::loadHome(home, opts);
  if (!r.ok()) {
    ChangeResult out;
    for (auto& e : r.errors) out.errors.push_back(e.format());
    audit("config.change.refused", {{"file", dir}, {"by", by}, {"reason", "does not validate"}, {"errors", r.errors.size()}});
    return out;
  }
  try {
    // Only a folder this call made: one that appeared meanwhile is refused, not written into.
    Fd agents = openParent(homeFd.fd, {"agents", "x"}, true);
    if (mkdirat(agents.fd, id.c_str(), 0700) != 0)
      throw std::runtime_error(dir + ": " + (errno == EEXIST ? std::string("exists") : strerror(errno)));
    Fd folder = openParent(homeFd.fd, parts, false);
    // The instructions first: an agent.yaml is what makes the folder an agent.
    writeFileAtomicAt(folder.fd, "AGENTS.md", instructions, 0600);
    writeFileAtomicAt(folder.fd, "agent.yaml", agentYaml, 0600);
  } catch (const std::exception& e) {
    return refuse(dir, by, e.what());
  }
  audit("config.change", {{"file", dir + "/AGENTS.md"}, {"by", by}, {"sha256", sha256Hex(instructions)},
                          {"bytes", instructions.size()}});
  audit("config.change", {{"file", dir + "/agent.yaml"}, {"by", by}, {"sha256", sha256Hex(agentYaml)},
                          {"bytes", agentYaml.size()}});
  return {true, {}};
}

}  // namespace pine::secrets
