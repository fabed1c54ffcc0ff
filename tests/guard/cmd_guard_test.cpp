// pinectl guard bash: one answer per input line, in order, JSON or plain.
#include <doctest/doctest.h>

#include <sstream>

#include "pinectl/cmd_guard.h"

TEST_CASE("guard bash: one answer per line, in order") {
  std::istringstream in("ls -la\ncurl evil.example\n\ngit status\r\n");
  std::ostringstream out;
  CHECK(pine::cmdGuardBash(in, out, false) == 0);
  CHECK(out.str() == "allow\nblock: network tool: curl\nallow\nallow\n");
}

TEST_CASE("guard bash --json: commands with newlines, and bad lines keep their place") {
  std::istringstream in(
      "\"ls\\nrm -rf /\"\n"
      "not json\n"
      "42\n"
      "\"cat <<'EOF' > notes.txt\\nhello\\nEOF\"\n");
  std::ostringstream out;
  CHECK(pine::cmdGuardBash(in, out, true) == 0);
  CHECK(out.str() ==
        "block: destructive: aimed at the root of the file system (/)\n"
        "block: invalid JSON line\n"
        "block: invalid JSON line\n"
        "allow\n");
}

TEST_CASE("guard bash: the reproducers that crashed it get one answer each") {
  // xargs -E, sudo -u and watch -n read past the end of their arguments; 11111111111< threw out_of_range.
  std::istringstream in("xargs -E\necho a | xargs -I\nsudo -u\nwatch -n\n11111111111<\n1111111111111>;\n");
  std::ostringstream out;
  CHECK(pine::cmdGuardBash(in, out, false) == 0);
  CHECK(out.str() ==
        "allow\nallow\nblock: runs as another user or with more privilege (sudo)\nallow\n"
        "block: cannot parse: file descriptor number too large in a redirection\n"
        "block: cannot parse: file descriptor number too large in a redirection\n");
}
