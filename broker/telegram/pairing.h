// Who may speak through a telegram source (pine-security.md layer 1). Pairing needs both
// ends: the bot sends a code to the account that wrote to it, and the owner types that code
// into pine, which names the account before it is paired. A denied account is never asked
// about again; once the source has an owner (a paired account, or ids in `allow`), anybody
// else gets no answer at all and causes no question. Codes are single use, expire, and carry
// 40 random bits; the store keeps only their hash.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/store/store.h"

namespace pine::telegram {

struct Account {
  long long userId = 0;
  long long chatId = 0;  // the private chat the code went to
  std::string name, username;
};

enum class Standing { Owner, Denied, Pending, Stranger };

constexpr long long kCodeLifetimeMs = 10 * 60 * 1000;
constexpr size_t kMaxLiveCodes = 5;  // per source: a crowd of strangers cannot flood the owner

// "telegram:SOURCE", the pairing table's channel.
std::string channelOf(const std::string& source);

class Pairings {
 public:
  Pairings(store::Store& store, std::string source, std::vector<std::int64_t> allow)
      : store_(store), source_(std::move(source)), allow_(std::move(allow)) {}

  Standing standing(long long userId, long long nowMs) const;
  void setAllow(std::vector<std::int64_t> allow) { allow_ = std::move(allow); }
  // A paired account or an `allow` id exists: strangers are ignored.
  bool hasOwner() const;
  // The code to send a stranger who wrote in a private chat, or nullopt when none is sent (the
  // source has an owner, the account was denied or has a live code, too many codes are live).
  std::optional<std::string> issueCode(const Account& account, long long nowMs);
  // The private chats of the accounts heard (paired, and allowed ids: a private chat's id is its user's).
  std::vector<long long> ownerChats() const;

 private:
  store::Store& store_;
  std::string source_;
  std::vector<std::int64_t> allow_;
};

// The owner's side (`pinectl pair telegram`), across every telegram source.
// A code as typed: case, spaces and dashes do not matter, O reads as 0 and I, L as 1.
std::string normalizeCode(const std::string& typed);
std::string codeHash(const std::string& normalized);
// The pending pairing the code names, or why not (unknown, used, expired: all "no such code").
std::optional<store::PairingRow> findCode(store::Store& store, const std::string& typed, long long nowMs);
// Pairs or denies the account the code names; the code is spent either way. nullopt when the
// code names nothing (see findCode).
std::optional<store::PairingRow> decideCode(store::Store& store, const std::string& typed, bool pair, long long nowMs);

}  // namespace pine::telegram
