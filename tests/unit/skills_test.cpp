// broker/skills: the prompt's skills index and the SKILL.md that add_skill writes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "broker/skills.h"

namespace fs = std::filesystem;
using pine::NewSkill;

TEST_CASE("skills: a written SKILL.md reads back its description; bad proposals say why") {
  NewSkill s{"tidy", "Tidy the notes", "Sort notes by date.\n"};
  CHECK_FALSE(pine::checkNewSkill(s));
  std::string md = pine::skillFile(s);
  CHECK(md == "---\nname: tidy\ndescription: Tidy the notes\n---\n\nSort notes by date.\n");
  CHECK(pine::skillDescription(md) == "Tidy the notes");
  CHECK(pine::skillDescription("no front matter\ndescription: x\n") == "");

  for (NewSkill bad : {NewSkill{"Tidy", "d", "i"}, NewSkill{"../x", "d", "i"}, NewSkill{"", "d", "i"},
                       NewSkill{"t", "", "i"}, NewSkill{"t", "two\nlines", "i"}, NewSkill{"t", "d", ""},
                       NewSkill{"t", "ends ---", "i"}, NewSkill{"t", "d", "---\nname: evil\n---\n"},
                       NewSkill{"t", "d", std::string("bell\x07")}, NewSkill{"t", std::string(301, 'd'), "i"},
                       NewSkill{"t", "d", std::string((32u << 10) + 1, 'i')}}) {
    CAPTURE(bad.name);
    CAPTURE(bad.description.substr(0, 20));
    CHECK(pine::checkNewSkill(bad));
  }
  // Tabs and newlines are text; a description at the limit is fine.
  CHECK_FALSE(pine::checkNewSkill({"t", std::string(300, 'd'), "a\tb\nc"}));
}

TEST_CASE("skills: the index lists an agent's own and the shared skills, with description and path") {
  fs::path home = fs::temp_directory_path() / ("pine-skills-" + std::to_string(getpid()));
  fs::create_directories(home / "skills" / "tidy");
  fs::create_directories(home / "skills" / "brief");
  std::ofstream(home / "skills" / "tidy" / "SKILL.md") << pine::skillFile({"tidy", "Tidy the notes", "x"});
  std::ofstream(home / "skills" / "brief" / "SKILL.md") << "no front matter\n";
  pine::config::Home cfg;
  cfg.pine.skills = {{"tidy", "main"}, {"brief", ""}, {"other", "scout"}};
  std::string index = pine::skillsIndex(cfg, home.string(), "main");
  CHECK(index == "- tidy: Tidy the notes (read " + (home / "skills/tidy/SKILL.md").string() +
                     " when a task calls for it)\n- brief (read " + (home / "skills/brief/SKILL.md").string() +
                     " when a task calls for it)\n");
  CHECK(pine::skillsIndex(cfg, home.string(), "scout").find("other") != std::string::npos);
  CHECK(pine::skillsIndex(cfg, home.string(), "scout").find("tidy") == std::string::npos);
  fs::remove_all(home);
}
