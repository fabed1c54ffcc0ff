// Text that came from outside the model (command output, files, fetched
// pages) on its way into the conversation: terminal control sequences
// removed, and fenced so the model reads it as data, not instructions.
#pragma once
#include <string>
#include <string_view>

namespace pine {

// Removes CSI (ESC [ ...), OSC (ESC ] ... BEL/ST, e.g. OSC 52 clipboard
// writes), DCS/SOS/PM/APC strings, every other ESC sequence, C0 controls
// except \n and \t (CR LF becomes LF; a bare CR is dropped, so nothing can be
// "overwritten" on display), DEL and C1 controls (U+0080..U+009F, with the
// strings that C1 CSI/OSC/DCS start). Bytes that are not valid UTF-8 become
// U+FFFD, so the result is always valid UTF-8 (JSON needs it). An unfinished
// sequence at the end is dropped.
std::string stripTerminalControls(std::string_view text);

// A code point that shows as nothing, or reorders what is around it: the Arabic letter mark, the
// Mongolian vowel separator, zero-width marks, bidirectional embeddings, overrides and isolates,
// invisible operators and the byte order mark. Where the owner is shown a topic or a command line,
// such a character would make what is shown differ from what is meant.
inline bool invisibleCodePoint(unsigned long cp) {
  return cp == 0x61C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x202A && cp <= 0x202E) ||
         (cp >= 0x2060 && cp <= 0x2069) || cp == 0xFEFF;
}

// For the owner's terminal (pinectl): stripTerminalControls, and each invisibleCodePoint written
// out as <U+202E>, so that what is shown is what is there (a right-to-left override cannot
// reorder a line of outside text into something else).
std::string shownToOwner(std::string_view text);

// The text (stripped as above) between a header naming where it came from
// and a closing line, both carrying a fence drawn at random for this call.
// Content cannot close the fence early: it cannot know the fence, and a fence
// that happens to occur in the content is drawn again.
std::string fenceOutside(std::string_view source, std::string_view text);

}  // namespace pine
