// ftp sources through the real process tree: the broker's timer asks pined to list the folder,
// pined builds the request with the login as placeholders and a pine-egress process logs in to a
// real FTP server (tests/fixtures/ftp_server.py, Debian's python3-pyftpdlib) on this machine.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/egress/test_server.h"
#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

extern char** environ;

namespace ftp_source_it {

const std::string kUser = "ftp-user-7a";
const std::string kPassword = "ftp-pass-8c41d2e9b7";

// A real FTP server in a temporary root, for one test (or, with `script` ftps_server.py, the FTPS
// double); killed (by its own pid) at the end.
class FtpServer {
 public:
  FtpServer(const std::string& root, const std::string& password, std::vector<std::string> extra = {},
            const std::string& script = "ftp_server.py") {
    std::filesystem::create_directories(root);
    log_ = root + ".log";
    std::vector<std::string> argv = {"/usr/bin/python3", sourceDir() + "/tests/fixtures/" + script, root, kUser,
                                     password};
    argv.insert(argv.end(), extra.begin(), extra.end());
    int out[2];
    REQUIRE(pipe(out) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addopen(&fa, 2, log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    REQUIRE(posix_spawn(&pid_, args[0], &fa, nullptr, args.data(), environ) == 0);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    std::string line;
    char c;
    while (read(out[0], &c, 1) == 1 && c != '\n') line += c;
    close(out[0]);
    REQUIRE_MESSAGE(!line.empty(), readText(log_));
    port_ = std::stoi(line);
  }
  ~FtpServer() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  std::string log() const { return readText(log_); }

 private:
  pid_t pid_ = 0;
  int port_ = 0;
  std::string log_;
};

constexpr auto statusOf = &sourceStatus;  // harness.h
constexpr auto eventsOf = &topicEvents;

// Every file of pine's home but .env (where the owner put the password): the database, its
// journal, the logs, the audit log, the configuration.
std::string homeFilesText(const std::string& home) {
  std::string all;
  for (auto& e : std::filesystem::recursive_directory_iterator(home))
    if (e.is_regular_file() && e.path().filename() != ".env") all += readText(e.path().string());
  return all;
}

constexpr auto setInterval = &setIntervalSec;  // harness.h

void setSecrets(Pined& pined) {
  REQUIRE(pined.ctl({"secret", "set", "FTP_USER"}, kUser + "\n").exitCode == 0);
  REQUIRE(pined.ctl({"secret", "set", "FTP_PASSWORD"}, kPassword + "\n").exitCode == 0);
}

std::string names(const nlohmann::json& events) {
  std::vector<std::string> n;
  for (auto& e : events) n.push_back(e["payload"]["name"].get<std::string>() + ":" + e["payload"]["change"].get<std::string>());
  std::sort(n.begin(), n.end());
  std::string out;
  for (auto& s : n) out += s + " ";
  return out;
}

}  // namespace ftp_source_it

using namespace ftp_source_it;

TEST_CASE("ftp source: the files already there, then one event per new or changed file, none twice across a "
          "broker restart; the password is nowhere in pine's home, logs or events") {
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp";
  std::filesystem::create_directories(root + "/sub");
  writeText(root + "/a.txt", "aaa");
  writeText(root + "/b.txt", "bbbb");
  FtpServer server(root, kPassword);
  Pined pined(home);
  setSecrets(pined);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: drop, type: ftp, url: \"ftp://127.0.0.1:" << server.port()
      << "/\", tls: none, network: local, usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always, "
         "intervalSec: 60}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);

  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/drop").size() == 2; }, 30s),
                  (tailOf(pined.stderrText(), 3000) + statusOf(home, "drop").error));
  auto first = eventsOf(pined, "ftp/drop");
  CHECK(names(first) == "a.txt:new b.txt:new ");
  for (auto& e : first) {
    CHECK(e["trust"] == "untrusted");
    CHECK(e["source"] == "drop");
    CHECK(e["payload"]["size"] == (e["payload"]["name"] == "a.txt" ? 3 : 4));
    CHECK(e["payload"]["modified"].get<std::string>().size() == 20);  // MLSD: 2026-12-03T00:37:16Z
  }
  REQUIRE(waitUntil([&] { return statusOf(home, "drop").found == "2"; }, 10s));
  CHECK(contains(server.log(), kUser + "' logged in"));

