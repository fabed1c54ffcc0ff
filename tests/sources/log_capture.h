// The default spdlog logger, captured into a string for a test's life (the sources' tests read
// what was logged, and how often).
#pragma once
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

namespace pine::test {

struct LogCapture {
  std::ostringstream out;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  LogCapture() {
    spdlog::set_default_logger(
        std::make_shared<spdlog::logger>("capture", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  }
  ~LogCapture() { spdlog::set_default_logger(previous); }
  size_t occurrences(const std::string& needle) const {
    std::string s = out.str();
    size_t n = 0;
    for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
    return n;
  }
};

}  // namespace pine::test
