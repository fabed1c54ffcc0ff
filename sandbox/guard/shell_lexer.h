// A POSIX/bash tokenizer for the bash guard. It turns command text into simple
// commands, operators and redirections, keeping every word as parts (literal,
// parameter, command substitution, ...) so that the guard can expand them later
// with what it knows at that point of the script. It never runs anything.
// Anything it cannot read with certainty is a ParseError: the guard fails closed.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace pine::guard {

struct WordPart {
  enum class Kind {
    Literal,     // text: the characters
    Param,       // text: name; op/arg: ${name<op><arg>}
    CommandSub,  // text: the inner script of $(...) or `...`
    ProcessSub,  // text: the inner script of <(...) or >(...)
    Arith,       // text: the inside of $((...))
    Tilde,       // text: the user name after ~ (empty: the current user)
  };
  Kind kind = Kind::Literal;
  std::string text;
  bool quoted = false;  // inside quotes: no splitting, globbing or brace expansion
  std::string op;
  std::string arg;
};

struct Word {
  std::vector<WordPart> parts;
};

struct Redirect {
  int fd = -1;          // explicit descriptor number, -1 when absent
  std::string op;       // < > >> >| <> <& >& &> &>> << <<- <<<
  Word target;          // file, descriptor, here-string or here-doc delimiter
  std::string body;     // here-document text
  bool bodyQuoted = false;  // delimiter was quoted: the body is not expanded
};

struct Command {
  std::vector<Word> words;
  std::vector<Redirect> redirects;
};

struct Item {
  enum class Kind { Command, Operator };
  Kind kind = Kind::Command;
  Command command;
  std::string op;  // ; && || | |& & \n ( ) ;; ;& ;;&
};

using Script = std::vector<Item>;

struct ParseError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The whole text as a script. Throws ParseError.
Script parseScript(std::string_view src);

// Text read the way a here-document body or ${x:-...} operand is read: only
// $, ` and backslash are special, and whitespace does not split. Throws ParseError.
Word parseExpandableText(std::string_view src, bool quoted);

}  // namespace pine::guard
