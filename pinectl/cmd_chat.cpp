// pinectl chat AGENT[/SESSION]: a conversation in the terminal. Lines are messages to the agent
// (chat_turn), or slash commands (chat_commands); the prompt shows the agent's mode.
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "common/names.h"
#include "pinectl/chat.h"
#include "pinectl/commands.h"

namespace pine {
namespace {

void onInterrupt(int) { chatInterrupted = 1; }

// The owner's own history file: $HOME/.pine_history (none without a HOME).
std::string historyFile() {
  const char* home = getenv("HOME");
  return home && *home ? std::string(home) + "/.pine_history" : "";
}

}  // namespace

int cmdChat(const std::string& home, const std::string& target) {
  std::string agent = target.substr(0, target.find('/'));
  std::string session = target.size() > agent.size() ? target.substr(agent.size() + 1) : "main";
  if (!isValidAgentId(agent)) {
    std::cerr << "pinectl: '" << agent << "' is not an agent id: agent ids are [a-z0-9_-], 1 to 64 bytes\n";
    return 1;
  }
  if (!isValidTaskId(session)) {
    std::cerr << "pinectl: '" << session << "' is not a session name: [A-Za-z0-9_.-], 1 to 64 bytes\n";
    return 1;
  }
  // No SA_RESTART: Ctrl-C must end the read it interrupts (the prompt's, the answer stream's).
  struct sigaction sa = {};
  sa.sa_handler = onInterrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);

  bool terminal = isatty(0) && isatty(1);
  ChatInput input(terminal, terminal ? historyFile() : "");
  ChatSession c{home, agent, session, input, std::cout};
  std::string status = chatStatus(c);  // throws naming the agents when there is no such one
  std::cout << "chat with " << status << "; /help lists the commands, /quit or Ctrl-D leaves\n" << std::flush;
  for (;;) {
    std::string line;
    // Off a terminal: no prompt at all, so that a script reads only answers.
    auto got = input.prompt(terminal ? chatStatus(c) + "> " : "", line);
    if (got == ChatInput::Got::End) break;
    if (got == ChatInput::Got::Interrupted) {
      std::cout << "\n" << std::flush;  // Ctrl-C at the prompt: the line is dropped, ask again
      continue;
    }
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    try {
      if (line[0] == '/') {
        if (!chatCommand(c, line)) break;
        if (!terminal && (line.rfind("/mode", 0) == 0 || line.rfind("/session", 0) == 0 || line.rfind("/reset", 0) == 0))
          std::cout << chatStatus(c) << "\n" << std::flush;
      } else {
        chatTurn(c, line);
      }
    } catch (std::exception& e) {
      std::cout << "pinectl: " << e.what() << "\n" << std::flush;
    }
  }
  if (terminal) std::cout << "\n";
  std::cout << "bye\n" << std::flush;
  return 0;
}

}  // namespace pine
