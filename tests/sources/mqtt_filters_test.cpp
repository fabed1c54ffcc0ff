// pined's note of the topic filters each MQTT session at its server holds (supervisor/mqtt_call.h
// mqttFiltersBefore): what was taken out is unsubscribed at every start from then on (a repeated
// UNSUBSCRIBE costs nothing; one lost would leave it subscribed), what the note says is checked
// before it is sent (a broken filter would have the server end every connection), and the note's
// folder is pined's own, never a link to somewhere else.
#include <doctest/doctest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "supervisor/mqtt_call.h"

namespace {

struct Home {
  std::string root;
  Home() {
    char tmpl[] = "/tmp/pine-mqtt-filters-XXXXXX";
    root = ::mkdtemp(tmpl);
  }
  ~Home() { std::filesystem::remove_all(root); }
};

using Filters = std::vector<std::string>;

}  // namespace

TEST_CASE("mqtt filters: a filter taken out is unsubscribed; one put back is not") {
  Home h;
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {"a/#", "b/#"}).empty());
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {"a/#"}) == Filters{"b/#"});
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {"a/#"}) == Filters{"b/#"});  // and at the next start
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {"a/#", "b/#"}).empty());
  CHECK(pine::mqttFiltersBefore(h.root, "pine-2", {"c/+"}).empty());  // another session, its own note
  struct stat st;
  REQUIRE(::lstat((h.root + "/mqtt-sessions").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  REQUIRE(::lstat((h.root + "/mqtt-sessions/pine-1.json").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("mqtt filters: a note with filters no configuration could name sends only the valid ones") {
  Home h;
  std::filesystem::create_directories(h.root + "/mqtt-sessions");
  ::chmod((h.root + "/mqtt-sessions").c_str(), 0700);
  std::ofstream(h.root + "/mqtt-sessions/pine-1.json") << R"({"filters": ["", "#/x", "a/#/b", 5, "m/n", "t/#"]})";
  // Before: "" and "#/x" went into the UNSUBSCRIBE, and the server ended the connection each time.
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {}) == Filters{"m/n", "t/#"});
}

TEST_CASE("mqtt filters: a link in place of the note's folder is not followed") {
  Home h;
  const std::string elsewhere = h.root + "/elsewhere";
  std::filesystem::create_directories(elsewhere);
  ::chmod(elsewhere.c_str(), 0755);
  std::filesystem::create_directory_symlink(elsewhere, h.root + "/mqtt-sessions");
  CHECK(pine::mqttFiltersBefore(h.root, "pine-1", {"a/#"}).empty());
  struct stat st;
  REQUIRE(::stat(elsewhere.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0755);  // not chmod'ed through the link
  CHECK(std::filesystem::is_empty(elsewhere));  // nothing written there
}
