#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "common/fd.h"

TEST_CASE("writeFileAtomic writes the whole content with the requested mode and replaces atomically") {
  char dir[] = "/tmp/pine-fd-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string path = std::string(dir) + "/f";
  pine::writeFileAtomic(path, "one", 0600);
  pine::writeFileAtomic(path, "two\n", 0600);
  CHECK(pine::readFile(path) == "two\n");
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  unlink(path.c_str());
  rmdir(dir);
}

TEST_CASE("writeFileAtomic does not follow a symlink planted at the temp name") {
  char dir[] = "/tmp/pine-fd-XXXXXX";
  REQUIRE(mkdtemp(dir));
  std::string target = std::string(dir) + "/victim";
  pine::writeFileAtomic(target, "keep", 0600);
  std::string path = std::string(dir) + "/f";
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  REQUIRE(symlink(target.c_str(), tmp.c_str()) == 0);
  CHECK_THROWS(pine::writeFileAtomic(path, "evil", 0600));
  CHECK(pine::readFile(target) == "keep");
  unlink(tmp.c_str());
  unlink(target.c_str());
  rmdir(dir);
}

TEST_CASE("readFile names the path when it fails") {
  try {
    pine::readFile("/nonexistent/pine-file");
    FAIL("no throw");
  } catch (std::exception& e) {
    CHECK(std::string(e.what()).find("/nonexistent/pine-file") != std::string::npos);
  }
}

TEST_CASE("close-on-exec can be set and read back") {
  int p[2];
  REQUIRE(pipe(p) == 0);
  pine::setCloexec(p[0], true);
  CHECK(pine::isCloexec(p[0]));
  pine::setCloexec(p[0], false);
  CHECK_FALSE(pine::isCloexec(p[0]));
  close(p[0]);
  close(p[1]);
}
