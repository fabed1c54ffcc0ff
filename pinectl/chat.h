// pinectl chat: one conversation with an agent in the terminal. cmd_chat.cpp runs the loop;
// chat_input reads lines (libedit on a terminal), chat_turn sends one message and streams its
// answer with approvals asked inline, chat_commands runs the slash commands, chat_status
// says the agent's mode for the prompt.
#pragma once
#include <csignal>
#include <iosfwd>
#include <optional>
#include <string>

namespace pine {

// Set by SIGINT (Ctrl-C) while chat runs; each waiting step looks at it and clears it.
extern volatile std::sig_atomic_t chatInterrupted;

// Lines from the owner: with line editing and history when stdin is a terminal, plainly
// (no prompt, no escape codes) when it is not.
class ChatInput {
 public:
  // historyFile: where the terminal's history is kept ("" for none).
  ChatInput(bool terminal, std::string historyFile);
  ~ChatInput();
  bool terminal() const { return terminal_; }
  enum class Got { Line, Interrupted, End };
  // One line at the prompt. Ctrl-C gives Interrupted (the line typed so far is dropped).
  Got prompt(const std::string& promptText, std::string& line);
  // One short answer (an approval's y/n/a) without line editing or history. Waits at most
  // timeoutMs (then Got::Line with `timedOut`), so that the caller can look whether the
  // question was answered elsewhere in between.
  Got answer(int timeoutMs, std::string& line, bool& timedOut);

 private:
  bool terminal_;
  std::string historyFile_;
  std::string buffered_;  // bytes read past the last line
};

struct ChatSession {
  std::string home, agent, session = "main";
  ChatInput& input;
  std::ostream& out;
};

// The prompt's status: "main/main [auto]", "[bypass (paused)]" when bypass waits for a reset.
// Throws with the agents that exist when the agent is not one of them.
std::string chatStatus(const ChatSession& c);
// Sends one message and prints its progress, approvals and answer as they come.
void chatTurn(ChatSession& c, const std::string& text);
// A line starting with '/'. False when the chat should end (/quit).
bool chatCommand(ChatSession& c, const std::string& line);

}  // namespace pine