  // kill -9 of the broker: the new one looks at once and finds nothing new.
  long long looked = statusOf(home, "drop").looked;
  REQUIRE(kill(pined.rolePid("broker"), SIGKILL) == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return statusOf(home, "drop").looked > looked; }, 40s),
                  tailOf(pined.stderrText(), 3000));
  CHECK(eventsOf(pined, "ftp/drop").size() == 2);

  // A new file and a changed one: one event each. (A changed intervalSec restarts the poller.)
  writeText(root + "/c.txt", "c");
  writeText(root + "/a.txt", "aaaaaa");
  setInterval(home, 60, 61);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/drop").size() == 4; }, 30s),
                  tailOf(pined.stderrText(), 3000));
  auto all = eventsOf(pined, "ftp/drop");
  CHECK(names(all) == "a.txt:changed a.txt:new b.txt:new c.txt:new ");
  REQUIRE(waitUntil([&] { return statusOf(home, "drop").found == "3"; }, 10s));
  looked = statusOf(home, "drop").looked;
  setInterval(home, 61, 62);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE(waitUntil([&] { return statusOf(home, "drop").looked > looked; }, 30s));
  CHECK(eventsOf(pined, "ftp/drop").size() == 4);

  CHECK_FALSE(contains(eventsOf(pined, "ftp/drop").dump(), kPassword));
  pined.stop();
  CHECK_FALSE(contains(homeFilesText(home), kPassword));
  CHECK_FALSE(contains(pined.stderrText(), kPassword));
}

TEST_CASE("ftp source: a server without MLSD is listed with LIST") {
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp";
  std::filesystem::create_directories(root);
  writeText(root + "/report 1.pdf", "12345");
  FtpServer server(root, kPassword, {"--no-mlsd"});
  Pined pined(home);
  setSecrets(pined);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: old, type: ftp, url: \"ftp://127.0.0.1:" << server.port()
      << "/\", tls: none, network: local, usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always}\n";
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/old").size() == 1; }, 30s),
                  (tailOf(pined.stderrText(), 3000) + statusOf(home, "old").error));
  auto e = eventsOf(pined, "ftp/old")[0];
  CHECK(e["payload"]["name"] == "report 1.pdf");
  CHECK(e["payload"]["size"] == 5);
  CHECK(e["payload"]["modified"].get<std::string>().find(' ') != std::string::npos);  // LIST's form, not MLSD's
}

TEST_CASE("ftp source: a wrong password, a server without TLS when TLS is required, and a public source on "
          "this machine each give a clear status error; the legitimate twin lists") {
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp";
  std::filesystem::create_directories(root);
  writeText(root + "/x.txt", "x");
  FtpServer server(root, kPassword);
  FtpServer otherPassword(dir.path() + "/ftp2", "another-password-42");
  Pined pined(home);
  setSecrets(pined);
  const std::string login = "usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always";
  const std::string at = "ftp://127.0.0.1:" + std::to_string(server.port()) + "/";
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n"
      << "  - {name: wrongpw, type: ftp, url: \"ftp://127.0.0.1:" << otherPassword.port()
      << "/\", tls: none, network: local, " << login << "}\n"
      << "  - {name: needtls, type: ftp, url: \"" << at << "\", network: local, " << login << "}\n"
      << "  - {name: pub, type: ftp, url: \"" << at << "\", tls: none, " << login << "}\n"
      << "  - {name: twin, type: ftp, url: \"" << at << "\", tls: none, network: local, " << login << "}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/twin").size() == 1; }, 30s),
                  tailOf(pined.stderrText(), 3000));
  REQUIRE(waitUntil([&] {
    return statusOf(home, "wrongpw").errors >= 1 && statusOf(home, "needtls").errors >= 1 &&
           statusOf(home, "pub").errors >= 1;
  }, 30s));
  CHECK_MESSAGE(contains(statusOf(home, "wrongpw").error, "refused the login"), statusOf(home, "wrongpw").error);
  CHECK_MESSAGE(contains(statusOf(home, "needtls").error, "does not offer TLS"), statusOf(home, "needtls").error);
  CHECK_MESSAGE(contains(statusOf(home, "pub").error, "loopback"), statusOf(home, "pub").error);
  CHECK(eventsOf(pined, "ftp/wrongpw").empty());
  CHECK(eventsOf(pined, "ftp/needtls").empty());
  CHECK(eventsOf(pined, "ftp/pub").empty());
  // TLS required: the login was never sent in clear (the server saw no USER from it).
  CHECK(contains(server.log(), kUser + "' logged in"));  // the twin's
  size_t logins = 0;
  for (size_t p = server.log().find("logged in"); p != std::string::npos; p = server.log().find("logged in", p + 1)) ++logins;
  CHECK_MESSAGE(logins == 1, server.log());  // the twin's one look; needtls stopped at AUTH TLS, pub never connected
  pined.stop();
  CHECK_FALSE(contains(homeFilesText(home), kPassword));
  CHECK_FALSE(contains(pined.stderrText(), kPassword));
}

