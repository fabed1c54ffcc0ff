// Owner channels' rows: pairings (every channel), and the Telegram channel's long-poll offset
// and inbox, chats' conversations, approval cards and answers owed; files sent with a task.
#include "broker/store/checks.h"
#include "broker/store/sqlite_db.h"
#include "broker/store/store.h"

namespace pine::store {

using namespace detail;

namespace {

#define PAIRING_COLUMNS \
  "SELECT channel, account, state, code, created_ms, decided_ms, chat_id, name, username, expires_ms FROM pairings"

PairingRow readPairing(const Stmt& st) {
  return PairingRow{st.text(0), st.text(1), st.text(2), st.text(3), st.i64(4),
                    st.i64(5),  st.i64(6),  st.text(7), st.text(8), st.i64(9)};
}

#define CARD_COLUMNS "SELECT approval_id, source, chat_id, message_id, ref, state FROM telegram_cards"

TelegramCardRow readCard(const Stmt& st) {
  return TelegramCardRow{st.text(0), st.text(1), st.i64(2), st.i64(3), st.text(4), st.text(5)};
}

}  // namespace

void Store::putPairing(const PairingRow& p) {
  requireNonEmpty(p.channel, "pairing channel");
  requireNonEmpty(p.account, "pairing account");
  requireOneOf(p.state, {"pending", "paired", "denied"}, "pairing " + p.channel + "/" + p.account + ": state");
  auto st = db_->prepare(
      "INSERT INTO pairings (channel, account, state, code, created_ms, decided_ms, chat_id, name, username, "
      "expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (channel, account) DO UPDATE SET state = excluded.state, code = excluded.code, "
      "created_ms = excluded.created_ms, decided_ms = excluded.decided_ms, chat_id = excluded.chat_id, "
      "name = excluded.name, username = excluded.username, expires_ms = excluded.expires_ms",
      "storing a pairing");
  st.bind(1, p.channel).bind(2, p.account).bind(3, p.state).bind(4, p.code).bind(5, p.createdMs).bind(6, p.decidedMs);
  st.bind(7, p.chatId).bind(8, p.name).bind(9, p.username).bind(10, p.expiresMs);
  st.run();
}

std::optional<PairingRow> Store::pairing(const std::string& channel, const std::string& account) const {
  auto st = db_->prepare(PAIRING_COLUMNS " WHERE channel = ?1 AND account = ?2", "reading a pairing");
  st.bind(1, channel).bind(2, account);
  if (!st.step()) return std::nullopt;
  return readPairing(st);
}

std::vector<PairingRow> Store::pairings(const std::string& channel) const {
  auto st = db_->prepare(PAIRING_COLUMNS " WHERE channel = ?1 ORDER BY created_ms, account", "listing pairings");
  st.bind(1, channel);
  std::vector<PairingRow> out;
  while (st.step()) out.push_back(readPairing(st));
  return out;
}

std::optional<PairingRow> Store::pairingByCode(const std::string& codeHash) const {
  if (codeHash.empty()) return std::nullopt;
  auto st = db_->prepare(PAIRING_COLUMNS " WHERE code = ?1 AND state = 'pending'", "finding a pairing code");
  st.bind(1, codeHash);
  if (!st.step()) return std::nullopt;
  return readPairing(st);
}

bool Store::removePairing(const std::string& channel, const std::string& account) {
  auto st = db_->prepare("DELETE FROM pairings WHERE channel = ?1 AND account = ?2", "removing a pairing");
  st.bind(1, channel).bind(2, account);
  st.run();
  return db_->changes() > 0;
}

long long Store::telegramOffset(const std::string& source) const {
  auto st = db_->prepare("SELECT next_update FROM telegram_polls WHERE source = ?1", "reading Telegram's offset");
  st.bind(1, source);
  return st.step() ? st.i64(0) : 0;
}

void Store::acceptTelegramUpdates(const std::string& source, const std::vector<TelegramUpdateRow>& updates,
                                  long long nextOffset) {
  Tx tx(*db_, "storing Telegram updates");
  for (const auto& u : updates) {
    // A repeat (the poll before a crash got it too) keeps the first.
    auto st = db_->prepare("INSERT OR IGNORE INTO telegram_inbox (source, update_id, body) VALUES (?1, ?2, ?3)",
                           "storing a Telegram update");
    st.bind(1, source).bind(2, u.updateId).bind(3, u.body);
    st.run();
  }
  auto st = db_->prepare(
      "INSERT INTO telegram_polls (source, next_update) VALUES (?1, ?2) "
      "ON CONFLICT (source) DO UPDATE SET next_update = max(next_update, excluded.next_update)",
      "storing Telegram's offset");
  st.bind(1, source).bind(2, nextOffset);
  st.run();
  tx.commit();
}

std::vector<TelegramUpdateRow> Store::telegramInbox(const std::string& source) const {
  auto st = db_->prepare("SELECT update_id, body FROM telegram_inbox WHERE source = ?1 ORDER BY update_id",
                         "reading Telegram's inbox");
  st.bind(1, source);
  std::vector<TelegramUpdateRow> out;
  while (st.step()) out.push_back({st.i64(0), st.text(1)});
  return out;
}

void Store::telegramUpdateHandled(const std::string& source, long long updateId) {
  auto st = db_->prepare("DELETE FROM telegram_inbox WHERE source = ?1 AND update_id = ?2",
                         "marking a Telegram update handled");
  st.bind(1, source).bind(2, updateId);
  st.run();
}

std::string Store::telegramChatSession(const std::string& source, long long chatId) const {
  auto st = db_->prepare("SELECT session FROM telegram_chats WHERE source = ?1 AND chat_id = ?2",
                         "reading a chat's conversation");
  st.bind(1, source).bind(2, chatId);
  return st.step() ? st.text(0) : std::string();
}

void Store::setTelegramChatSession(const std::string& source, long long chatId, const std::string& session) {
  requireNonEmpty(session, "a chat's conversation");
  auto st = db_->prepare(
      "INSERT INTO telegram_chats (source, chat_id, session) VALUES (?1, ?2, ?3) "
      "ON CONFLICT (source, chat_id) DO UPDATE SET session = excluded.session",
      "storing a chat's conversation");
  st.bind(1, source).bind(2, chatId).bind(3, session);
  st.run();
}

void Store::putTelegramCard(const TelegramCardRow& c) {
  requireNonEmpty(c.ref, "an approval card's reference");
  requireOneOf(c.state, {"open", "closed"}, "approval card " + c.approvalId + ": state");
  auto st = db_->prepare(
      "INSERT INTO telegram_cards (approval_id, source, chat_id, message_id, ref, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
      "ON CONFLICT (approval_id, source, chat_id) DO UPDATE SET message_id = excluded.message_id, "
      "state = excluded.state",
      "storing an approval card");
  st.bind(1, c.approvalId).bind(2, c.source).bind(3, c.chatId).bind(4, c.messageId).bind(5, c.ref).bind(6, c.state);
  st.run();
}

std::optional<TelegramCardRow> Store::telegramCardByRef(const std::string& ref) const {
  auto st = db_->prepare(CARD_COLUMNS " WHERE ref = ?1", "reading an approval card");
  st.bind(1, ref);
  if (!st.step()) return std::nullopt;
  return readCard(st);
}

std::vector<TelegramCardRow> Store::telegramCards(const std::string& approvalId) const {
  auto st = db_->prepare(CARD_COLUMNS " WHERE approval_id = ?1 ORDER BY source, chat_id", "listing approval cards");
  st.bind(1, approvalId);
  std::vector<TelegramCardRow> out;
  while (st.step()) out.push_back(readCard(st));
  return out;
}

std::vector<TelegramCardRow> Store::telegramOpenCards(const std::string& source) const {
  auto st = db_->prepare(CARD_COLUMNS " WHERE source = ?1 AND state = 'open' ORDER BY approval_id, chat_id",
                         "listing open approval cards");
  st.bind(1, source);
  std::vector<TelegramCardRow> out;
  while (st.step()) out.push_back(readCard(st));
  return out;
}

void Store::addTelegramReply(const std::string& taskId, const std::string& source, long long chatId) {
  auto st = db_->prepare("INSERT OR IGNORE INTO telegram_replies (task_id, source, chat_id) VALUES (?1, ?2, ?3)",
                         "storing an answer owed to a chat");
  st.bind(1, taskId).bind(2, source).bind(3, chatId);
  st.run();
}

std::vector<std::pair<std::string, std::pair<std::string, long long>>> Store::telegramReplies() const {
  auto st = db_->prepare("SELECT task_id, source, chat_id FROM telegram_replies ORDER BY rowid",
                         "listing answers owed to chats");
  std::vector<std::pair<std::string, std::pair<std::string, long long>>> out;
  while (st.step()) out.push_back({st.text(0), {st.text(1), st.i64(2)}});
  return out;
}

void Store::telegramReplySent(const std::string& taskId) {
  auto st = db_->prepare("DELETE FROM telegram_replies WHERE task_id = ?1", "settling an answer owed to a chat");
  st.bind(1, taskId);
  st.run();
}

void Store::putTaskFile(const std::string& taskId, int index, const std::string& path, const std::string& data) {
  auto st = db_->prepare("INSERT OR REPLACE INTO task_files (task_id, idx, path, data) VALUES (?1, ?2, ?3, ?4)",
                         "storing a file of a task");
  st.bind(1, taskId).bind(2, index).bind(3, path).bindBlob(4, data);
  st.run();
}

std::vector<std::string> Store::taskFilePaths(const std::string& taskId) const {
  auto st = db_->prepare("SELECT path FROM task_files WHERE task_id = ?1 ORDER BY idx", "listing a task's files");
  st.bind(1, taskId);
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

std::optional<std::string> Store::taskFileData(const std::string& taskId, int index) const {
  auto st = db_->prepare("SELECT data FROM task_files WHERE task_id = ?1 AND idx = ?2", "reading a file of a task");
  st.bind(1, taskId).bind(2, index);
  if (!st.step()) return std::nullopt;
  return st.text(0);  // the bytes as stored, whatever they are
}

void Store::removeTaskFiles(const std::string& taskId) {
  auto st = db_->prepare("DELETE FROM task_files WHERE task_id = ?1", "removing a task's files");
  st.bind(1, taskId);
  st.run();
}

}  // namespace pine::store
