// ftp sources through the real process tree: the broker's timer asks pined to list the folder,
// pined builds the request with the login as placeholders and a pine-egress process logs in to a
// real FTP server (tests/fixtures/ftp_server.py, Debian's python3-pyftpdlib) on this machine.
#include <doctest/doctest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/integration/harness.h"

using namespace pine::test;
using namespace std::chrono_literals;

extern char** environ;

namespace ftp_source_it {

const std::string kUser = "ftp-user-7a";
const std::string kPassword = "ftp-pass-8c41d2e9b7";

// A real FTP server in a temporary root, for one test; killed (by its own pid) at the end.
class FtpServer {
 public:
  FtpServer(const std::string& root, const std::string& password, std::vector<std::string> extra = {}) {
    std::filesystem::create_directories(root);
    log_ = root + ".log";
    std::vector<std::string> argv = {"/usr/bin/python3", sourceDir() + "/tests/fixtures/ftp_server.py", root, kUser,
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
                                     "\nsources:\n  - {name: fetching, type: ftp, url: \"ftps://files.example/\", fetch: true, "
                                     "usernameSecret: FTP_USER, passwordSecret: FTP_PASSWORD}\n");
  c = run({binDir() + "/pinectl", "--home", home, "check"});
  CHECK(c.exitCode == 2);
  CHECK_MESSAGE(contains(c.out + c.err, "not built yet"), (c.out + c.err));
}
