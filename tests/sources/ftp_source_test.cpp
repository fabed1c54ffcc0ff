// ftp sources without the process tree: the listing parsers (MLSD and LIST, hostile lines), the
// request pined builds for one look (supervisor/ftp_list.h: the login only as placeholders, the
// host and TLS from the configuration, names that leave the folder refused), and the poller
// against a table of listings (one event per new or changed file, memory that outlives the
// poller, files gone forgotten). tests/integration/ftp_source_test.cpp runs them for real.
#include <doctest/doctest.h>
#include <kj/async-io.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "broker/sources/ftp_listing.h"
#include "broker/sources/ftp_poller.h"
#include "supervisor/ftp_list.h"

using namespace pine::sources;

TEST_CASE("ftp listing: MLSD keeps plain files with their size and modify time") {
  auto l = parseMlsd(
      "type=cdir;modify=20261203003000;perm=el; .\r\n"
      "type=pdir;modify=20261203003000; ..\r\n"
      "type=dir;modify=20261203003000; sub\r\n"
      "modify=20261203003716;perm=r;size=3;type=file;unique=fe00g; a.txt\r\n"
      "Type=File;Size=12;Modify=20261201120000.123; name with spaces; and semicolons\r\n"
      "type=OS.unix=slink:/etc/passwd; link\r\n"
      "type=file;size=notanumber; nosize\n");
  CHECK(l.error.empty());
  CHECK(l.refused == 0);
  REQUIRE(l.files.size() == 3);
  CHECK(l.files[0].name == "a.txt");
  CHECK(l.files[0].size == 3);
  CHECK(l.files[0].modified == "2026-12-03T00:37:16Z");
  CHECK(l.files[1].name == "name with spaces; and semicolons");
  CHECK(l.files[1].size == 12);
  CHECK(l.files[1].modified == "2026-12-01T12:00:00Z");
  CHECK(l.files[2].name == "nosize");
  CHECK(l.files[2].size == -1);
}

TEST_CASE("ftp listing: LIST (unix ls -l) keeps plain files; folders, links and totals are not files") {
  auto l = parseUnixList(
      "total 12\r\n"
      "drwxr-xr-x   2 root     root         4096 Dec 03 00:37 sub\r\n"
      "-rw-r--r--   1 root     root            3 Dec 03 00:37 a.txt\r\n"
      "-rw-r--r--   1 owner   12345 Jan  5  2025 old report.pdf\r\n"
      "-rw-r--r--   1 ftp             77 Feb 29 10:00 nogroup.txt\r\n"
      "lrwxrwxrwx   1 root     root           11 Dec 03 00:37 link -> /etc/passwd\r\n"
      "garbage line\r\n");
  CHECK(l.error.empty());
  REQUIRE(l.files.size() == 3);
  CHECK(l.files[0].name == "a.txt");
  CHECK(l.files[0].size == 3);
  CHECK(l.files[0].modified == "Dec 03 00:37");
  CHECK(l.files[1].name == "old report.pdf");
  CHECK(l.files[1].size == 12345);
  CHECK(l.files[1].modified == "Jan  5  2025");
  CHECK(l.files[2].name == "nogroup.txt");
  CHECK(l.files[2].size == 77);
}

TEST_CASE("ftp listing: hostile names are refused and counted; the legitimate ones beside them kept") {
  std::string mlsd = "type=file;size=1; ../../etc/passwd\r\n"
                     "type=file;size=1; ..\r\n"
                     "type=file;size=1; .\r\n"
                     "type=file;size=1; a/b\r\n"
                     "type=file;size=1; back\\slash\r\n"
                     "type=file;size=1; esc\x1b[31mred\r\n"
                     "type=file;size=1; bell\x07\r\n"
                     "type=file;size=1; not\xff utf8\r\n"
                     "type=file;size=1; c1\xc2\x9b" "x\r\n"
                     "type=file;size=1; \r\n"
                     "type=file;size=1; " + std::string(300, 'n') + "\r\n"
                     "type=file;size=1; ok.txt\r\n"
                     "type=file;size=1; caf\xc3\xa9.txt\r\n";
  mlsd += std::string("type=file;size=1; nul") + '\0' + "byte\r\n";
  auto l = parseMlsd(mlsd);
  CHECK(l.refused == 12);
  REQUIRE(l.files.size() == 2);
  CHECK(l.files[0].name == "ok.txt");
  CHECK(l.files[1].name == "caf\xc3\xa9.txt");
  auto u = parseUnixList("-rw-r--r-- 1 a b 3 Dec 03 00:37 ..\r\n-rw-r--r-- 1 a b 3 Dec 03 00:37 x\x1b]52;c;AAAA\x07\r\n"
                         "-rw-r--r-- 1 a b 3 Dec 03 00:37 fine\r\n");
  CHECK(u.refused == 2);
  REQUIRE(u.files.size() == 1);
  CHECK(u.files[0].name == "fine");
}

