// The configuration change writer: the only code in pine that writes
// configuration. A change is a whole file's new text for one allowed path of
// the home; it is validated as the home would load with it, then written
// atomically and audited (never its content).
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace pine::secrets {

// Configuration files are small; anything bigger is a mistake or an attack.
inline constexpr std::size_t kMaxConfigFile = 1024 * 1024;

struct ChangeResult {
  bool ok = false;
  std::vector<std::string> errors;  // "file:line:column: ..." from validation, or "relPath: why refused"
};

// relPath is relative to home and one of: pine.yaml|json, models.yaml|json,
// agents/<id>/agent.yaml|json, skills/<name>/SKILL.md, and agents/<id>/AGENTS.md
// (the agent's owner rules: only when fromOwner). Without fromOwner (the broker
// asking) a SKILL.md is only added, never replaced. Absolute paths, "..", ".",
// empty components, .env (secrets go through SecretStore::set) and data/ are
// refused. Every folder on the way is opened from the home with O_NOFOLLOW and
// must be owned by this uid (missing ones are created, mode 700); the target
// must not be a link. The text is checked with pine::config::validateChange;
// if it does not validate nothing is written and the errors are returned.
// Otherwise the file is written atomically with mode 600 and
// audit("config.change", {file, by, sha256, bytes}) is recorded; refusals are
// audited as "config.change.refused" with the reason (never the text).
ChangeResult applyConfigChange(const std::string& home, const std::string& relPath, const std::string& text,
                               const std::string& by, bool fromOwner);

// A new agent (create_agent, approved by the owner): agents/<id>/AGENTS.md and
// agent.yaml, validated together as the home would be with both, written only
// into a folder this call creates. An existing id, or any entry of that name
// under agents/, is refused. Audited like applyConfigChange.
ChangeResult createAgentFiles(const std::string& home, const std::string& id, const std::string& agentYaml,
                              const std::string& instructions, const std::string& by);

// Writes dirfd/name atomically: a new temp file in the same folder (O_EXCL,
// random name), fchmod(mode), write, fsync, renameat over name, fsync the
// folder. renameat replaces a link at `name` rather than writing through it.
// Throws std::runtime_error naming `name` (never the content).
void writeFileAtomicAt(int dirfd, const std::string& name, std::string_view content, unsigned mode);


}  // namespace pine::secrets
