// The owner's lines for pinectl chat. On a terminal, libedit's readline-compatible API edits
// the line and keeps the history (its file is 0600: it holds what the owner typed); otherwise
// lines are read plainly from stdin.
#include <editline/readline.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "pinectl/chat.h"

namespace pine {

volatile std::sig_atomic_t chatInterrupted = 0;

ChatInput::ChatInput(bool terminal, std::string historyFile) : terminal_(terminal), historyFile_(std::move(historyFile)) {
  if (!terminal_) return;
  rl_catch_signals = 0;  // our SIGINT handler stays in place: Ctrl-C ends the read, we clear the line
  using_history();
  stifle_history(1000);
  if (!historyFile_.empty()) read_history(historyFile_.c_str());
}

ChatInput::~ChatInput() {
  if (!terminal_ || historyFile_.empty()) return;
  // Created 0600 before libedit writes it: the history is the owner's messages.
  int fd = open(historyFile_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return;
  fchmod(fd, 0600);
  close(fd);
  write_history(historyFile_.c_str());
}

ChatInput::Got ChatInput::prompt(const std::string& promptText, std::string& line) {
  chatInterrupted = 0;
  if (terminal_) {
    char* got = readline(promptText.c_str());
    if (!got) return chatInterrupted ? Got::Interrupted : Got::End;
    line = got;
    free(got);
    if (!line.empty()) add_history(line.c_str());
    return Got::Line;
  }
  bool timedOut = false;
  for (;;) {
    Got g = answer(-1, line, timedOut);
    if (g != Got::Interrupted) return g;
  }
}

ChatInput::Got ChatInput::answer(int timeoutMs, std::string& line, bool& timedOut) {
  timedOut = false;
  for (;;) {
    if (auto nl = buffered_.find('\n'); nl != std::string::npos) {
      line = buffered_.substr(0, nl);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      buffered_.erase(0, nl + 1);
      return Got::Line;
    }
    if (chatInterrupted) return Got::Interrupted;
    pollfd p{0, POLLIN, 0};
    int n = poll(&p, 1, timeoutMs);
    if (n < 0 && errno == EINTR) continue;  // chatInterrupted is looked at above
    if (n == 0) {
      timedOut = true;
      return Got::Line;
    }
    char buf[4096];
    ssize_t r = read(0, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      if (buffered_.empty()) return Got::End;
      line.swap(buffered_);  // a last line without its newline
      buffered_.clear();
      return Got::Line;
    }
    buffered_.append(buf, (size_t)r);
  }
}

}  // namespace pine
