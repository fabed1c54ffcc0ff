#include "supervisor/hook_secret.h"

#include <kj/debug.h>
#include <openssl/crypto.h>

#include <cctype>

#include "common/log.h"
#include "common/names.h"
#include "common/random_bytes.h"
#include "supervisor/supervisor.h"

namespace pine {

std::optional<std::string> hookSecretName(const std::string& source) {
  if (!isValidAgentId(source)) return std::nullopt;
  std::string name = "HOOK_";
  for (char c : source) name += c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return name;
}

kj::Promise<void> makeHookSecret(
    Supervisor& sup,
    capnp::CallContext<proto::Supervisor::MakeHookSecretParams, proto::Supervisor::MakeHookSecretResults> context) {
  const std::string source = context.getParams().getSource();
  auto name = hookSecretName(source);
  KJ_REQUIRE(name != std::nullopt, "makeHookSecret: not a source name");
  KJ_REQUIRE(!sup.secrets().get(*name), "makeHookSecret: .env already has an entry " + *name +
                                            "; the webhook needs a name whose entry does not exist yet");
  unsigned char raw[32];
  KJ_REQUIRE(randomBytes(raw, sizeof raw), "makeHookSecret: no random bytes from the kernel");
  static const char* hex = "0123456789abcdef";
  std::string value;
  for (unsigned char b : raw) {
    value += hex[b >> 4];
    value += hex[b & 15];
  }
  OPENSSL_cleanse(raw, sizeof raw);
  try {
    sup.secrets().set(*name, value);
  } catch (std::exception& e) {
    OPENSSL_cleanse(value.data(), value.size());
    KJ_FAIL_REQUIRE("makeHookSecret: could not store the secret", e.what());
  }
  OPENSSL_cleanse(value.data(), value.size());
  audit("secret.set", {{"name", *name}, {"by", "add_source"}, {"source", source}});
  sup.secretsChanged();
  context.getResults().setName(*name);
  return kj::READY_NOW;
}

}  // namespace pine
