#include "broker/telegram/pairing.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <algorithm>
#include <stdexcept>

namespace pine::telegram {
namespace {

// Crockford's base32: no I, L, O, U, so a code read aloud or off a phone is typed right.
constexpr char kCodeAlphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

std::string newCode() {
  unsigned char r[8];
  if (RAND_bytes(r, sizeof r) != 1) throw std::runtime_error("no randomness for a pairing code");
  std::string code;
  for (unsigned char c : r) code += kCodeAlphabet[c & 31];  // 8 x 5 bits
  return code;
}

}  // namespace

std::string channelOf(const std::string& source) { return "telegram:" + source; }

Standing Pairings::standing(long long userId, long long nowMs) const {
  if (std::find(allow_.begin(), allow_.end(), userId) != allow_.end()) return Standing::Owner;
  auto p = store_.pairing(channelOf(source_), std::to_string(userId));
  if (!p) return Standing::Stranger;
  if (p->state == "paired") return Standing::Owner;
  if (p->state == "denied") return Standing::Denied;
  return p->expiresMs > nowMs ? Standing::Pending : Standing::Stranger;
}

bool Pairings::hasOwner() const {
  if (!allow_.empty()) return true;
  for (auto& p : store_.pairings(channelOf(source_)))
    if (p.state == "paired") return true;
  return false;
}

std::optional<std::string> Pairings::issueCode(const Account& a, long long nowMs) {
  if (hasOwner() || standing(a.userId, nowMs) != Standing::Stranger) return std::nullopt;
  size_t live = 0;
  for (auto& p : store_.pairings(channelOf(source_)))
    if (p.state == "pending" && p.expiresMs > nowMs) live++;
  if (live >= kMaxLiveCodes) return std::nullopt;
  std::string code = newCode();
  store::PairingRow row;
  row.channel = channelOf(source_);
  row.account = std::to_string(a.userId);
  row.state = "pending";
  row.code = codeHash(code);
  row.createdMs = nowMs;
  row.expiresMs = nowMs + kCodeLifetimeMs;
  row.chatId = a.chatId;
  row.name = a.name.substr(0, 256);
  row.username = a.username.substr(0, 64);
  store_.putPairing(row);
  return code.substr(0, 4) + "-" + code.substr(4);
}

std::vector<long long> Pairings::ownerChats() const {
  std::vector<long long> chats;
  for (auto& p : store_.pairings(channelOf(source_)))
    if (p.state == "paired" && p.chatId != 0) chats.push_back(p.chatId);
  for (auto id : allow_)
    if (std::find(chats.begin(), chats.end(), id) == chats.end()) chats.push_back(id);
  return chats;
}

std::string normalizeCode(const std::string& typed) {
  std::string out;
  for (char c : typed) {
    if (c == '-' || c == ' ') continue;
    c = (char)std::toupper((unsigned char)c);
    if (c == 'O') c = '0';
    if (c == 'I' || c == 'L') c = '1';
    out += c;
  }
  return out;
}

std::string codeHash(const std::string& normalized) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (EVP_Digest(normalized.data(), normalized.size(), md, &n, EVP_sha256(), nullptr) != 1)
    throw std::runtime_error("sha256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) {
    out += kHex[md[i] >> 4];
    out += kHex[md[i] & 15];
  }
  return out;
}

std::optional<store::PairingRow> findCode(store::Store& store, const std::string& typed, long long nowMs) {
  std::string code = normalizeCode(typed);
  if (code.size() != 8) return std::nullopt;
  auto row = store.pairingByCode(codeHash(code));
  if (!row || row->channel.rfind("telegram:", 0) != 0 || row->expiresMs <= nowMs) return std::nullopt;
  return row;
}

std::optional<store::PairingRow> decideCode(store::Store& store, const std::string& typed, bool pair, long long nowMs) {
  auto row = findCode(store, typed, nowMs);
  if (!row) return std::nullopt;
  row->state = pair ? "paired" : "denied";
  row->code.clear();  // spent
  row->decidedMs = nowMs;
  row->expiresMs = 0;
  store.putPairing(*row);
  if (pair)  // the source has its owner now: codes others were sent meanwhile are void
    for (auto other : store.pairings(row->channel))
      if (other.state == "pending" && other.expiresMs > nowMs) {
        other.expiresMs = nowMs;
        other.code.clear();
        store.putPairing(other);
      }
  return row;
}

}  // namespace pine::telegram
