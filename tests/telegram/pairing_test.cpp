// Pairing as the store keeps it: codes single use, expiring, hashed, capped per source;
// denied accounts never asked again; nobody else once the source has an owner.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>

#include "broker/telegram/pairing.h"

using namespace pine;
using namespace pine::telegram;

namespace {

struct Db {
  std::string dir;
  std::unique_ptr<store::Store> store;
  Db() {
    char tmpl[] = "/tmp/pine-pairing-XXXXXX";
    REQUIRE(mkdtemp(tmpl));
    dir = tmpl;
    store = store::Store::open(dir + "/pine.db");
  }
  ~Db() { std::filesystem::remove_all(dir); }
};

Account account(long long id, const std::string& name = "Ann", const std::string& user = "ann") {
  return Account{id, id, name, user};
}

}  // namespace

TEST_CASE("a stranger gets one code; it pairs once, and then nobody else gets a code") {
  Db db;
  Pairings p(*db.store, "tg", {});
  const long long now = 1'000'000;
  auto code = p.issueCode(account(1), now);
  REQUIRE(code);
  CHECK(code->size() == 9);  // XXXX-XXXX
  CHECK((*code)[4] == '-');
  CHECK(p.standing(1, now) == Standing::Pending);
  CHECK_FALSE(p.issueCode(account(1), now + 1000));  // one live code per account
  // The store keeps the hash, never the code.
  for (auto& row : db.store->pairings(channelOf("tg"))) CHECK(row.code.find(normalizeCode(*code)) == std::string::npos);

  // Typed sloppily: lower case, spaces, O for 0.
  std::string typed = *code;
  for (auto& c : typed) c = (char)std::tolower((unsigned char)c);
  auto found = findCode(*db.store, " " + typed + " ", now + 2000);
  REQUIRE(found);
  CHECK(found->name == "Ann");
  CHECK(found->username == "ann");
  CHECK_FALSE(findCode(*db.store, "ZZZZ-ZZZZ", now));  // wrong code
  CHECK_FALSE(findCode(*db.store, "", now));
  auto paired = decideCode(*db.store, *code, true, now + 3000);
  REQUIRE(paired);
  CHECK(paired->state == "paired");
  CHECK(p.standing(1, now + 4000) == Standing::Owner);
  CHECK_FALSE(decideCode(*db.store, *code, true, now + 5000));  // single use
  CHECK_FALSE(findCode(*db.store, *code, now + 5000));
  CHECK(p.hasOwner());
  CHECK_FALSE(p.issueCode(account(2, "Bob", "bob"), now + 6000));  // nobody else is asked about
  CHECK(p.ownerChats() == std::vector<long long>{1});
}

TEST_CASE("codes expire; a denied account is never asked about again") {
  Db db;
  Pairings p(*db.store, "tg", {});
  const long long now = 5'000'000;
  auto first = p.issueCode(account(7), now);
  REQUIRE(first);
  CHECK_FALSE(findCode(*db.store, *first, now + kCodeLifetimeMs));  // expired
  CHECK_FALSE(decideCode(*db.store, *first, true, now + kCodeLifetimeMs + 1));
  CHECK(p.standing(7, now + kCodeLifetimeMs) == Standing::Stranger);
  auto second = p.issueCode(account(7), now + kCodeLifetimeMs + 1);  // writing again after expiry
  REQUIRE(second);
  CHECK(*second != *first);
  REQUIRE(decideCode(*db.store, *second, false, now + kCodeLifetimeMs + 2));
  CHECK(p.standing(7, now + kCodeLifetimeMs + 3) == Standing::Denied);
  CHECK_FALSE(p.issueCode(account(7), now + 10 * kCodeLifetimeMs));
  CHECK_FALSE(p.hasOwner());  // a denial makes nobody the owner
  CHECK(p.ownerChats().empty());
}

TEST_CASE("once an account is paired, the codes others were sent meanwhile are void") {
  Db db;
  Pairings p(*db.store, "tg", {});
  auto mine = p.issueCode(account(1), 100);
  auto theirs = p.issueCode(account(2, "Eve", "eve"), 200);
  REQUIRE(mine);
  REQUIRE(theirs);
  REQUIRE(decideCode(*db.store, *mine, true, 300));
  CHECK_FALSE(findCode(*db.store, *theirs, 400));
  CHECK_FALSE(decideCode(*db.store, *theirs, true, 400));
  CHECK(p.standing(2, 400) == Standing::Stranger);
}

TEST_CASE("a crowd of strangers cannot flood the owner with codes") {
  Db db;
  Pairings p(*db.store, "tg", {});
  const long long now = 9'000'000;
  size_t issued = 0;
  for (long long id = 100; id < 120; ++id)
    if (p.issueCode(account(id), now)) issued++;
  CHECK(issued == kMaxLiveCodes);
  // Once those expire, others may ask again.
  CHECK(p.issueCode(account(200), now + kCodeLifetimeMs + 1));
}

TEST_CASE("allow ids are heard without pairing, and make the source owned") {
  Db db;
  Pairings p(*db.store, "tg", {42});
  CHECK(p.standing(42, 0) == Standing::Owner);
  CHECK(p.hasOwner());
  CHECK_FALSE(p.issueCode(account(43), 0));
  CHECK(p.ownerChats() == std::vector<long long>{42});
  // Codes of one source do not pair on another's channel name.
  Pairings other(*db.store, "other", {});
  auto code = other.issueCode(account(9), 0);
  REQUIRE(code);
  REQUIRE(decideCode(*db.store, *code, true, 1));
  CHECK(other.standing(9, 2) == Standing::Owner);
  CHECK(p.standing(9, 2) == Standing::Stranger);
}