TEST_CASE("ftp listing: too many entries or too many bytes refuse the listing as a whole") {
  std::string many;
  for (size_t i = 0; i <= kMaxFtpEntries; ++i) many += "type=file;size=1; f" + std::to_string(i) + "\r\n";
  auto l = parseMlsd(many);
  CHECK(l.error.find("more than 10000 entries") != std::string::npos);
  CHECK(l.files.empty());
  std::string fewer;
  for (size_t i = 0; i < kMaxFtpEntries; ++i) fewer += "type=file;size=1; f" + std::to_string(i) + "\r\n";
  CHECK(parseMlsd(fewer).files.size() == kMaxFtpEntries);  // the legitimate twin: exactly the cap
  auto big = parseUnixList(std::string(kMaxFtpListingBytes + 1, 'x'));
  CHECK(big.error.find("over 4 MiB") != std::string::npos);
}

namespace {

pine::config::Source ftpSource(const std::string& url) {
  pine::config::Source s;
  s.name = "drop";
  s.type = "ftp";
  s.url = url;
  s.usernameSecret = "FTP_USER";
  s.passwordSecret = "FTP_PASSWORD";
  s.intervalSec = 1;  // below the configuration's floor of 60, only here
  return s;
}

}  // namespace

TEST_CASE("ftp look (pined): the login as placeholders, the host and TLS from the configuration") {
  auto s = ftpSource("ftp://files.example:2121/drop");
  auto look = pine::ftpLook(s, "");
  REQUIRE(look.refused.empty());
  CHECK(look.request.method == "FTP-LIST");
  CHECK(look.request.url == "ftp://${secret:FTP_USER}:${secret:FTP_PASSWORD}@files.example:2121/drop/");
  CHECK(look.request.headers.empty());
  CHECK(look.policy.allowHosts == std::vector<std::string>{"files.example"});
  CHECK_FALSE(look.policy.allowPlainHttp);  // TLS required
  CHECK_FALSE(look.policy.allowLoopback);
  CHECK_FALSE(look.policy.allowPrivate);
  s.plainFtp = true;
  s.localNetwork = true;
  look = pine::ftpLook(s, "");
  CHECK(look.policy.allowPlainHttp);
  CHECK(look.policy.allowLoopback);
  CHECK(look.policy.allowPrivate);
  CHECK(pine::ftpLook(ftpSource("ftps://[::1]/"), "").policy.allowHosts == std::vector<std::string>{"::1"});
}

TEST_CASE("ftp look (pined): a file only for a fetching source, and only a plain name in the folder") {
  auto s = ftpSource("ftps://files.example/drop/");
  CHECK(pine::ftpLook(s, "a.txt").refused.find("fetch: false") != std::string::npos);
  s.fetch = true;
  s.maxFileMb = 2;
  auto ok = pine::ftpLook(s, "report 1.pdf");
  REQUIRE(ok.refused.empty());
  CHECK(ok.request.method == "FTP-RETR");
  CHECK(ok.request.url == "ftps://${secret:FTP_USER}:${secret:FTP_PASSWORD}@files.example/drop/report%201.pdf");
  CHECK(ok.policy.maxResponseBytes == 2u << 20);
  for (const char* bad : {"../x", "a/b", "..", ".", "a\nb"})
    CHECK_MESSAGE(!pine::ftpLook(s, bad).refused.empty(), bad);
  // A name that reads like a placeholder is fetched (the broker lists it as a file, so a refusal
  // here left it failing on every look), and reaches the URL only percent-encoded: the egress
  // process never fills it in.
  auto odd = pine::ftpLook(s, "x${secret:OTHER}");
  REQUIRE(odd.refused.empty());
  CHECK(odd.request.url == "ftps://${secret:FTP_USER}:${secret:FTP_PASSWORD}@files.example/drop/x%24%7Bsecret%3AOTHER%7D");
}

TEST_CASE("ftp names: the broker lists as a file exactly what pined will fetch") {
  // Else a listed file that pined refuses fails on every look and never gets its event.
  auto s = ftpSource("ftps://files.example/drop/");
  s.fetch = true;
  for (const std::string& name :
       std::vector<std::string>{"a.txt", "report ${date}.txt", "x${secret:OTHER}", "%2e%2e%2fx", " lead", "caf\xc3\xa9.csv", "..", ".", "../x",
        "a/b", "a\\b", "a\nb", "a\x7f", std::string(255, 'n'), std::string(256, 'n')}) {
    CAPTURE(name);
    CHECK(pine::sources::ftpNameProblem(name).empty() == pine::ftpLook(s, name).refused.empty());
  }
}