TEST_CASE("ftp source: check names a login in clear; tls: none on ftps:// and an unknown tls are refused with "
          "the line") {
  TempDir dir;
  std::string home = dir.path() + "/home";
  Pined pined(home);
  setSecrets(pined);
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: clear, type: ftp, url: \"ftp://files.example/\", tls: none, usernameSecret: FTP_USER, "
         "passwordSecret: FTP_PASSWORD}\n";
  auto c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK_MESSAGE(contains(c.out + c.err, "password crosses the network in clear"), (c.out + c.err));
  std::string yaml = readText(home + "/pine.yaml");
  writeText(home + "/pine.yaml", yaml.substr(0, yaml.find("\nsources:")) +
                                     "\nsources:\n  - {name: bad, type: ftp, url: \"ftps://files.example/\", tls: none, "
                                     "usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD}\n");
  c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK_MESSAGE(contains(c.out + c.err, "tls: none on an ftps:// address"), (c.out + c.err));
  writeText(home + "/pine.yaml", yaml.substr(0, yaml.find("\nsources:")) +
                                     "\nsources:\n  - {name: nologin, type: ftp, url: \"ftps://files.example/\"}\n");
  c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK_MESSAGE(contains(c.out + c.err, "usernameSecret"), (c.out + c.err));
  writeText(home + "/pine.yaml", yaml.substr(0, yaml.find("\nsources:")) +
                                     "\nsources:\n  - {name: fetching, type: ftp, url: \"ftps://files.example/\", maxFileMb: 5, "
                                     "usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD}\n");
  c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK_MESSAGE(contains(c.out + c.err, "maxFileMb limits the files fetched"), (c.out + c.err));
}

