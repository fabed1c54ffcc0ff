// The secret store: the values of <home>/.env, held in pined's memory only.
// Nothing here ever puts a value in an error message, a log line or the
// environment; callers that need a value (egress injection, HMAC, the
// redactor) ask for it by name at the moment of use.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pine::secrets {

// Values longer than this are refused by set(): .env is not a file store.
inline constexpr std::size_t kMaxSecretValue = 64 * 1024;

class SecretStore {
 public:
  explicit SecretStore(std::string envPath);  // <home>/.env
  ~SecretStore();                             // wipes the values
  SecretStore(const SecretStore&) = delete;
  SecretStore& operator=(const SecretStore&) = delete;

  // (Re)reads .env with pine::config::parseEnvText. Returns every error as
  // "file:line:column: NAME: message (hint)" (never a value); on any error the
  // previous values stay in force. A missing .env is an empty store. A linked
  // .env is followed here (a dotfiles manager), but set() never replaces one.
  std::vector<std::string> load();

  std::optional<std::string> get(std::string_view name) const;
  std::vector<std::string> names() const;   // sorted
  std::vector<std::string> values() const;  // every value (each at least 1 byte), for the redactor

  // NAME must be [A-Z_][A-Z0-9_]* of at most 128 bytes; the value 1 byte to
  // 64 KiB without NUL (newlines, quotes, '#', '$' are written escaped or
  // quoted so both .env readers give the value back). .env is rewritten
  // atomically with mode 600, every other line kept as it was: the NAME line
  // is replaced in place (later duplicates of NAME are dropped), or appended.
  // Refuses a .env that is a link, not a regular file or not owned by this
  // uid. Memory is updated only once the file is on disk. Throws
  // std::runtime_error whose message never contains the value.
  void set(const std::string& name, const std::string& value);

  // Removes every NAME line the same way; throws when NAME is not in .env.
  void unset(const std::string& name);

  const std::string& path() const { return envPath_; }

 private:
  // Rewrites .env with the NAME lines replaced by `line` (or removed when
  // empty); returns whether any NAME line was found.
  bool rewrite(const std::string& name, const std::string& line, bool appendIfMissing);

  std::string envPath_;
  mutable std::mutex mu_;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace pine::secrets