namespace {

struct FakeBroker {
  std::function<FtpAnswer()> answer;
  std::vector<Draft> events;
  std::map<std::string, std::string> memory;
  std::vector<std::string> errors, found;
  FtpServices services() {
    FtpServices s;
    s.list = [this](const std::string&) { return kj::Promise<FtpAnswer>(answer()); };
    s.publish = [this](Draft d) {
      events.push_back(std::move(d));
      return kj::Promise<void>(kj::READY_NOW);
    };
    s.recall = [this](const std::string&) { return memory; };
    s.remember = [this](const std::string&, const std::string& k, const std::string& v) { memory[k] = v; };
    s.forget = [this](const std::string&, const std::string& k) { memory.erase(k); };
    s.looked = [this](const std::string&, const std::string& f) { found.push_back(f); };
    s.failed = [this](const std::string&, const std::string& e) { errors.push_back(e); };
    return s;
  }
};

struct Loop {
  kj::AsyncIoContext io = kj::setupAsyncIo();
  bool until(const std::function<bool()>& cond, int ms = 5000) {
    for (int waited = 0; !cond() && waited < ms; waited += 10)
      io.provider->getTimer().afterDelay(10 * kj::MILLISECONDS).wait(io.waitScope);
    return cond();
  }
};

FtpAnswer mlsd(std::string body) {
  FtpAnswer a;
  a.listing = "mlsd";
  a.body = std::move(body);
  return a;
}

}  // namespace

TEST_CASE("ftp poller: one event per new or changed file, none for the same listing, also for a new poller") {
  Loop loop;
  FakeBroker b;
  std::string listing = "type=file;size=3;modify=20261203000000; a.txt\r\ntype=dir; sub\r\n";
  b.answer = [&] { return mlsd(listing); };
  auto services = b.services();
  {
    FtpPoller poller(loop.io.provider->getTimer(), ftpSource("ftp://127.0.0.1/"), services, 10 * kj::MILLISECONDS);
    REQUIRE(loop.until([&] { return b.found.size() >= 2; }));
    REQUIRE(b.events.size() == 1);
    CHECK(b.events[0].topic == "ftp/drop");
    CHECK(b.events[0].trust == "untrusted");
    auto j = nlohmann::json::parse(b.events[0].payload);
    CHECK(j["name"] == "a.txt");
    CHECK(j["size"] == 3);
    CHECK(j["modified"] == "2026-12-03T00:00:00Z");
    CHECK(j["change"] == "new");
    CHECK(b.found.back() == "1");  // files in the folder
    listing += "type=file;size=5; b.txt\r\n";
    REQUIRE(loop.until([&] { return b.events.size() == 2; }));
    CHECK(nlohmann::json::parse(b.events[1].payload)["name"] == "b.txt");
    listing = "type=file;size=4;modify=20261203000100; a.txt\r\ntype=file;size=5; b.txt\r\n";
    REQUIRE(loop.until([&] { return b.events.size() == 3; }));
    auto changed = nlohmann::json::parse(b.events[2].payload);
    CHECK(changed["name"] == "a.txt");
    CHECK(changed["change"] == "changed");
    size_t looks = b.found.size();
    REQUIRE(loop.until([&] { return b.found.size() >= looks + 2; }));
    CHECK(b.events.size() == 3);
  }
  // A new poller (a broker restart) with the same memory: nothing again.
  size_t looks = b.found.size();
  FtpPoller again(loop.io.provider->getTimer(), ftpSource("ftp://127.0.0.1/"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.found.size() >= looks + 2; }));
  CHECK(b.events.size() == 3);
  // A file gone is forgotten; when it comes back it is new again.
  listing = "type=file;size=5; b.txt\r\n";
  REQUIRE(loop.until([&] { return b.memory.count("f:a.txt") == 0; }));
  listing = "type=file;size=4;modify=20261203000100; a.txt\r\ntype=file;size=5; b.txt\r\n";
  REQUIRE(loop.until([&] { return b.events.size() == 4; }));
  CHECK(nlohmann::json::parse(b.events[3].payload)["change"] == "new");
}

TEST_CASE("ftp poller: LIST listings are read as such; an error is the status, and nothing is remembered") {
  Loop loop;
  FakeBroker b;
  FtpAnswer answer;
  answer.error = "FTP-LIST ftp://...: the FTP server refused the login";
  b.answer = [&] { return answer; };
  auto services = b.services();
  FtpPoller poller(loop.io.provider->getTimer(), ftpSource("ftp://127.0.0.1/"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.errors.size() >= 1; }));
  CHECK(b.errors[0].find("refused the login") != std::string::npos);
  CHECK(b.events.empty());
  CHECK(b.memory.empty());
  answer.error.clear();
  answer.listing = "list";
  answer.body = "-rw-r--r--   1 root     root            3 Dec 03 00:37 a.txt\r\n";
  REQUIRE(loop.until([&] { return b.events.size() == 1; }));
  CHECK(nlohmann::json::parse(b.events[0].payload)["modified"] == "Dec 03 00:37");
  CHECK(b.memory.count("f:a.txt") == 1);
}