TEST_CASE("ftp source with fetch: each new or changed file lands whole in the agent's inbox as its own; over "
          "maxFileMb nothing; a link the agent planted is not followed") {
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp", outside = dir.path() + "/outside";
  std::filesystem::create_directories(root);
  std::filesystem::create_directories(outside);
  std::string binary;
  for (int i = 0; i < 3000; ++i) binary += static_cast<char>((i * 7) & 0xff);  // NUL bytes and all
  writeText(root + "/a.txt", "alpha\n");
  writeText(root + "/bin.dat", binary);
  writeText(root + "/big.bin", std::string((1 << 20) + 4096, 'x'));  // over maxFileMb: 1
  FtpServer server(root, kPassword);
  Pined pined(home);
  setSecrets(pined);
  const std::string ws = home + "/agents/main/workspace";
  std::filesystem::create_directories(ws);
  // The agent can change its workspace: a link where the inbox goes must not lead pined outside.
  std::filesystem::create_directory_symlink(outside, ws + "/inbox");
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: drop, type: ftp, agent: main, url: \"ftp://127.0.0.1:" << server.port()
      << "/\", tls: none, network: local, usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always, "
         "intervalSec: 60, fetch: true, maxFileMb: 1}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);
  CHECK_MESSAGE(waitUntil([&] { return contains(statusOf(home, "drop").error, "not a folder (a link or a file)"); }, 30s),
                statusOf(home, "drop").error);
  CHECK(eventsOf(pined, "ftp/drop").empty());  // not fetched: no event, tried again at the next look
  CHECK(std::filesystem::is_empty(outside));

  // The link gone, the next look (a changed interval starts one) fetches what fits.
  std::filesystem::remove(ws + "/inbox");
  setInterval(home, 60, 61);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/drop").size() == 2; }, 30s),
                  (tailOf(pined.stderrText(), 3000) + statusOf(home, "drop").error));
  auto events = eventsOf(pined, "ftp/drop");
  CHECK(names(events) == "a.txt:new bin.dat:new ");
  for (auto& e : events) {
    auto p = e["payload"];
    const std::string name = p["name"];
    CHECK(p["path"] == "inbox/ftp-drop/" + name);
    const std::string want = name == "a.txt" ? "alpha\n" : binary;
    CHECK(readText(ws + "/" + p["path"].get<std::string>()) == want);
    CHECK(p["bytes"] == want.size());
    CHECK(p["sha256"].get<std::string>().size() == 64);
  }
  CHECK(events[0]["payload"]["sha256"] != events[1]["payload"]["sha256"]);
  // The agent's own files (as root: its uid, as its workspace is).
  struct stat wsSt {}, fileSt {};
  REQUIRE(stat(ws.c_str(), &wsSt) == 0);
  REQUIRE(stat((ws + "/inbox/ftp-drop/a.txt").c_str(), &fileSt) == 0);
  CHECK(fileSt.st_uid == wsSt.st_uid);
  // big.bin (over maxFileMb) is refused whenever its turn in the look comes; what it began to
  // write goes with it: nothing half-written stays.
  auto halfWritten = [&] {
    for (auto& e : std::filesystem::directory_iterator(ws + "/inbox/ftp-drop"))
      if (e.path().filename().string().rfind(".fetching-", 0) == 0) return true;
    return false;
  };
  CHECK_MESSAGE(waitUntil([&] {
                  auto e = statusOf(home, "drop").error;
                  return contains(e, "big.bin: the file was not fetched:") && contains(e, "larger than 1048576 bytes");
                }, 30s),
                statusOf(home, "drop").error);
  CHECK(waitUntil([&] { return !halfWritten(); }, 30s));
  CHECK(!std::filesystem::exists(ws + "/inbox/ftp-drop/big.bin"));
  CHECK(std::filesystem::is_empty(outside));
  // The bytes went to the workspace, never through the broker: the database holds the event, not the file.
  CHECK(!contains(readText(home + "/data/pine.db"), std::string(binary.substr(100, 64))));

  // A changed file replaces the copy in the inbox, whole.
  writeText(root + "/a.txt", "alpha, second edition\n");
  setInterval(home, 61, 62);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE(waitUntil([&] { return eventsOf(pined, "ftp/drop").size() == 3; }, 30s));
  CHECK(readText(ws + "/inbox/ftp-drop/a.txt") == "alpha, second edition\n");
}

TEST_CASE("ftp source with fetch: the inbox folder holds at most maxInboxMb; what does not fit waits, with the "
          "reason, and is fetched once room is made") {
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp";
  const size_t size = 700 * 1024;  // two do not fit in 1 MiB, one does
  // Named like pined's own temporary files, which a server may do: they count all the same.
  const std::string one = ".fetching-one", two = ".fetching-two";
  writeText(root + "/" + one, std::string(size, '1'));
  writeText(root + "/" + two, std::string(size, '2'));
  FtpServer server(root, kPassword);
  Pined pined(home);
  setSecrets(pined);
  const std::string ws = home + "/agents/main/workspace", inbox = ws + "/inbox/ftp-drop";
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: drop, type: ftp, agent: main, url: \"ftp://127.0.0.1:" << server.port()
      << "/\", tls: none, network: local, usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always, "
         "intervalSec: 60, fetch: true, maxFileMb: 1, maxInboxMb: 1}\n";
  auto held = [&] {
    unsigned long long sum = 0;
    for (auto& e : std::filesystem::directory_iterator(inbox))
      if (e.is_regular_file()) sum += e.file_size();
    return sum;
  };
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  // The first file fits; the second is stopped on its way in, and nothing of it stays.
  REQUIRE_MESSAGE(waitUntil([&] { return contains(statusOf(home, "drop").error, "would hold more than 1048576 bytes"); }, 30s),
                  statusOf(home, "drop").error);
  CHECK(contains(statusOf(home, "drop").error, "maxInboxMb: 1"));
  auto events = eventsOf(pined, "ftp/drop");
  REQUIRE(events.size() == 1);
  const std::string first = events[0]["payload"]["name"], second = first == one ? two : one;
  CHECK(waitUntil([&] { return held() == size; }, 10s));
  CHECK(!std::filesystem::exists(inbox + "/" + second));
  // By the listing's size it could not fit: it was refused before a byte was fetched (each look
  // would otherwise fetch it again, up to the limit, and throw it away).
  auto fetchedOnce = [&](const std::string& name) { return contains(server.log(), "/" + name + " completed="); };
  CHECK_MESSAGE(fetchedOnce(first), server.log());
  CHECK(!fetchedOnce(second));

  // The agent moves the file away but leaves a megabyte of its own there: still no room.
  std::filesystem::remove(inbox + "/" + first);
  writeText(inbox + "/notes.txt", std::string(1 << 20, 'n'));
  setInterval(home, 60, 61);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  CHECK_MESSAGE(waitUntil([&] { return contains(statusOf(home, "drop").error, "holds 1048576 bytes, all it may"); }, 30s),
                statusOf(home, "drop").error);
  CHECK(eventsOf(pined, "ftp/drop").size() == 1);
  CHECK(held() == 1u << 20);
  CHECK(!fetchedOnce(second));

  // Room made: the file that waited is fetched whole (and the first, gone from the inbox but
  // unchanged on the server, is not fetched again).
  std::filesystem::remove(inbox + "/notes.txt");
  setInterval(home, 61, 62);
  REQUIRE(pined.ctl({"reload"}).exitCode == 0);
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/drop").size() == 2; }, 30s), statusOf(home, "drop").error);
  events = eventsOf(pined, "ftp/drop");
  CHECK(events[1]["payload"]["name"] == second);
  CHECK(readText(inbox + "/" + second) == std::string(size, second == one ? '1' : '2'));
  CHECK(!std::filesystem::exists(inbox + "/" + first));
}