TEST_CASE("ftp poller with fetch: the event says where the file is; a file not fetched has no event and is tried again") {
  Loop loop;
  FakeBroker b;
  b.answer = [&] { return mlsd("type=file;size=3; a.txt\r\ntype=file;size=9; b.txt\r\n"); };
  std::map<std::string, int> asked;
  bool bFails = true;
  auto services = b.services();
  services.fetch = [&](const std::string& source, const std::string& file, long long) {
    CHECK(source == "drop");
    ++asked[file];
    FtpFetched f;
    if (file == "b.txt" && bFails) f.error = "response larger than 1048576 bytes";
    else f.path = "inbox/ftp-drop/" + file, f.bytes = 3, f.sha256 = std::string(64, 'a');
    return kj::Promise<FtpFetched>(f);
  };
  auto source = ftpSource("ftp://127.0.0.1/");
  source.fetch = true;
  FtpPoller poller(loop.io.provider->getTimer(), source, services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return asked["b.txt"] >= 2; }));
  // a.txt: fetched once, one event naming its place; b.txt: no event, not remembered, asked again.
  REQUIRE(b.events.size() == 1);
  auto j = nlohmann::json::parse(b.events[0].payload);
  CHECK(j["name"] == "a.txt");
  CHECK(j["path"] == "inbox/ftp-drop/a.txt");
  CHECK(j["bytes"] == 3);
  CHECK(j["sha256"] == std::string(64, 'a'));
  CHECK(asked["a.txt"] == 1);
  CHECK(b.memory.count("f:b.txt") == 0);
  REQUIRE(!b.errors.empty());
  CHECK(b.errors.back() == "b.txt: response larger than 1048576 bytes");
  // Once it can be fetched, its event comes, once.
  bFails = false;
  REQUIRE(loop.until([&] { return b.events.size() == 2; }));
  CHECK(nlohmann::json::parse(b.events[1].payload)["path"] == "inbox/ftp-drop/b.txt");
  size_t looks = b.found.size();
  REQUIRE(loop.until([&] { return b.found.size() >= looks + 2; }));
  CHECK(b.events.size() == 2);
}

TEST_CASE("ftp poller with fetch: a file whose name was redacted in the listing is told once, not fetched or failed") {
  Loop loop;
  FakeBroker b;
  // pine-egress redacted the login's value in the name: the server has no file of that name.
  b.answer = [&] { return mlsd("type=file;size=3; report-[redacted].txt\r\ntype=file;size=3; a.txt\r\n"); };
  std::map<std::string, int> asked;
  auto services = b.services();
  services.fetch = [&](const std::string&, const std::string& file, long long) {
    ++asked[file];
    FtpFetched f;
    f.path = "inbox/ftp-drop/" + file, f.bytes = 3, f.sha256 = std::string(64, 'a');
    return kj::Promise<FtpFetched>(f);
  };
  auto source = ftpSource("ftp://127.0.0.1/");
  source.fetch = true;
  FtpPoller poller(loop.io.provider->getTimer(), source, services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.found.size() >= 3; }));
  // Before: asked for at every look, failing each time ("Remote file not found"), never an event.
  CHECK(asked.count("report-[redacted].txt") == 0);
  CHECK(b.errors.empty());
  REQUIRE(b.events.size() == 2);
  auto told = nlohmann::json::parse(b.events[0].payload);
  CHECK(told["name"] == "report-[redacted].txt");
  CHECK(told["fetched"] == false);
  CHECK(told.contains("path") == false);
  // The twin beside it is fetched as ever.
  CHECK(asked["a.txt"] == 1);
  CHECK(nlohmann::json::parse(b.events[1].payload)["path"] == "inbox/ftp-drop/a.txt");
}

TEST_CASE("ftp poller: two files whose names both read [redacted] are each told once, not 'changed' at every look") {
  Loop loop;
  FakeBroker b;
  b.answer = [&] { return mlsd("type=file;size=7; [redacted]\r\ntype=file;size=4; [redacted]\r\n"); };
  auto services = b.services();
  FtpPoller poller(loop.io.provider->getTimer(), ftpSource("ftp://127.0.0.1/"), services, 10 * kj::MILLISECONDS);
  REQUIRE(loop.until([&] { return b.found.size() >= 4; }));
  // Before: one row for both, so each look found the other size and told a change.
  REQUIRE(b.events.size() == 2);
  for (const auto& e : b.events) CHECK(nlohmann::json::parse(e.payload)["change"] == "new");
}