TEST_CASE("ftp source over TLS: AUTH TLS on ftp:// and implicit ftps://, listed and fetched with the login only "
          "inside TLS; a server whose certificate pine does not trust gets no login") {
  namespace et = pine::egress::test;
  TempDir dir;
  std::string home = dir.path() + "/home", root = dir.path() + "/ftp";
  std::filesystem::create_directories(root);
  writeText(root + "/report.csv", "a,b\n1,2\n");
  auto ca = et::makeCa("pine test CA");
  auto cert = et::makeServerCert(ca);
  auto strangerCa = et::makeCa("someone else's CA");
  auto strangerCert = et::makeServerCert(strangerCa);
  const std::string caFile = dir.path() + "/ca.pem";
  et::writePem(caFile, ca.cert.get());
  et::writePem(dir.path() + "/cert.pem", cert.cert.get());
  et::writeKeyPem(dir.path() + "/key.pem", cert.key.get());
  et::writePem(dir.path() + "/stranger.pem", strangerCert.cert.get());
  et::writeKeyPem(dir.path() + "/stranger-key.pem", strangerCert.key.get());
  const std::string py = "ftps_server.py";
  FtpServer explicitTls(root, kPassword, {dir.path() + "/cert.pem", dir.path() + "/key.pem"}, py);
  FtpServer implicitTls(dir.path() + "/ftp2", kPassword, {dir.path() + "/cert.pem", dir.path() + "/key.pem", "--implicit"}, py);
  writeText(dir.path() + "/ftp2/notes.txt", "n");
  FtpServer stranger(dir.path() + "/ftp3", kPassword, {dir.path() + "/stranger.pem", dir.path() + "/stranger-key.pem"}, py);
  writeText(dir.path() + "/ftp3/secret-plans.txt", "s");

  // pined trusts only the test CA for egress (--egress-ca), as a user's system store would a real one.
  Pined pined(home, {"--egress-ca", caFile});
  setSecrets(pined);
  const std::string ws = home + "/agents/main/workspace";
  const std::string login = "network: local, usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD, start: always";
  std::ofstream(home + "/pine.yaml", std::ios::app)
      << "\nsources:\n  - {name: explicit, type: ftp, agent: main, url: \"ftp://127.0.0.1:" << explicitTls.port()
      << "/\", fetch: true, " << login << "}\n"
      << "  - {name: implicit, type: ftp, url: \"ftps://127.0.0.1:" << implicitTls.port() << "/\", " << login << "}\n"
      << "  - {name: stranger, type: ftp, url: \"ftp://127.0.0.1:" << stranger.port() << "/\", " << login << "}\n";
  auto r = pined.ctl({"reload"});
  REQUIRE_MESSAGE(r.exitCode == 0, r.err);

  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/explicit").size() == 1; }, 30s),
                  (tailOf(pined.stderrText(), 3000) + statusOf(home, "explicit").error + explicitTls.log()));
  auto e = eventsOf(pined, "ftp/explicit")[0];
  CHECK(e["payload"]["name"] == "report.csv");
  CHECK(e["payload"]["path"] == "inbox/ftp-explicit/report.csv");
  CHECK(readText(ws + "/inbox/ftp-explicit/report.csv") == "a,b\n1,2\n");
  REQUIRE_MESSAGE(waitUntil([&] { return eventsOf(pined, "ftp/implicit").size() == 1; }, 30s),
                  (statusOf(home, "implicit").error + implicitTls.log()));
  CHECK(eventsOf(pined, "ftp/implicit")[0]["payload"]["name"] == "notes.txt");

  // The double logs each command with whether it came encrypted: on ftp:// only AUTH came in clear,
  // then the login, the listing (MLSD) and the fetch (RETR); on ftps:// nothing at all.
  const std::string ex = explicitTls.log(), im = implicitTls.log();
  int clear = 0, auth = 0;
  std::istringstream lines(ex);
  for (std::string line; std::getline(lines, line);) {
    if (!contains(line, "(clear)")) continue;
    ++clear;
    if (line.rfind("AUTH ", 0) == 0) ++auth;
  }
  CHECK_MESSAGE((auth >= 1 && clear == auth), ex);
  CHECK_MESSAGE(contains(ex, "USER " + kUser + " (tls)"), ex);
  CHECK_MESSAGE(contains(ex, "MLSD"), ex);
  CHECK_MESSAGE(contains(ex, "RETR report.csv (tls)"), ex);
  CHECK_MESSAGE(contains(ex, "PROT P (tls)"), ex);
  CHECK_MESSAGE(contains(im, "USER " + kUser + " (tls)"), im);
  CHECK_MESSAGE(!contains(im, "(clear)"), im);
  CHECK_FALSE(contains(ex + im, kPassword));  // the double never logs PASS's argument; neither does anything else

  // The stranger's certificate: refused before the login, and said so.
  CHECK_MESSAGE(waitUntil([&] { return statusOf(home, "stranger").errors >= 1; }, 30s), statusOf(home, "stranger").error);
  const std::string why = statusOf(home, "stranger").error;
  CHECK_MESSAGE(contains(why, "certificate problem"), why);
  CHECK_MESSAGE(contains(why, "FTP-LIST ftp://127.0.0.1:" + std::to_string(stranger.port()) + "/:"), why);  // no login in it
  CHECK_MESSAGE(!contains(stranger.log(), "USER"), stranger.log());
  CHECK(eventsOf(pined, "ftp/stranger").empty());
}
